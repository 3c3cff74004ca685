"""Source references: what an entry, claim, charter or handoff points back to (seed 000).

A reference is ``{"type": ..., "id": ...}``. Typed references must resolve to an object
of the book (or of a knowledge base the book can use) that the caller may read;
``other`` is a free identifier and passes through. Resolving references for display
takes the reader's access too: what the reader's role may not read is withheld, and
says so. Lookups are batched: one query per reference type, never one per reference.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable
from typing import Any

from library.models import KnowledgeChunk, ResearchItem
from novelgraph.core.errors import Invalid

from .access import BookAccess, Cap
from .models import Book, KnowledgeClaim, Observation, ScratchpadEntry, StoryCharter, Turn
from .schemas import REF_TYPES
from .selectors import SCOPE_READ_CAP, SCOPE_WITHHELD_LABEL, book_bases

# The capability needed to cite each type (claims: see SCOPE_READ_CAP, by the base's scope).
TYPE_READ_CAP = {
    "turn": Cap.DISCOVERY_READ,
    "observation": Cap.DISCOVERY_READ,
    "entry": Cap.SCRATCHPAD_READ,
    "charter": Cap.DISCOVERY_READ,
    "chunk": Cap.LITERARY_READ,
    "research": Cap.BOOK_READ,
}


def _normalise(refs: Any, field: str) -> list[dict]:
    """References as stored: ``{type, id}`` with a typed id in canonical form, ``other`` with its label.

    Their shape was validated by the ``SourceRef`` schema; what remains is whether a typed id is an id.
    """
    out: list[dict] = []
    for i, ref in enumerate(refs or []):
        kind, raw_id = ref["type"], str(ref["id"]).strip()
        if kind == "other":
            out.append({"type": "other", "id": raw_id, **({"label": ref["label"]} if ref.get("label") else {})})
            continue
        try:
            out.append({"type": kind, "id": str(uuid.UUID(raw_id))})
        except ValueError:
            raise Invalid(f"{field}[{i}]: no {kind} {raw_id!r} (not an id)", field=f"{field}[{i}]") from None
    return out


def _ids(refs: list[dict], kind: str) -> set[str]:
    return {ref["id"] for ref in refs if ref["type"] == kind}


def _readable_ids(refs: list[dict], *, books: list[Book], caps: frozenset[Cap]) -> dict[str, set[str]]:
    """For each type, the ids among ``refs`` that resolve to something ``caps`` may read in ``books``."""
    book_ids = [b.pk for b in books]
    found: dict[str, set[str]] = {kind: set() for kind in REF_TYPES}
    lookups = {
        "turn": lambda ids: Turn.objects.filter(pk__in=ids, session__book_id__in=book_ids),
        "observation": lambda ids: Observation.objects.filter(pk__in=ids, session__book_id__in=book_ids),
        "entry": lambda ids: ScratchpadEntry.objects.filter(pk__in=ids, session__book_id__in=book_ids),
        "charter": lambda ids: StoryCharter.objects.filter(pk__in=ids, book_id__in=book_ids),
        "research": lambda ids: ResearchItem.objects.filter(pk__in=ids, book_id__in=book_ids),
        "chunk": lambda ids: KnowledgeChunk.objects.filter(pk__in=ids),
    }
    for kind, lookup in lookups.items():
        ids = _ids(refs, kind)
        if ids and TYPE_READ_CAP[kind] in caps:
            found[kind] = {str(pk) for pk in lookup(ids).values_list("pk", flat=True)}
    claim_ids = _ids(refs, "claim")
    if claim_ids:
        readable_base_ids = {
            base["id"] for book in books for base in book_bases(book) if SCOPE_READ_CAP[base["scope"]] in caps
        }
        found["claim"] = {
            str(pk)
            for pk in KnowledgeClaim.objects.filter(pk__in=claim_ids, base_id__in=readable_base_ids).values_list(
                "pk", flat=True
            )
        }
    return found


def check_refs(
    refs: Any,
    *,
    books: Iterable[Book],
    caps: frozenset[Cap],
    who: str,
    field: str = "source_refs",
) -> list[dict]:
    """Normalise ``refs`` and refuse (422, naming ``field[i]``) any typed reference that does not
    resolve to an object of ``books`` (or their knowledge bases) readable with ``caps``."""
    normalised = _normalise(refs, field)
    books = list(books)
    found = _readable_ids(normalised, books=books, caps=caps)
    for i, ref in enumerate(normalised):
        if ref["type"] != "other" and ref["id"] not in found[ref["type"]]:
            raise Invalid(
                f"{field}[{i}]: no {ref['type']} {ref['id']} in this book that {who} may read",
                field=f"{field}[{i}]",
            )
    return normalised


def validate_source_refs(access: BookAccess, refs: Any, *, field: str = "source_refs") -> list[dict]:
    """The normalised references, each typed one resolving to something of the book that the
    caller's role may read; 422 naming ``source_refs[i]`` otherwise. At most 50 references."""
    return check_refs(refs, books=[access.book], caps=access.caps, who=access.role, field=field)


def withheld_label(access: BookAccess, what: str, cap: Cap) -> str:
    """How a withheld item is shown: what it is, and the capability the reader lacks."""
    return f"withheld: {what} ({access.role} lacks {cap.value})"


def resolve_source_refs(access: BookAccess, refs: list[dict] | None) -> list[dict]:
    """Each reference with what it points at, for display: ``{type, id, label, url?, exists, detail}``.

    ``exists`` is False for a reference that no longer resolves within the book. A reference
    to something the reader's role may not read (series canon for Luna) is withheld:
    ``withheld`` is True, the label says why, and nothing of its content is shown. One query
    per reference type.
    """
    book = access.book
    refs = [r for r in (refs or []) if isinstance(r, dict)]
    wanted: dict[str, set[str]] = {}
    for ref in refs:
        kind, raw = ref.get("type"), str(ref.get("id", ""))
        if kind in REF_TYPES and kind != "other":
            with contextlib.suppress(ValueError):
                wanted.setdefault(kind, set()).add(str(uuid.UUID(raw)))
    details: dict[tuple[str, str], dict] = {}
    withheld: dict[tuple[str, str], str] = {}
    for kind in list(wanted):
        cap = TYPE_READ_CAP.get(kind)
        if cap is not None and cap not in access.caps:
            for pk in wanted.pop(kind):
                withheld[(kind, pk)] = withheld_label(access, f"a {kind}", cap)

    def put(kind: str, pk: Any, label: str, detail: dict, url: str | None = None) -> None:
        row = {"label": label, "detail": detail}
        if url:
            row["url"] = url
        details[(kind, str(pk))] = row

    if wanted.get("entry"):
        for e in ScratchpadEntry.objects.filter(pk__in=wanted["entry"], session__book=book).values(
            "id", "sequence", "kind", "agent_role", "content"
        ):
            put(
                "entry",
                e["id"],
                f"Entry #{e['sequence']} ({e['agent_role']} {e['kind']})",
                {"kind": e["kind"], "role": e["agent_role"], "content": e["content"], "sequence": e["sequence"]},
            )
    if wanted.get("turn"):
        for t in Turn.objects.filter(pk__in=wanted["turn"], session__book=book).values(
            "id", "ordinal", "role", "content"
        ):
            put(
                "turn",
                t["id"],
                f"Turn {t['ordinal']} ({t['role']})",
                {"ordinal": t["ordinal"], "role": t["role"], "content": t["content"]},
            )
    if wanted.get("observation"):
        for o in Observation.objects.filter(pk__in=wanted["observation"], session__book=book).values(
            "id", "key", "value", "status"
        ):
            put(
                "observation",
                o["id"],
                f"Observation {o['key']}",
                {"key": o["key"], "value": o["value"], "status": o["status"]},
            )
    if wanted.get("claim"):
        base_ids = [b["id"] for b in book_bases(book)]
        for c in KnowledgeClaim.objects.filter(pk__in=wanted["claim"], base_id__in=base_ids).values(
            "id", "subject", "predicate", "value", "status", "base__scope"
        ):
            cap = SCOPE_READ_CAP[c["base__scope"]]
            if cap not in access.caps:
                withheld[("claim", str(c["id"]))] = withheld_label(access, SCOPE_WITHHELD_LABEL[c["base__scope"]], cap)
                continue
            put(
                "claim",
                c["id"],
                f"Claim: {c['subject']} {c['predicate']}",
                {
                    "subject": c["subject"],
                    "predicate": c["predicate"],
                    "value": c["value"],
                    "status": c["status"],
                    "scope": c["base__scope"],
                },
            )
    if wanted.get("chunk"):
        for ch in KnowledgeChunk.objects.filter(pk__in=wanted["chunk"]).values(
            "id", "citation", "content", "source__title"
        ):
            put(
                "chunk",
                ch["id"],
                ch["citation"],
                {"citation": ch["citation"], "source": ch["source__title"], "content": ch["content"]},
            )
    if wanted.get("research"):
        for r in ResearchItem.objects.filter(pk__in=wanted["research"], book=book).values(
            "id", "title", "citation", "status", "url"
        ):
            put(
                "research",
                r["id"],
                r["title"],
                {"title": r["title"], "citation": r["citation"], "status": r["status"]},
                url=r["url"],
            )
    if wanted.get("charter"):
        for ch in StoryCharter.objects.filter(pk__in=wanted["charter"], book=book).values(
            "id", "version", "status", "content"
        ):
            put(
                "charter",
                ch["id"],
                f"Charter v{ch['version']} ({ch['status']})",
                {
                    "version": ch["version"],
                    "status": ch["status"],
                    "main_thrust": (ch["content"] or {}).get("main_thrust", ""),
                },
            )

    resolved: list[dict] = []
    for ref in refs:
        kind, raw = ref.get("type"), str(ref.get("id", ""))
        if kind == "other":
            row = {"type": "other", "id": raw, "label": ref.get("label") or raw, "exists": True, "detail": {}}
            if raw.startswith(("http://", "https://")):
                row["url"] = raw
            resolved.append(row)
            continue
        try:
            key = (kind, str(uuid.UUID(raw)))
        except ValueError:
            key = (kind, raw)
        hit = details.get(key)
        if key in withheld:
            resolved.append(
                {"type": kind, "id": key[1], "label": withheld[key], "exists": True, "withheld": True, "detail": {}}
            )
        elif hit is None:
            resolved.append(
                {"type": kind, "id": raw, "label": f"{kind} {raw} (not found)", "exists": False, "detail": {}}
            )
        else:
            resolved.append({"type": kind, "id": key[1], "exists": True, **hit})
    return resolved
