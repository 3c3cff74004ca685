"""Reads shared by the API, the pages, dossiers and source references.

Every selector here runs a fixed number of queries whatever the amount of data
(``values()``, ``select_related`` and ``prefetch_related``; never a query per row).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Model, OuterRef, Q, QuerySet, Subquery
from django.urls import reverse

from novelgraph.core.errors import NotFound
from novelgraph.core.pagination import page_at, rest_link
from novelgraph.core.words import label_of

from .access import BookAccess, Cap, first_visible_book_ids, principal_capabilities
from .models import (
    Book,
    Chapter,
    ChapterRevision,
    CodexEntry,
    ContextDossier,
    ContinuityFinding,
    DiscoverySession,
    Handoff,
    KnowledgeBase,
    KnowledgeClaim,
    KnowledgeLink,
    Observation,
    ObservationRevision,
    ObservationStatus,
    RevealKind,
    ScratchpadEntry,
    StoryCharter,
    ThrustCandidate,
    Turn,
    WebhookEndpoint,
)
from .story_rules import STORY_COLUMNS, as_of, conflicts_with, effective_until, fair_play, visibility

OPEN_SESSION_STATUSES = (DiscoverySession.Status.ACTIVE, DiscoverySession.Status.CHARTER_PROPOSED)

# Which capability reading a knowledge base of each scope needs.
SCOPE_READ_CAP = {
    KnowledgeBase.Scope.LITERARY: Cap.LITERARY_READ,
    KnowledgeBase.Scope.SERIES: Cap.SERIES_READ,
    KnowledgeBase.Scope.BOOK: Cap.BOOK_READ,
    KnowledgeBase.Scope.RUN: Cap.BOOK_READ,
}
SCOPE_WITHHELD_LABEL = {
    KnowledgeBase.Scope.LITERARY: "literary guidance",
    KnowledgeBase.Scope.SERIES: "series canon",
    KnowledgeBase.Scope.BOOK: "book canon",
    KnowledgeBase.Scope.RUN: "run notes",
}


def _get(queryset: QuerySet, pk: Any, what: str) -> Model:
    try:
        return queryset.get(pk=pk)
    except (queryset.model.DoesNotExist, ValidationError, ValueError, TypeError):
        raise NotFound(f"{what} not found") from None


# Objects reached by their own id: each is loaded with its book in the same query, so the edge
# resolves access from it (``book_access(principal, obj.book, missing=...)``) without reading the book again.


def session_get(session_id: Any) -> DiscoverySession:
    return _get(DiscoverySession.objects.select_related("book__series", "book__owner"), session_id, "session")


def charter_get(charter_id: Any) -> StoryCharter:
    return _get(StoryCharter.objects.select_related("book__series", "book__owner"), charter_id, "charter")


def handoff_get(handoff_id: Any) -> Handoff:
    return _get(Handoff.objects.select_related("book__series", "book__owner"), handoff_id, "handoff")


def dossier_get(dossier_id: Any) -> ContextDossier:
    return _get(ContextDossier.objects.select_related("book__series", "book__owner"), dossier_id, "dossier")


def observation_get(observation_id: Any) -> Observation:
    return _get(
        Observation.objects.select_related("session__book__series", "session__book__owner"),
        observation_id,
        "observation",
    )


def turn_get(turn_id: Any) -> Turn:
    return _get(Turn.objects.select_related("session__book__series", "session__book__owner"), turn_id, "turn")


def current_session(book: Book) -> DiscoverySession | None:
    """The book's open session (active or charter-proposed), else its newest session, else None."""
    sessions = DiscoverySession.objects.filter(book=book)
    return (
        sessions.filter(status__in=OPEN_SESSION_STATUSES).order_by("-created_at").first()
        or sessions.order_by("-created_at").first()
    )


def book_bases(book: Book) -> list[dict]:
    """The knowledge bases a book can use, each with its relation (two queries).

    Linked bases carry their link's relation; the book's own base and the run bases of
    its sessions count as owned (relation "book-canon" / "run") even when not linked.
    """
    rows: dict[str, dict] = {}
    links = KnowledgeLink.objects.filter(book=book).select_related("base").order_by("base__scope", "base__name")
    for link in links:
        rows.setdefault(
            str(link.base_id),
            {
                "id": str(link.base_id),
                "name": link.base.name,
                "scope": link.base.scope,
                "owner_id": link.base.owner_id,
                "relation": link.relation,
            },
        )
    owned = KnowledgeBase.objects.filter(
        Q(scope=KnowledgeBase.Scope.BOOK, owner_id=str(book.pk))
        | Q(
            scope=KnowledgeBase.Scope.RUN,
            owner_id__in=[str(pk) for pk in DiscoverySession.objects.filter(book=book).values_list("pk", flat=True)],
        )
    ).values("id", "name", "scope", "owner_id")
    for base in owned:
        relation = "book-canon" if base["scope"] == KnowledgeBase.Scope.BOOK else "run"
        rows.setdefault(str(base["id"]), {**base, "id": str(base["id"]), "relation": relation})
    return list(rows.values())


def withheld_claims(books, caps: frozenset[Cap], role: str) -> dict[str, str]:
    """The claims of these books' bases that ``caps`` may not read (series canon without
    series:read), each with the line shown instead: ``"withheld: series canon (luna lacks series:read)"``."""
    scopes = {scope: cap for scope, cap in SCOPE_READ_CAP.items() if cap not in caps}
    if not scopes:
        return {}
    base_ids = KnowledgeLink.objects.filter(book__in=books, base__scope__in=list(scopes)).values("base_id")
    return {
        str(pk): f"withheld: {SCOPE_WITHHELD_LABEL[scope]} ({role} lacks {scopes[scope].value})"
        for pk, scope in KnowledgeClaim.objects.filter(base_id__in=base_ids).values_list("pk", "base__scope")
    }


def canon_bases(bases: list[dict]) -> list[dict]:
    """The bases whose approved claims are canon: every base but the shared literary one, which holds
    staff-curated craft guidance, never a fact about this book."""
    return [base for base in bases if base["scope"] != KnowledgeBase.Scope.LITERARY]


def readable_bases(bases: list[dict], caps: frozenset[Cap]) -> tuple[list[dict], list[dict]]:
    """Split bases into those ``caps`` may read and those withheld."""
    given, withheld = [], []
    for base in bases:
        (given if SCOPE_READ_CAP[base["scope"]] in caps else withheld).append(base)
    return given, withheld


# How many items of each collection a bounded read carries (the discovery view, the book page, a dossier);
# the rest is one link away (the collection's own paged route, or the page's "show more").
VIEW_PAGE = settings.NINJA_PAGINATION_PER_PAGE

TURN_COLUMNS = ("id", "session_id", "ordinal", "role", "content", "answers_id", "created_at")
THRUST_COLUMNS = (
    "id",
    "kind",
    "status",
    "proposed_by",
    "title",
    "main_thrust",
    "character_engine",
    "central_conflict",
    "reader_promise",
    "thematic_pressure",
    "genre_obligations",
    "ending_shape",
    "risks",
    "forecloses",
    "not_chosen_reason",
    "session_id",
    "created_at",
)
CHARTER_COLUMNS = ("id", "version", "status", "proposed_by", "content", "source_refs", "approval_id", "created_at")


def bounded(rows, limit: int, offset: int = 0) -> tuple[list, bool]:
    """At most ``limit`` rows from ``offset`` (a queryset is sliced in SQL, LIMIT limit + 1), and whether more
    follow."""
    page = list(rows[offset : offset + limit + 1])
    return page[:limit], len(page) > limit


def session_turns(session: DiscoverySession):
    return Turn.objects.filter(session=session).order_by("ordinal").values(*TURN_COLUMNS)


def book_turns(book: Book):
    """Every turn of the book, session by session (oldest session first), by ordinal."""
    return (
        Turn.objects.filter(session__book=book)
        .order_by("session__created_at", "session_id", "ordinal")
        .values(*TURN_COLUMNS)
    )


class MappedRows:
    """A queryset of dict rows mapped by ``fn`` as they are read; slicing (a page) stays in SQL, ``len`` counts
    in SQL, so ``bounded`` and the API's pagination page it like the queryset itself."""

    def __init__(self, rows, fn):
        self.rows, self.fn = rows, fn

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.fn(row) for row in self.rows[index]]
        return self.fn(self.rows[index])

    def __iter__(self):
        return (self.fn(row) for row in self.rows)

    def __len__(self) -> int:
        return self.rows.count()


def session_observations(session: DiscoverySession) -> MappedRows:
    return MappedRows(observations_annotated(Observation.objects.filter(session=session)), observation_row)


def book_observation_rows(book: Book, *, status: str | None = None) -> MappedRows:
    """The book's observations across its sessions (only those of ``status`` when given), oldest first, with
    their current value (the author's newest correction) and ``stated_value``; paged in SQL when sliced."""
    observations = Observation.objects.filter(session__book=book)
    if status:
        observations = observations.filter(status=status)
    return MappedRows(observations_annotated(observations), observation_row)


def session_thrusts(session: DiscoverySession):
    return ThrustCandidate.objects.filter(session=session).order_by("created_at", "id").values(*THRUST_COLUMNS)


def book_sessions(book: Book):
    """The book's discovery sessions, oldest first."""
    return (
        DiscoverySession.objects.filter(book=book)
        .order_by("created_at", "id")
        .values("id", "status", "current_question", "created_at")
    )


def book_thrusts(book: Book):
    return ThrustCandidate.objects.filter(session__book=book).order_by("created_at", "id").values(*THRUST_COLUMNS)


def book_charters(book: Book):
    return StoryCharter.objects.filter(book=book).order_by("-version").values(*CHARTER_COLUMNS)


def discovery_view(access: BookAccess, *, limit: int = VIEW_PAGE) -> dict:
    """The discovery of a book as one bounded structure: the current session, the first ``limit`` of its turns
    (by ordinal), observations, thrust candidates and scratchpad entries (in creation order), of the book's
    charters (newest first) and of the knowledge bases with their relation (role-scoped: bases the caller may
    not read are left out). ``more`` says, per collection, whether rows follow the ones given; each has its own
    paged route (the API's ``next`` links).

    A fixed number of queries, each of at most ``limit + 1`` rows: the time and size do not grow with the book.
    """
    book, caps = access.book, access.caps
    sessions, more_sessions = bounded(book_sessions(book), limit)
    session = current_session(book) if sessions else None
    view: dict = {"book": book, "session": session, "sessions": sessions, "limit": limit, "more": {}}
    view["more"]["sessions"] = more_sessions
    for name in ("turns", "observations", "thrusts", "scratchpad"):
        view[name], view["more"][name] = [], False
    if sessions:
        turns, view["more"]["turns"] = bounded(book_turns(book), limit)
        view["turns"] = [{**row, "id": str(row["id"])} for row in turns]
        view["observations"], view["more"]["observations"] = bounded(book_observation_rows(book), limit)
        view["thrusts"], view["more"]["thrusts"] = bounded(book_thrusts(book), limit)
        if Cap.SCRATCHPAD_READ in caps:
            entries = scratchpad_rows(ScratchpadEntry.objects.filter(session__book=book))
            view["scratchpad"], view["more"]["scratchpad"] = bounded(entries, limit)
    view["charters"], view["more"]["charters"] = bounded(book_charters(book), limit)
    bases, _ = readable_bases(book_bases(book), caps)
    view["knowledge_bases"], view["more"]["knowledge_bases"] = bounded(bases, limit)
    return view


OBSERVATION_COLUMNS = (
    "id",
    "session_id",
    "turn_id",
    "key",
    "value",
    "provenance",
    "confidence",
    "status",
    "created_at",
)


def observations_annotated(queryset):
    """Observations in creation order as lazy dict rows carrying ``corrected`` (the author's newest correction);
    ``observation_row`` turns one into what callers show. Slice it to page it in SQL."""
    latest_correction = (
        ObservationRevision.objects.filter(observation=OuterRef("pk"), action=ObservationRevision.Action.CORRECT)
        .order_by("-sequence")
        .values("value")[:1]
    )
    return (
        queryset.order_by("created_at", "id")
        .annotate(corrected=Subquery(latest_correction))
        .values(*OBSERVATION_COLUMNS, "corrected")
    )


def observation_row(row: dict) -> dict:
    """``value`` is the current value (the author's newest correction), ``stated_value`` the value as first
    stated."""
    corrected = row.pop("corrected", None)
    return {**row, "stated_value": row["value"], "value": corrected or row["value"]}


def observations_grouped_by_turn(waiting, *, limit: int = VIEW_PAGE) -> tuple[list[dict], int]:
    """The first ``limit`` of ``waiting`` (observations), oldest first, grouped by turn (``{"book", "turn",
    "observations"}``, each observation as ``observation_row`` shows it), and how many there are in all. Three
    queries, each bounded."""
    total = waiting.count()
    rows = [observation_row(row) for row in observations_annotated(waiting)[:limit]] if total else []
    turns = {
        t["id"]: t
        for t in Turn.objects.filter(pk__in={r["turn_id"] for r in rows}).values(
            "id", "ordinal", "content", "session__book_id", "session__book__title"
        )
    }
    groups: list[dict] = []
    for row in rows:
        turn = turns[row["turn_id"]]
        if not groups or groups[-1]["turn"]["id"] != turn["id"]:
            groups.append(
                {
                    "book": {"pk": turn["session__book_id"], "title": turn["session__book__title"]},
                    "turn": {"id": turn["id"], "ordinal": turn["ordinal"], "content": turn["content"]},
                    "observations": [],
                }
            )
        groups[-1]["observations"].append(row)
    return groups, total


def observation_rows(queryset) -> list[dict]:
    """Observations in creation order as dicts (one query), as ``observation_row`` shows them."""
    return [observation_row(row) for row in observations_annotated(queryset)]


SCRATCHPAD_COLUMNS = (
    "id",
    "session_id",
    "sequence",
    "agent_role",
    "kind",
    "content",
    "confidence",
    "source_refs",
    "provenance",
    "handoff_id",
    "created_at",
)


def scratchpad_rows(queryset):
    """Scratchpad entries as dicts in creation order (session by session, then by sequence)."""
    return queryset.order_by("session__created_at", "session_id", "sequence").values(*SCRATCHPAD_COLUMNS)


def scratchpad_for(
    *,
    session: DiscoverySession | None = None,
    book: Book | None = None,
    kind: str | None = None,
    agent_role: str | None = None,
):
    """One session's scratchpad, or (``book=``) the whole book's as one continuous record."""
    entries = (
        ScratchpadEntry.objects.filter(session=session)
        if book is None
        else ScratchpadEntry.objects.filter(session__book=book)
    )
    if kind:
        entries = entries.filter(kind=kind)
    if agent_role:
        entries = entries.filter(agent_role=agent_role)
    return scratchpad_rows(entries)


def handoffs_open_to(access: BookAccess) -> QuerySet[Handoff]:
    """The book's open handoffs addressed to the caller's role, oldest first (none for a person)."""
    return (
        Handoff.objects.filter(book=access.book, to_role=access.role, status=Handoff.Status.OPEN)
        .select_related("book")
        .order_by("created_at")
    )


# --- Canon with time and visibility (story records) ----------------------------------


def canon_story_rows(
    book: Book, caps: frozenset[Cap], role: str, *, bases: tuple[list[dict], list[dict]] | None = None
) -> tuple[list[dict], list[str]]:
    """The book's approved canon with story records, in the bases ``caps`` may read (two queries for
    the bases unless given, one for the claims), and a line naming each scope withheld (Luna: series canon)."""
    given, not_given = bases or readable_bases(book_bases(book), caps)
    withheld = [
        f"withheld: {SCOPE_WITHHELD_LABEL[scope]} ({role} lacks {SCOPE_READ_CAP[scope].value})"
        for scope in dict.fromkeys(base["scope"] for base in canon_bases(not_given))
    ]
    rows = [
        {
            **row,
            "id": str(row["id"]),
            "base_id": str(row["base_id"]),
            "evidence_for_id": str(row["evidence_for_id"]) if row["evidence_for_id"] else None,
            "revises_id": str(row["revises_id"]) if row["revises_id"] else None,
            "approval_id": str(row["approval_id"]) if row["approval_id"] else None,
        }
        for row in KnowledgeClaim.objects.filter(
            base_id__in=[b["id"] for b in canon_bases(given)], status=KnowledgeClaim.Status.APPROVED
        )
        .order_by("created_at", "id")
        .values(*STORY_COLUMNS)
    ]
    given_ids = {row["id"] for row in rows}
    for row in rows:
        if row["evidence_for_id"] not in given_ids:
            row["evidence_for_id"] = None  # the reveal it supports is not readable here: not even its id
    return rows, withheld


def claim_conflicts(access: BookAccess, claim: KnowledgeClaim) -> list[dict]:
    """The approved canon of this book that a proposed ``claim`` contradicts, both sides named
    (only canon the caller may read is compared)."""
    if claim.status != KnowledgeClaim.Status.PROPOSED:
        return []
    rows, _ = canon_story_rows(access.book, access.caps, access.role)
    proposed = {col: getattr(claim, col) for col in STORY_COLUMNS}
    return conflicts_with(proposed, rows)


def contradiction_entries_naming(book: Book, claim_id: Any) -> list[dict]:
    """The book's contradiction entries that name this claim as one side (one query; they stay in the
    append-only scratchpad whatever the verdict)."""
    wanted = str(claim_id)
    rows = (
        ScratchpadEntry.objects.filter(session__book=book, kind=ScratchpadEntry.Kind.CONTRADICTION)
        .order_by("created_at", "sequence")
        .values("id", "sequence", "agent_role", "content", "source_refs")
    )
    return [
        {**row, "id": str(row["id"])}
        for row in rows
        if any(
            isinstance(r, dict) and r.get("type") == "claim" and str(r.get("id")) == wanted for r in row["source_refs"]
        )
    ]


def approval_conflicts(access: BookAccess, subject_type: str, subject_id: Any) -> dict:
    """For a canon-promotion approval's review page: what its proposed claim contradicts (both sides),
    and the scratchpad's contradiction entries that name it."""
    found: dict = {"conflicts": [], "entries": []}
    if subject_type != "claim":
        return found
    claim = KnowledgeClaim.objects.filter(pk=subject_id).first()
    if claim is None:
        return found
    if Cap.SCRATCHPAD_READ in access.caps:
        found["entries"] = contradiction_entries_naming(access.book, claim.pk)
    found["conflicts"] = claim_conflicts(access, claim)
    return found


# The codex's groups, in reading order: the book's own canon first, then its series' canon, then run notes.
CODEX_SCOPE_ORDER = (KnowledgeBase.Scope.BOOK, KnowledgeBase.Scope.SERIES, KnowledgeBase.Scope.RUN)
CODEX_SCOPE_NOTE = {
    KnowledgeBase.Scope.BOOK: "this book's own canon",
    KnowledgeBase.Scope.SERIES: "shared by every book of the series",
    KnowledgeBase.Scope.RUN: "notes from a discovery run",
}


def codex_base(base: dict) -> dict:
    """A knowledge base as the codex names it: its own name and a note on what it holds (a run base's name
    carries part of its session's id, so run notes are named by their kind only)."""
    scope = base["scope"]
    name = "Run notes" if scope == KnowledgeBase.Scope.RUN else base["name"]
    return {"id": str(base["id"]), "scope": scope, "name": name, "note": CODEX_SCOPE_NOTE[scope]}


def codex_groups(rows: list[dict], bases: list[dict]) -> list[dict]:
    """Canon rows grouped as the codex reads them (no query): knowledge base (the book's own, then the
    series', then run notes), then subject (alphabetical, case aside), then the subject's claims by the
    chapter they become true from (then in the order they were made canon). Only bases with claims.

    Pure, so a paged reader can group the page of ``rows`` it holds the same way."""
    by_base: dict[str, dict[str, list[dict]]] = {}
    for row in rows:
        by_base.setdefault(str(row["base_id"]), {}).setdefault(row["subject"], []).append(row)
    rank = {scope: i for i, scope in enumerate(CODEX_SCOPE_ORDER)}
    ordered = sorted(
        (b for b in bases if str(b["id"]) in by_base), key=lambda b: (rank.get(b["scope"], len(rank)), b["name"])
    )
    groups = []
    for base in ordered:
        subjects = by_base[str(base["id"])]
        groups.append(
            {
                "base": codex_base(base),
                "subjects": [
                    {
                        "subject": subject,
                        "claims": sorted(subjects[subject], key=lambda r: r["true_from_chapter"] or 1),
                    }
                    for subject in sorted(subjects, key=lambda s: (s.casefold(), s))
                ],
            }
        )
    return groups


def codex_retracted(bases: list[dict], offset: int = 0) -> tuple[list[dict], bool]:
    """The retracted claims of these bases, newest first: a page of them from ``offset`` (one query), and whether
    more follow. No longer canon, each still one click from its history."""
    rows, more = bounded(
        KnowledgeClaim.objects.filter(base_id__in=[b["id"] for b in bases], status=KnowledgeClaim.Status.RETRACTED)
        .order_by("-updated_at", "-id")
        .values("id", "subject", "predicate", "value"),
        VIEW_PAGE,
        offset,
    )
    return [{**row, "id": str(row["id"])} for row in rows], more


def codex_groups_page(groups: list[dict], offset: int) -> tuple[list[dict], dict]:
    """A page of the codex's story records in its reading order (knowledge base, subject, claim), grouped as the
    whole is (a base or subject cut by the page boundary is named again on the next page), and the page's place."""
    flat = [
        (group["base"], subject["subject"], claim)
        for group in groups
        for subject in group["subjects"]
        for claim in subject["claims"]
    ]
    page = page_at(flat, offset)
    grouped: list[dict] = []
    for base, subject, claim in page["items"]:
        if not grouped or grouped[-1]["base"] is not base:
            grouped.append({"base": base, "subjects": []})
        subjects = grouped[-1]["subjects"]
        if not subjects or subjects[-1]["subject"] != subject:
            subjects.append({"subject": subject, "claims": []})
        subjects[-1]["claims"].append(claim)
    return grouped, {**page, "items": [claim for _, _, claim in page["items"]]}


def codex_page(view: dict, *, offset: int = 0, findings_offset: int = 0) -> dict:
    """The codex as its page shows it: a page of the story records (in the groups' reading order, from
    ``offset``; the timeline draws the same page) and a page of the fair-play findings (from
    ``findings_offset``), each with where the previous and next pages start. The API caps the same lists
    (``GET /books/{id}/codex``) and pages them on their own routes."""
    groups, claims = codex_groups_page(view["groups"], offset)
    findings = page_at(view["fair_play"]["findings"], findings_offset)
    return {
        **view,
        "groups": groups,
        "claims": claims["items"],
        "claims_page": claims,
        "fair_play": {**view["fair_play"], "findings": findings["items"]},
        "findings_page": findings,
    }


def codex_view(access: BookAccess, as_of_chapter: int | None = None, *, retracted_offset: int = 0) -> dict:
    """The book's canon on a chapter axis: story records, the fair-play findings, and what is
    withheld (by scope for the role; by chapter when ``as_of_chapter`` is given). ``groups`` holds the
    same claims by knowledge base and subject (:func:`codex_groups`)."""
    bases = readable_bases(book_bases(access.book), access.caps)
    rows, withheld = canon_story_rows(access.book, access.caps, access.role, bases=bases)
    findings = fair_play(rows)
    until = effective_until(rows)
    # History: the earlier value each approved revision replaced, and the decision that had made it canon.
    earlier = {
        str(pk): {"value": value, "approval_id": str(approval_id) if approval_id else None}
        for pk, value, approval_id in KnowledgeClaim.objects.filter(
            pk__in=[row["revises_id"] for row in rows if row["revises_id"]]
        ).values_list("pk", "value", "approval_id")
    }
    for row in rows:
        row["true_until_effective"] = until[row["id"]]
        row["visibility"] = visibility(row)
        row["earlier"] = earlier.get(row["revises_id"]) if row["revises_id"] else None
    if as_of_chapter is not None:
        rows, by_chapter = as_of(rows, as_of_chapter)
        withheld += by_chapter
        findings = []  # judged on the whole book only; as of a chapter it would name later reveals
    chapters = [
        {"number": n, "title": t}
        for n, t in Chapter.objects.filter(book=access.book).order_by("number").values_list("number", "title")
    ]
    # A page of the retracted claims (from ``retracted_offset``) and whether more follow.
    retracted, retracted_more = codex_retracted(canon_bases(bases[0]), retracted_offset)
    return {
        "book_id": str(access.book.pk),
        "as_of_chapter": as_of_chapter,
        "chapters": chapters,
        "claims": rows,
        "groups": codex_groups(rows, canon_bases(bases[0])),
        "retracted": retracted,
        "retracted_more": retracted_more,
        "withheld": withheld,
        "fair_play": {
            "ok": (not findings) if as_of_chapter is None else None,
            "findings": findings,
            # With no reveal (solution or twist) in canon, fair play has nothing to check yet.
            "reveals": sum(1 for row in rows if row.get("reveal", RevealKind.NONE) != RevealKind.NONE),
        },
    }


# --- A dossier as read ---------------------------------------------------------

# The most claims, scratchpad entries and observations a dossier holds; ``more`` links to the rest.
DOSSIER_PAGE = VIEW_PAGE


def dossier_more_links(
    *, book_id, session_id, more: dict[str, bool], limit: int, as_of_chapter: int | None = None
) -> dict[str, str | None]:
    """Where the rest of each capped collection of a dossier is: its paged API route from the first item the
    dossier does not hold (the same order), or None when the dossier holds all of it. An as-of dossier's
    claims are the canon as of its chapter: their rest is the codex's claims as of that chapter, paged (the paged
    canon route is the canon now, a different list)."""
    # The author's constraints bind every role, and the bases name what the role reads, as of a chapter too:
    # their rest is always their paged route.
    always = {
        name: rest_link(f"books/{book_id}/{route}", page=limit) if more.get(name) else None
        for name, route in (("author_constraints", "author-constraints"), ("knowledge_bases", "knowledge-bases"))
    }
    if as_of_chapter is not None:
        codex = rest_link(f"books/{book_id}/codex/claims", page=limit, as_of_chapter=as_of_chapter)
        return {
            "claims": codex if more.get("claims") else None,
            "scratchpad": None,
            "observations": None,
            **always,
        }
    links = {
        "claims": rest_link(f"books/{book_id}/canon", page=limit) if more.get("claims") else None,
        "scratchpad": rest_link(f"books/{book_id}/scratchpad", page=limit)
        if session_id and more.get("scratchpad")
        else None,
        "observations": rest_link(f"books/{book_id}/observations", page=limit, status="working")
        if more.get("observations")
        else None,
    }
    return {**links, **always}


FIRST_CAPPED = ("claims", "scratchpad", "observations")
LATER_CAPPED = ("author_constraints", "knowledge_bases")


def dossier_capped(dossier: ContextDossier) -> dict:
    """A dossier's content as read: a snapshot stored before dossiers were bounded (or before the author's
    constraints and the bases were) may hold more than ``DOSSIER_PAGE`` of a collection; it is read with the first
    page and a ``more`` link, as a new one is. (The stored row is never changed: the snapshot is immutable.)"""
    content = dossier.content or {}
    stored_more = content.get("more")
    if stored_more is not None and all(name in stored_more for name in LATER_CAPPED):
        return content
    capped = dict(content)
    more = {}
    for name in (*FIRST_CAPPED, *LATER_CAPPED) if stored_more is None else LATER_CAPPED:
        items = content.get(name)  # None: the snapshot predates the collection (the page says so)
        if items is not None:
            capped[name] = items[:DOSSIER_PAGE]
        more[name] = items is not None and len(items) > DOSSIER_PAGE
    links = dossier_more_links(
        book_id=dossier.book_id,
        session_id=content.get("session_id"),
        more=more,
        limit=DOSSIER_PAGE,
        as_of_chapter=content.get("as_of_chapter"),
    )
    if stored_more is None:
        capped["limit"] = DOSSIER_PAGE
        capped["more"] = links
    else:
        capped["more"] = {**stored_more, **{name: links[name] for name in LATER_CAPPED}}
    return capped


def book_chapters(book: Book):
    """The book's chapters in order, as rows (a queryset: the route pages it in SQL)."""
    return Chapter.objects.filter(book=book).order_by("number").values("number", "title", "spec")


def codex_capped(access: BookAccess, as_of_chapter: int | None) -> dict:
    """The codex as ``GET /books/{id}/codex`` answers it: each list capped at a page, ``next`` linking its
    paged route (``/codex/<part>``) for the rest."""
    view = codex_view(access, as_of_chapter)
    book_id = access.book.pk
    lists = {
        "chapters": view["chapters"],
        "claims": view["claims"],
        "withheld": view["withheld"],
        "findings": view["fair_play"]["findings"],
    }
    view["next"] = {
        part: rest_link(f"books/{book_id}/codex/{part}", as_of_chapter=as_of_chapter) if len(rows) > VIEW_PAGE else None
        for part, rows in lists.items()
    }
    for key in ("chapters", "claims", "withheld"):
        view[key] = view[key][:VIEW_PAGE]
    view["fair_play"] = {**view["fair_play"], "findings": view["fair_play"]["findings"][:VIEW_PAGE]}
    return view


def observations_waiting(books, user, limit: int) -> dict:
    """The inbox's section of observations waiting to be confirmed (registered from discovery's ``ready()``), in
    ``books`` (the person's, or the one the inbox is filtered to).

    Her own come first, with their actions (``template``): the first page still ``working`` in the open sessions of
    the books she owns, oldest first, grouped by turn (``groups``), how many wait in all (``waiting``) and how many
    are not shown (``more``). What waits in the books she edits waits for their authors: one item per turn
    (``items``, newest first, its observations in words and "See the turn"; only the author confirms), ``total``
    such turns. Bounded queries whatever the number of turns."""
    working = Observation.objects.filter(status=ObservationStatus.WORKING)
    groups, waiting = observations_grouped_by_turn(
        working.filter(
            session__book__in=books.filter(owner=user).values("pk"), session__status__in=OPEN_SESSION_STATUSES
        )
    )
    theirs = working.filter(session__book__in=books.exclude(owner=user).values("pk"))
    turns_qs = Turn.objects.filter(pk__in=theirs.values("turn_id")).select_related("session__book")
    total = turns_qs.count()
    turns = list(turns_qs.order_by("-created_at", "-id")[:limit]) if total else []
    by_turn: dict = {}
    for obs in (
        theirs.filter(turn__in=[t.pk for t in turns]).order_by("created_at", "id").only("turn_id", "key", "value")
        if turns
        else ()
    ):
        by_turn.setdefault(obs.turn_id, []).append(obs)
    items = []
    for turn in turns:
        book = turn.session.book
        found = by_turn.get(turn.pk, [])
        items.append(
            {
                "book": book,
                "text": "; ".join(f"{label_of(o.key)}: {o.value[:120]}" for o in found[:5])
                + (f"; and {len(found) - 5} more" if len(found) > 5 else ""),
                "note": f"from turn {turn.ordinal} ({len(found)} to confirm)",
                "href": f"{reverse('discovery:book', args=[book.pk])}#turn-{turn.pk}",
                "action_label": "See the turn",
                "confirm_url": None,
            }
        )
    shown = sum(len(group["observations"]) for group in groups)
    return {
        "key": "observations",
        "title": "Observations to confirm",
        "items": items,
        "total": total,
        "template": "discovery/_inbox_observations.html",
        "groups": groups,
        "waiting": waiting,
        "more": waiting - shown,
    }


def whoami(principal) -> dict:
    """Who the caller is and what its role may do (``GET /me`` and the ``whoami`` tool)."""
    ids, more = first_visible_book_ids(principal)
    return {
        "username": principal.user.get_username(),
        "role": principal.key_role,
        "capabilities": sorted(c.value for c in principal_capabilities(principal)),
        # A page of ids, in the order of ``GET /books``; the rest is that paged route (``next``).
        "book_ids": [str(pk) for pk in ids],
        "next": {"book_ids": rest_link("books") if more else None},
    }


def discovery_view_out(access: BookAccess) -> dict:
    """The discovery view with a link per collection to the book's own paged route for the rest (across its
    sessions, in the view's order): ``GET /books/{id}/discovery`` and the ``discovery_read`` tool."""
    view = discovery_view(access)
    limit = view["limit"]
    book_id = access.book.pk
    routes = {
        "sessions": f"books/{book_id}/sessions",
        "turns": f"books/{book_id}/turns",
        "observations": f"books/{book_id}/observations",
        "thrusts": f"books/{book_id}/thrusts",
        "scratchpad": f"books/{book_id}/scratchpad",
        "charters": f"books/{book_id}/charters",
        "knowledge_bases": f"books/{book_id}/knowledge-bases",
    }
    view["next"] = {
        name: rest_link(route, page=limit) if view["more"][name] else None for name, route in routes.items()
    }
    return view


def webhook_of(book):
    """The book's webhook (None when its author registered none)."""
    return WebhookEndpoint.objects.filter(book=book).first()


def webhook_deliveries(endpoint, *, limit: int = 100) -> list:
    """The delivery log: the latest attempts first (every attempt is a row)."""
    if endpoint is None:
        return []
    return list(endpoint.deliveries.order_by("-created_at", "-attempt")[:limit])


def codex_entries(book: Book) -> list[CodexEntry]:
    """The book's codex entries by name, each with the ids of the claims that name it."""
    entries = list(CodexEntry.objects.filter(book=book).order_by("name"))
    claims: dict = {}
    for entry_id, claim_id in KnowledgeClaim.objects.filter(entry__book=book).values_list("entry_id", "id"):
        claims.setdefault(entry_id, []).append(claim_id)
    for entry in entries:
        entry.claim_ids = claims.get(entry.pk, [])
    return entries


def chapter_revisions(chapter: Chapter) -> list[ChapterRevision]:
    """A chapter's revisions, oldest first."""
    return list(ChapterRevision.objects.filter(chapter=chapter).select_related("chapter").order_by("number"))


def latest_revision(book: Book, number: int) -> ChapterRevision | None:
    return (
        ChapterRevision.objects.filter(chapter__book=book, chapter__number=number)
        .select_related("chapter")
        .order_by("-number")
        .first()
    )


def manuscript_texts(book: Book, *, before: int | None = None) -> dict[int, str]:
    """The latest text of each chapter (before chapter ``before`` when given), by chapter number."""
    rows = ChapterRevision.objects.filter(chapter__book=book)
    if before is not None:
        rows = rows.filter(chapter__number__lt=before)
    texts: dict[int, tuple[int, str]] = {}
    for number, revision, text in rows.values_list("chapter__number", "number", "text"):
        if number not in texts or texts[number][0] < revision:
            texts[number] = (revision, text)
    return {number: text for number, (_r, text) in texts.items()}


def continuity_findings(book: Book, *, chapter: int | None = None, status: str | None = None):
    rows = ContinuityFinding.objects.filter(chapter__book=book).select_related("chapter", "revision")
    if chapter is not None:
        rows = rows.filter(chapter__number=chapter)
    if status is not None:
        rows = rows.filter(status=status)
    return list(rows.order_by("chapter__number", "span_start", "created_at"))


def manuscript_for_check(book: Book, task_input: dict) -> dict:
    """What the continuity check of one chapter reads: that revision's text, the latest text of every other
    chapter, the codex's entries and the book's approved canon with its story records (literary guidance is
    craft, not canon, and is left out)."""
    number, wanted = task_input.get("chapter"), task_input.get("revision")
    revision = ChapterRevision.objects.filter(chapter__book=book, chapter__number=number, number=wanted).first()
    return {
        "chapter": number,
        "revision": wanted,
        "text": revision.text if revision is not None else None,
        "others": {str(n): t for n, t in manuscript_texts(book).items() if n != number},
        **canon_for_check(book),
        "canon": canon_as_of_chapter(approved_claims(book), number) if isinstance(number, int) else [],
    }


def approved_claims(book: Book):
    """The approved claims of the book's own and its series' knowledge bases (literary guidance is craft, not
    canon, and is left out)."""
    bases = [b["id"] for b in book_bases(book) if b["scope"] in (KnowledgeBase.Scope.BOOK, KnowledgeBase.Scope.SERIES)]
    return KnowledgeClaim.objects.filter(base_id__in=bases, status=KnowledgeClaim.Status.APPROVED)


def canon_for_check(book: Book) -> dict:
    """The codex's entries and the book's approved canon with its story records, as the continuity check and
    the reader promises read them (plain dicts: ids as strings)."""
    claims = approved_claims(book)
    columns = ("id", "entry_id", "predicate", "value", *STORY_COLUMNS_FOR_CHECK)
    return {
        "entries": [
            {"id": str(e.pk), "name": e.name, "aliases": list(e.aliases)}
            for e in CodexEntry.objects.filter(book=book, status=CodexEntry.Status.APPROVED).order_by("name")
        ],
        "claims": [_claim_for_check(row) for row in claims.order_by("created_at", "id").values(*columns)],
    }


def charter_reader_promise(book: Book) -> list[str]:
    """The reader promise of the book's latest approved charter (its lines; none without an approved charter)."""
    charter = StoryCharter.objects.filter(book=book, status=StoryCharter.Status.APPROVED).order_by("-version").first()
    promise = (charter.content or {}).get("reader_promise") if charter is not None else None
    if isinstance(promise, str):
        promise = [promise]
    return [" ".join(str(p).split()) for p in promise or [] if str(p).strip()]


def canon_as_of_chapter(claims, number: int) -> list[dict]:
    """The approved claims true in chapter ``number`` (within their true-from/true-until chapters), each with
    its entry's names: what a reader of the model provider's check compares the text with, by meaning."""
    rows = claims.filter(Q(true_from_chapter__isnull=True) | Q(true_from_chapter__lte=number)).filter(
        Q(true_until_chapter__isnull=True) | Q(true_until_chapter__gte=number)
    )
    out = []
    for claim in rows.select_related("entry").order_by("created_at", "pk"):
        entry = claim.entry
        out.append(
            {
                "claim_id": str(claim.pk),
                "entry_id": str(entry.pk) if entry else None,
                "subject": claim.subject,
                "names": entry.names if entry else [claim.subject],
                "predicate": claim.predicate,
                "value": claim.value,
            }
        )
    return out


def _claim_for_check(row: dict) -> dict:
    ids = {name: str(row[name]) if row[name] else None for name in ("entry_id", "evidence_for_id")}
    return {**row, "id": str(row["id"]), **ids}


STORY_COLUMNS_FOR_CHECK = (
    "true_from_chapter",
    "true_until_chapter",
    "known_by",
    "first_shown_chapter",
    "reveal",
    "decisive",
    "evidence_for_id",
)
