"""Canon that knows time and visibility (seed 001 story records): pure rules over claim rows.

A claim row is a dict with the story-record columns (:data:`STORY_COLUMNS`). Nothing here reads
or writes the database: selectors load the rows, and these functions decide

- until when a fact holds (its own ``true_until_chapter``, else the chapter before a later claim
  of the same subject and predicate takes over);
- what a role drafting chapter N may be given (:func:`as_of`): only what is true by then; a reveal
  first shown later is withheld; a fact the reader has not yet seen is marked as a secret;
- what a reader of chapter N may know (:func:`reader_as_of`, the story bible): the same, with the secrets left out;
- which approved canon a proposed claim contradicts (:func:`conflicts_with`), naming both sides;
- whether every reveal is supported by decisive evidence first shown before it (:func:`fair_play`).
"""

from __future__ import annotations

import json
import re
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
    given, left_out = as_of_counted(rows, chapter)
    withheld = []
    if left_out["later_reveals"]:
        withheld.append(f"withheld: {left_out['later_reveals']} reveal(s) first shown after chapter {chapter}")
    if left_out["not_yet"]:
        withheld.append(f"withheld: {left_out['not_yet']} fact(s) not yet true in chapter {chapter}")
    if left_out["ended"]:
        withheld.append(f"withheld: {left_out['ended']} fact(s) no longer true in chapter {chapter}")
    return given, withheld


def reader_as_of(rows: list[dict], chapter: int) -> tuple[list[dict], dict[str, int]]:
    """What a reader of chapter ``chapter`` may know (the story bible): what :func:`as_of` gives a role drafting
    that chapter, less every secret. A fact first shown after ``chapter`` is left out until then, a secret no
    chapter shows yet (known to nobody, or to named characters only) is left out; the counts say how many of each
    (``later_reveals``, ``not_yet``, ``ended``, ``shown_later``, ``secret``), never which."""
    return as_of_counted(rows, chapter, for_reader=True)


def as_of_counted(rows: list[dict], chapter: int, *, for_reader: bool = False) -> tuple[list[dict], dict[str, int]]:
    """The one rule behind :func:`as_of` and :func:`reader_as_of`: the rows given as of ``chapter`` and how many
    were left out, by why. ``for_reader`` leaves secrets out instead of marking them."""
    until = effective_until(rows)
    given: list[dict] = []
    left_out = {"later_reveals": 0, "not_yet": 0, "ended": 0, "shown_later": 0, "secret": 0}
    for row in rows:
        ends = until[str(row["id"])]
        if _start(row) > chapter:
            left_out["not_yet"] += 1
            continue
        if ends is not None and ends < chapter:
            left_out["ended"] += 1
            continue
        if row.get("reveal", RevealKind.NONE) != RevealKind.NONE and not is_shown_by(row, chapter):
            left_out["later_reveals"] += 1
            continue
        secret = not is_shown_by(row, chapter) and (
            row.get("first_shown_chapter") is not None or row.get("known_by") != KnownBy.READER
        )
        if secret and for_reader:
            left_out["shown_later" if row.get("first_shown_chapter") is not None else "secret"] += 1
            continue
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
    return given, left_out


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


# --- Chapter cues in the author's words ------------------------------------------------------------------------------
# "shown in chapter four", "secret until chapter twelve", "dies in chapter 9": a sentence that places a fact on the
# chapter axis carries its story record in its words. ``chapter_cues`` reads that record (the fields of
# ``STORY_RECORD`` it can name); the sentence stays the observation's value, so a correction of the value corrects
# the record with it.

_UNITS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINAL_UNITS = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
]
_ORDINAL_TENS = ["twentieth", "thirtieth", "fortieth", "fiftieth", "sixtieth", "seventieth", "eightieth", "ninetieth"]
NUMBER_WORDS: dict[str, int] = {word: n for n, word in enumerate(_UNITS, 1)}
NUMBER_WORDS |= {word: n for n, word in enumerate(_ORDINAL_UNITS, 1)}
for _t, (_tens, _ord) in enumerate(zip(_TENS, _ORDINAL_TENS, strict=True), 2):
    NUMBER_WORDS[_tens] = NUMBER_WORDS[_ord] = _t * 10
    for _u in range(1, 10):
        for _sep in ("-", " "):
            NUMBER_WORDS[f"{_tens}{_sep}{_UNITS[_u - 1]}"] = _t * 10 + _u
            NUMBER_WORDS[f"{_tens}{_sep}{_ORDINAL_UNITS[_u - 1]}"] = _t * 10 + _u
_WORD = "|".join(sorted((re.escape(w) for w in NUMBER_WORDS), key=len, reverse=True))
_NUMBER = rf"(?:\d{{1,5}}(?:st|nd|rd|th)?|{_WORD})"
# "chapter 9", "chapter twelve", "ch. 4", "the fourth chapter"
CHAPTER = rf"(?:(?:chapter|ch\.?)\s+(?P<n>{_NUMBER})\b|the\s+(?P<m>{_NUMBER})\s+chapter\b)"


def chapter_number(text: str) -> int | None:
    """A chapter number written as digits ("9", "4th") or words ("twelve", "twenty-one", "fourth")."""
    word = " ".join(text.lower().split())
    if word[:1].isdigit():
        return int(re.match(r"\d+", word).group())
    return NUMBER_WORDS.get(word)


def _cue(pattern: str) -> re.Pattern:
    return re.compile(pattern.replace("CH", CHAPTER, 1), re.IGNORECASE)


# Each cue: its pattern (CH: the chapter) and the story-record fields it names from that chapter number.
CHAPTER_CUES: list[tuple[re.Pattern, str]] = [
    # a secret: nobody knows it until the reader is shown it
    (_cue(r"\b(?:kept\s+)?(?:a\s+)?(?:secret|hidden|concealed|unknown|unrevealed)(?:\s+from\s+(?:the\s+)?(?:reader|everyone))?"
          r"\s+(?:until|till|before)\s+CH"), "secret"),
    (_cue(r"\bnobody\s+knows(?:\s+(?:it|this|that))?\s+(?:until|till|before)\s+CH"), "secret"),
    # an end: it holds up to that chapter
    (_cue(r"\b(?:dies|is\s+killed|is\s+murdered|perishes|is\s+executed)\s+(?:in|at)\s+CH"), "dies"),
    (_cue(r"\b(?:until|till|through|up\s+to)\s+(?:the\s+end\s+of\s+)?CH"), "until"),
    # a start: it holds from that chapter
    (_cue(r"\b(?:from|since|starting\s+(?:in|with|at)|beginning\s+(?:in|with|at)|as\s+of)\s+CH(?:\s+on(?:wards?)?)?"),
     "from"),
    (_cue(r"\bin\s+CH\s+on(?:wards?)?"), "from"),
    # where the reader first sees it
    (_cue(r"\b(?:(?:is|are|gets|get|will\s+be)\s+)?(?:first\s+)?(?:shown|seen|revealed|disclosed|introduced|exposed|"
          r"uncovered|learned|learnt|discovered|found\s+out|comes\s+out|come\s+out|appears?)\s+(?:in|at|by|during)\s+CH"),
     "shown"),
    (_cue(r"\b(?:in|at)\s+CH,?\s+the\s+reader\s+(?:learns|sees|finds\s+out|discovers)"), "shown"),
    (_cue(r"\b(?:in|at|during)\s+CH"), "shown"),
]  # fmt: skip
_KNOWN_ONLY = re.compile(
    r"\b(?:known\s+only\s+to|only\s+known\s+to)\s+((?:[A-Z][\w'’-]+)(?:(?:\s*,\s*|\s+and\s+)[A-Z][\w'’-]+)*)"
)


def chapter_cues(text: str) -> dict:
    """The story record a sentence names by its chapter cues, and where those words stand.

    ``{"story": {...}, "spans": [(start, end), ...], "ends": bool}``: ``story`` holds only the fields named
    (``first_shown_chapter``, ``known_by`` nobody with the chapter a secret is shown, ``true_from_chapter``,
    ``true_until_chapter``, ``known_by`` characters with their names, ``reveal`` for a twist or solution shown in
    a chapter); ``ends`` says a death cue ended the fact (someone "dies in chapter 9": alive until then). Each
    span of the text is read by the first cue that matches it; an empty ``story`` means no cue."""
    story: dict = {}
    spans: list[tuple[int, int]] = []
    ends = False
    for pattern, meaning in CHAPTER_CUES:
        for match in pattern.finditer(text or ""):
            if any(match.start() < end and start < match.end() for start, end in spans):
                continue
            number = chapter_number(match.group("n") or match.group("m"))
            if number is None or not 1 <= number <= 100_000:
                continue
            if meaning == "secret":
                story.setdefault("known_by", KnownBy.NOBODY)
                story.setdefault("first_shown_chapter", number)
            elif meaning == "shown":
                story.setdefault("first_shown_chapter", number)
            elif meaning in ("until", "dies"):
                story.setdefault("true_until_chapter", number)
                ends = ends or meaning == "dies"
            elif meaning == "from":
                story.setdefault("true_from_chapter", number)
            spans.append(match.span())
    known = _KNOWN_ONLY.search(text or "")
    if known and story.get("known_by") is None:
        names = [n for n in re.split(r"\s*,\s*|\s+and\s+", known.group(1)) if n]
        story["known_by"], story["known_by_characters"] = KnownBy.CHARACTERS, names
        spans.append(known.span())
    if story.get("first_shown_chapter") is not None:
        words = set(re.findall(r"[a-z]+", (text or "").lower()))
        if "twist" in words:
            story["reveal"] = RevealKind.TWIST
        elif words & {"solution", "solved", "solves", "culprit", "killer", "murderer"}:
            story["reveal"] = RevealKind.SOLUTION
    start, until = story.get("true_from_chapter"), story.get("true_until_chapter")
    if start is not None and until is not None and until < start:
        story.pop("true_until_chapter")  # "from chapter 5 ... until chapter 2": the words do not agree; keep the start
    return {"story": story, "spans": sorted(spans), "ends": ends}


def cue_words(story: dict) -> list[str]:
    """The story record a cue named, in plain words for the author ("shown in chapter 4", "secret until chapter 12")."""
    words = []
    shown = story.get("first_shown_chapter")
    if story.get("known_by") == KnownBy.NOBODY and shown is not None:
        words.append(f"secret until chapter {shown}")
    elif shown is not None:
        words.append(f"first shown in chapter {shown}")
    if story.get("true_from_chapter") is not None:
        words.append(f"true from chapter {story['true_from_chapter']}")
    if story.get("true_until_chapter") is not None:
        words.append(f"true until chapter {story['true_until_chapter']}")
    if story.get("known_by") == KnownBy.CHARACTERS:
        words.append("known only to " + ", ".join(story.get("known_by_characters") or []))
    if story.get("reveal", RevealKind.NONE) != RevealKind.NONE:
        words.append(f"a reveal ({story['reveal']})")
    return words
