"""Source references: what an entry, claim, charter or handoff points back to (seed 000).

A reference is ``{"type": ..., "id": ...}``. Typed references must resolve to an object
of the book (or of a knowledge base the book can use) that the caller may read;
``other`` is a free identifier and passes through. Lookups are batched: one query per
reference type, never one per reference.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable
from typing import Any

from library.models import KnowledgeChunk, ResearchItem
from novelgraph.errors import Invalid

from .access import Cap, Principal
from .models import Book, DiscoverySession, KnowledgeClaim, Observation, ScratchpadEntry, StoryCharter, Turn
from .selectors import SCOPE_READ_CAP, book_bases

REF_TYPES = ("turn", "observation", "entry", "claim", "chunk", "research", "charter", "other")
MAX_REFS = 50
MAX_OTHER_ID = 500

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
    if refs is None:
        return []
    if not isinstance(refs, list):
        raise Invalid(f"{field} must be a list of {{type, id}} references", field=field)
    if len(refs) > MAX_REFS:
        raise Invalid(f"{field} takes at most {MAX_REFS} references, not {len(refs)}", field=field)
    out: list[dict] = []
    for i, ref in enumerate(refs):
        where = f"{field}[{i}]"
        if not isinstance(ref, dict):
            raise Invalid(f"{where} must be an object {{type, id}}", field=where)
        kind = ref.get("type")
        if kind not in REF_TYPES:
            raise Invalid(f"{where}.type must be one of {', '.join(REF_TYPES)}", field=f"{where}.type")
        raw_id = ref.get("id")
        if raw_id is None or not str(raw_id).strip():
            raise Invalid(f"{where}.id is required", field=f"{where}.id")
        raw_id = str(raw_id).strip()
        if "\x00" in raw_id or "\x00" in str(ref.get("label") or ""):
            raise Invalid(f"{where} contains a NUL character", field=where)
        if kind == "other":
            if len(raw_id) > MAX_OTHER_ID:
                raise Invalid(f"{where}.id is longer than {MAX_OTHER_ID} characters", field=f"{where}.id")
            item = {"type": "other", "id": raw_id}
            label = ref.get("label")
            if label:
                item["label"] = str(label)[:300]
            out.append(item)
            continue
        try:
            ref_id = str(uuid.UUID(raw_id))
        except ValueError:
            raise Invalid(f"{where}: no {kind} {raw_id!r} (not an id)", field=where) from None
        out.append({"type": kind, "id": ref_id})
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


def validate_source_refs(
    *,
    principal: Principal,
    book: Book,
    session: DiscoverySession | None,
    refs: Any,
    field: str = "source_refs",
) -> list[dict]:
    """The normalised references, each typed one resolving to something of ``book`` that the
    principal may read; 422 naming ``source_refs[i]`` otherwise. At most 50 references.

    ``session`` is the session the citing record belongs to (rules about same-session
    entries, such as a digest's, are checked by the caller).
    """
    role = principal.role_for(book) or principal.label
    return check_refs(refs, books=[book], caps=principal.capabilities_for(book), who=role, field=field)


def resolve_source_refs(*, book: Book, refs: list[dict] | None) -> list[dict]:
    """Each reference with what it points at, for display: ``{type, id, label, url?, exists, detail}``.

    ``exists`` is False for a reference that no longer resolves within the book. One query
    per reference type.
    """
    refs = [r for r in (refs or []) if isinstance(r, dict)]
    wanted: dict[str, set[str]] = {}
    for ref in refs:
        kind, raw = ref.get("type"), str(ref.get("id", ""))
        if kind in REF_TYPES and kind != "other":
            with contextlib.suppress(ValueError):
                wanted.setdefault(kind, set()).add(str(uuid.UUID(raw)))
    details: dict[tuple[str, str], dict] = {}

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
        if hit is None:
            resolved.append(
                {"type": kind, "id": raw, "label": f"{kind} {raw} (not found)", "exists": False, "detail": {}}
            )
        else:
            resolved.append({"type": kind, "id": key[1], "exists": True, **hit})
    return resolved
