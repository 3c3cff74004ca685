"""Canon that knows time and visibility (seed 001 story records): pure rules over claim rows.

A claim row is a dict with the story-record columns (:data:`STORY_COLUMNS`). Nothing here reads
or writes the database: selectors load the rows, and these functions decide

- until when a fact holds (its own ``true_until_chapter``, else the chapter before a later claim
  of the same subject and predicate takes over);
- what a role drafting chapter N may be given (:func:`as_of`): only what is true by then; a reveal
  first shown later is withheld; a fact the reader has not yet seen is marked as a secret;
- which approved canon a proposed claim contradicts (:func:`conflicts_with`), naming both sides;
- whether every reveal is supported by decisive evidence first shown before it (:func:`fair_play`).
"""

from __future__ import annotations

import json
from typing import Any

from .models import CLAIM_STATEMENT, STORY_RECORD, KnownBy, RevealKind

STORY_COLUMNS = (*CLAIM_STATEMENT, "status", "evidence", *STORY_RECORD, "approval_id")

FAIR_PLAY_MISSING = "FAIR-PLAY-001"
FAIR_PLAY_LATE = "FAIR-PLAY-002"


def _norm(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.lower().split())
    return json.dumps(value, sort_keys=True)


def key_of(row: dict) -> tuple[str, str]:
    return _norm(row["subject"]), _norm(row["predicate"])


def label_of(row: dict) -> str:
    value = row["value"]
    shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return f"{row['subject']} {row['predicate']}: {shown}"


def _start(row: dict) -> int:
    return row.get("true_from_chapter") or 1


def effective_until(rows: list[dict]) -> dict[str, int | None]:
    """Each row's last chapter (None: it holds to the end). A row without its own ``true_until_chapter``
    holds until the chapter before the next row of the same subject and predicate that starts later."""
    starts: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        starts.setdefault(key_of(row), []).append(_start(row))
    until: dict[str, int | None] = {}
    for row in rows:
        own = row.get("true_until_chapter")
        later = [s for s in starts[key_of(row)] if s > _start(row)]
        successor = min(later) - 1 if later else None
        until[str(row["id"])] = min(x for x in (own, successor) if x is not None) if (own or successor) else None
    return until


def _overlap(a_from: int, a_until: int | None, b_from: int, b_until: int | None) -> bool:
    return (a_until is None or b_from <= a_until) and (b_until is None or a_from <= b_until)


def is_shown_by(row: dict, chapter: int) -> bool:
    shown = row.get("first_shown_chapter")
    return shown is not None and shown <= chapter


def visibility(row: dict, chapter: int | None = None) -> str:
    """How the reader stands to the fact (as of ``chapter``, or at the end of the book)."""
    shown = row.get("first_shown_chapter")
    if chapter is not None and shown is not None and shown > chapter:
        return f"secret until chapter {shown}"
    if shown is None and row.get("known_by") == KnownBy.NOBODY:
        return "secret: nobody knows it yet"
    if shown is None and row.get("known_by") == KnownBy.CHARACTERS:
        return "secret from the reader: known to " + ", ".join(row.get("known_by_characters") or [])
    if shown is not None:
        return f"shown in chapter {shown}"
    return "known to the reader"


def as_of(rows: list[dict], chapter: int) -> tuple[list[dict], list[str]]:
    """What a role drafting ``chapter`` may be given, and a line for what was withheld.

    Only rows true by then (started, not yet ended); a reveal first shown after ``chapter`` is
    withheld whole; any other fact the reader has not seen by then is given marked as a secret. A given
    row's ``true_until_effective`` is computed over the given rows only, so nothing withheld shows through.
    """
    until = effective_until(rows)
    given: list[dict] = []
    later_reveals = not_yet = ended = 0
    for row in rows:
        ends = until[str(row["id"])]
        if _start(row) > chapter:
            not_yet += 1
            continue
        if ends is not None and ends < chapter:
            ended += 1
            continue
        if row.get("reveal", RevealKind.NONE) != RevealKind.NONE and not is_shown_by(row, chapter):
            later_reveals += 1
            continue
        secret = not is_shown_by(row, chapter) and (
            row.get("first_shown_chapter") is not None or row.get("known_by") != KnownBy.READER
        )
        given.append({**row, "secret": secret, "visibility": visibility(row, chapter)})
    # What the as-of reader sees of a fact's end comes from what she is given: a later row withheld (a twist first
    # shown after ``chapter``, a fact not yet true) would otherwise show its chapter as the given fact's end.
    seen_until = effective_until(given)
    for row in given:
        row["true_until_effective"] = seen_until[str(row["id"])]
    hidden = {str(r["id"]) for r in rows} - {str(r["id"]) for r in given}
    for row in given:
        if row.get("evidence_for_id") is not None and str(row["evidence_for_id"]) in hidden:
            row["evidence_for_id"] = None  # the reveal it supports is not given; neither is its id
    withheld = []
    if later_reveals:
        withheld.append(f"withheld: {later_reveals} reveal(s) first shown after chapter {chapter}")
    if not_yet:
        withheld.append(f"withheld: {not_yet} fact(s) not yet true in chapter {chapter}")
    if ended:
        withheld.append(f"withheld: {ended} fact(s) no longer true in chapter {chapter}")
    return given, withheld


def conflicts_with(proposed: dict, canon: list[dict]) -> list[dict]:
    """The approved canon ``proposed`` contradicts, each naming both sides and why:

    - the same subject and predicate with a different value over overlapping chapters;
    - the same fact made secret (or shown later) after canon already revealed it.
    """
    canon = [row for row in canon if str(row["id"]) not in {str(proposed["id"]), str(proposed.get("revises_id"))}]
    until = effective_until(canon)
    p_from, p_until = _start(proposed), proposed.get("true_until_chapter")
    found: list[dict] = []
    for row in canon:
        if key_of(row) != key_of(proposed):
            continue
        side = {"type": "claim", "id": str(row["id"]), "label": label_of(row), "status": row["status"]}
        chapters = f"chapters {_start(row)}–{until[str(row['id'])] or 'end'}"
        if _norm(row["value"]) != _norm(proposed["value"]):
            if _overlap(p_from, p_until, _start(row), until[str(row["id"])]):
                found.append(
                    {
                        "kind": "value",
                        "reason": f"the same subject and predicate with a different value over overlapping chapters "
                        f"(canon holds for {chapters})",
                        "sides": [_side(proposed), side],
                    }
                )
            continue
        revealed = row.get("first_shown_chapter")
        if revealed is None:
            continue
        p_shown = proposed.get("first_shown_chapter")
        if (p_shown is None and proposed.get("known_by") != KnownBy.READER) or (p_shown or 0) > revealed:
            found.append(
                {
                    "kind": "visibility",
                    "reason": f"canon already reveals this in chapter {revealed}; the proposal "
                    f"{'keeps it secret' if p_shown is None else f'first shows it in chapter {p_shown}'}",
                    "sides": [_side(proposed), side],
                }
            )
    return found


def _side(row: dict) -> dict:
    return {"type": "claim", "id": str(row["id"]), "label": label_of(row), "status": row["status"]}


def fair_play(rows: list[dict]) -> list[dict]:
    """Every reveal without decisive evidence first shown before its chapter: FAIR-PLAY-001 when it
    has no decisive evidence at all, FAIR-PLAY-002 when all of it is shown too late (or never)."""
    findings: list[dict] = []
    for reveal in rows:
        if reveal.get("reveal", RevealKind.NONE) == RevealKind.NONE:
            continue
        chapter = reveal["first_shown_chapter"]
        named = {
            "id": str(reveal["id"]),
            "label": label_of(reveal),
            "kind": reveal["reveal"],
            "chapter": chapter,
        }
        support = [e for e in rows if e.get("decisive") and str(e.get("evidence_for_id")) == str(reveal["id"])]
        early = [e for e in support if e.get("first_shown_chapter") is not None and e["first_shown_chapter"] < chapter]
        if early:
            continue
        evidence = [
            {"id": str(e["id"]), "label": label_of(e), "first_shown_chapter": e.get("first_shown_chapter")}
            for e in support
        ]
        if not support:
            findings.append(
                {
                    "code": FAIR_PLAY_MISSING,
                    "message": f"the {reveal['reveal']} '{named['label']}' (revealed in chapter {chapter}) has no "
                    "decisive evidence",
                    "reveal": named,
                    "evidence": [],
                }
            )
            continue
        late = ", ".join(
            f"'{e['label']}' ("
            + ("never shown" if e["first_shown_chapter"] is None else f"chapter {e['first_shown_chapter']}")
            + ")"
            for e in evidence
        )
        findings.append(
            {
                "code": FAIR_PLAY_LATE,
                "message": f"the {reveal['reveal']} '{named['label']}' is revealed in chapter {chapter}, but its "
                f"decisive evidence is first shown too late: {late}; show it before chapter {chapter}",
                "reveal": named,
                "evidence": evidence,
            }
        )
    return findings
