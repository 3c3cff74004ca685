"""Browser pages for books and their discovery (server-rendered, HTMX partials).

Each view reads like a short story: find the book through ``page_access`` (404 when it is
not the visitor's, 403 naming the capability), call a selector or a service, render.
Writes go through the same services as the API; a refused or invalid write shows an
inline message and changes nothing.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, F, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from approvals.models import Approval
from library.search import MAX_QUERY_CHARS
from novelgraph.core.auth import principal_for_user
from novelgraph.core.errors import Conflict, DomainError, Invalid, NotFound
from novelgraph.core.pages import partial_or_page
from novelgraph.core.pagination import page_offset, page_url, read_page
from novelgraph.core.roles import AgentRole
from novelgraph.core.runs import produced_by, runs_worked_on
from novelgraph.core.schemas import parse_form

from . import services
from .access import BookAccess, Cap, books_visible_to, page_access
from .book_nav import book_links
from .book_pages import (
    book_observation_get,
    book_turn_get,
    canon_claims_page,
    charter_to_start_from,
    charter_versions,
    conversation_turns,
    current_question,
    opening_chapter,
    pending_approval_count,
    proposed_claim_count,
    recent_activity,
    research_counts,
    series_of,
    with_observations,
)
from .history import claim_history
from .models import (
    Book,
    KnownBy,
    Provenance,
    RevealKind,
    ScratchpadEntryKind,
)
from .panels import book_panels
from .record_search import book_record_search
from .refs import resolve_source_refs
from .schemas import (
    GENRE_PACKS,
    AsOfFilter,
    BookEditIn,
    BookIn,
    CharterIn,
    ClaimIn,
    ClaimRetractForm,
    ClaimSupersedeForm,
    DossierIn,
    EditorIn,
    FactStateForm,
    ObservationResolveIn,
    RecordSearchParams,
    SeriesIn,
    TurnIn,
)
from .selectors import (
    OPEN_SESSION_STATUSES,
    VIEW_PAGE,
    book_bases,
    book_charters,
    book_thrusts,
    book_turns,
    bounded,
    codex_page,
    codex_view,
    current_session,
    discovery_view,
    dossier_capped,
    readable_bases,
    scratchpad_for,
)
from .templatetags.discovery_pages import as_list
from .timeline import timeline_svg, timeline_window

# --- Links ----------------------------------------------------------------------


def ref_url(book: Book, ref: dict) -> str | None:
    """Where a resolved source reference can be read."""
    if not ref.get("exists"):
        return None
    kind, ref_id = ref["type"], ref["id"]
    book_page = reverse("discovery:book", args=[book.pk])
    anchors = {
        "turn": f"{reverse('discovery:scratchpad', args=[book.pk])}#turn-{ref_id}",
        "observation": f"{book_page}#observation-{ref_id}",
        "claim": f"{book_page}#claim-{ref_id}",
        "charter": f"{book_page}#charter-{ref_id}",
        "entry": f"{reverse('discovery:scratchpad', args=[book.pk])}#entry-{ref_id}",
        "research": f"{reverse('library:research', args=[book.pk])}#research-{ref_id}",
    }
    if kind in anchors:
        return anchors[kind]
    if kind == "chunk":
        return reverse("library:chunk", args=[ref_id])
    return ref.get("url")


def attribute(rows: list[dict], kind: str) -> list[dict]:
    """Attach to each row the agent run that wrote it (``row["run"]``, None when it came through the API)."""
    runs = produced_by(kind, [row["id"] for row in rows])
    for row in rows:
        row["run"] = runs.get(str(row["id"]))
    return rows


def with_resolved_refs(access: BookAccess, rows: list[dict]) -> list[dict]:
    """Attach each row's source refs, resolved for the reader, in one batch (one query per reference type)."""
    book = access.book
    flat = [ref for row in rows for ref in (row.get("source_refs") or [])]
    resolved = resolve_source_refs(access, flat)
    position = 0
    for row in rows:
        count = len([r for r in (row.get("source_refs") or []) if isinstance(r, dict)])
        row["refs"] = [{**ref, "href": ref_url(book, ref)} for ref in resolved[position : position + count]]
        position += count
    return rows


# --- Dashboard ----------------------------------------------------------------


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The author's books (including those she edits) with pending decisions, and recent activity."""
    principal = principal_for_user(request.user)
    books = list(
        books_visible_to(principal)
        .select_related("series", "owner")
        .annotate(pending=Count("approvals", filter=Q(approvals__status=Approval.Status.PENDING), distinct=True))
        .annotate(discovery_status=F("loop__status"), discovery_gate=F("loop__gate"))  # the loop's, once started
        .order_by("series__title", "planned_order", "title")
    )
    for book in books:
        book.role = "author" if book.owner_id == request.user.pk else "editor"
    return render(
        request,
        "discovery/home.html",
        {
            "books": books,
            "activity": recent_activity([b.pk for b in books]),
            "inbox_url": reverse("approvals:inbox"),
            "pending_total": sum(b.pending for b in books),
        },
    )


# --- Book page ------------------------------------------------------------------


BOOK_SECTIONS = ("turns", "thrusts", "charters", "claims", "bases")
# Sections paged with ``?more=``: the book page's, and the author's constraints (a dossier's "show more").
MORE_SECTIONS = (*BOOK_SECTIONS, "constraints")



def _more_url(book: Book, section: str, offset: int) -> str:
    return f"{reverse('discovery:book', args=[book.pk])}?more={section}&offset={offset}"


def _section_page(access: BookAccess, section: str, offset: int) -> tuple[list, bool]:
    """A page of one collection of the book page, from ``offset``."""
    book = access.book
    if section in ("claims", "bases"):
        bases, _ = readable_bases(book_bases(book), access.caps)
        if section == "claims":
            return canon_claims_page(bases, offset)
        return bounded(bases, VIEW_PAGE, offset)
    if section == "constraints":
        return bounded(services.author_constraints(book), VIEW_PAGE, offset)
    if section == "charters":
        charters, more = bounded(book_charters(book), VIEW_PAGE, offset)
        return attribute(charters, "charter"), more
    # Turns and thrusts: the book's sessions read as one record.
    if section == "thrusts":
        thrusts, more = bounded(book_thrusts(book), VIEW_PAGE, offset)
        return attribute(thrusts, "thrust"), more
    turns, more = bounded(book_turns(book), VIEW_PAGE, offset)
    return with_observations(turns), more


def _book_more(request: HttpRequest, access: BookAccess, section: str, offset: int) -> HttpResponse:
    """The next page of one section of the book page: the items alone for HTMX (they replace the "show more"
    link), or a page of their own without JavaScript."""
    items, more = _section_page(access, section, offset)
    context = {
        "book": access.book,
        "role": access.role,
        "section": section,
        "items": items,
        "offset": offset,
        "more_url": _more_url(access.book, section, offset + VIEW_PAGE) if more else None,
    }
    template = "discovery/_book_items.html" if request.htmx else "discovery/book_more.html"
    return render(request, template, context)


@login_required
def book_detail(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """Premise, current question, and a page of each collection (turns with their observations, thrusts,
    charters, knowledge bases and canon), each with a "show more" link to the next page (``?more=<section>``)."""
    return _render_book(request, page_access(request, book_id, Cap.BOOK_READ))


def _render_book(
    request: HttpRequest, access: BookAccess, *, observation_error: dict | None = None, status: int = 200
) -> HttpResponse:
    book, role = access.book, access.role
    section = request.GET.get("more")
    if section in MORE_SECTIONS:
        return _book_more(request, access, section, page_offset(request.GET.get("offset")))
    view = discovery_view(access)
    with_observations(view["turns"])
    bases = view["knowledge_bases"]
    all_bases, _ = readable_bases(book_bases(book), access.caps) if view["more"]["knowledge_bases"] else (bases, [])
    claims, claims_more = canon_claims_page(all_bases, 0)
    claims_by_base: dict[str, list[dict]] = {}
    for claim in claims:
        claims_by_base.setdefault(str(claim["base_id"]), []).append(claim)
    for base in bases:
        base["claims"] = claims_by_base.get(base["id"], [])
    proposed_claims = proposed_claim_count(all_bases)
    pending = pending_approval_count(book)
    panels = book_panels(book)  # the loop's gates
    attribute(view["thrusts"], "thrust")
    attribute(view["charters"], "charter")
    asked = current_question(view["session"])
    question_run = produced_by("question", [asked.pk]).get(str(asked.pk)) if asked else None
    prompted_by = with_resolved_refs(access, [{"source_refs": asked.source_refs}])[0]["refs"] if asked else []
    research = research_counts(book)
    more = {**view["more"], "claims": claims_more, "bases": view["more"]["knowledge_bases"]}
    return render(
        request,
        "discovery/book.html",
        {
            **view,
            "role": role,
            # The missing items' buttons: an agent run (who may queue one), the hand-off (the author only).
            "may_run": access.holds(Cap.DISCOVERY_WRITE) and not access.is_agent,
            "may_hand_off": access.is_author,
            "pending": pending,
            "proposed_claims": proposed_claims,
            "research_counts": research,
            **panels,
            # After G3: where drafting starts (the chapter the hand-off made from the decision brief).
            "handoff_chapter": opening_chapter(book) if panels.get("handed_off") else None,
            "entry_count": len(view["scratchpad"]),
            "entries_more": view["more"]["scratchpad"],
            "more_urls": {name: _more_url(book, name, VIEW_PAGE) if more.get(name) else None for name in BOOK_SECTIONS},
            "asked": asked,
            "question_run": question_run,
            "prompted_by": prompted_by,
            "can_answer": role in ("author", "editor")
            and view["session"] is not None
            and view["session"].status in OPEN_SESSION_STATUSES,
            "composer_url": reverse("discovery:turn_add", args=[book.pk]),
            "observation_error": observation_error,
            "edit_form": {"title": book.title, "premise": book.premise, "genre_pack": book.genre_pack},
            "edit_genres": _genre_choices(book.genre_pack),
        },
        status=status,
    )


# --- Scratchpad -------------------------------------------------------------------


def _choice(value: str | None, allowed: list[str]) -> str:
    return value if value in allowed else ""


@login_required
def scratchpad(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The session's scratchpad in creation order, filtered by kind and role, beside the conversation."""
    return _render_scratchpad(request, page_access(request, book_id, Cap.SCRATCHPAD_READ))


def _render_scratchpad(
    request: HttpRequest,
    access: BookAccess,
    *,
    composer_error: DomainError | None = None,
    draft: str = "",
    stated: dict | None = None,
    status: int = 200,
) -> HttpResponse:
    book, role = access.book, access.role
    session = current_session(book)
    kind = _choice(request.GET.get("kind"), ScratchpadEntryKind.values)
    agent_role = _choice(request.GET.get("role"), AgentRole.values)
    entries = list(scratchpad_for(book=book, kind=kind or None, agent_role=agent_role or None)) if session else []
    with_resolved_refs(access, entries)
    attribute(entries, "entry")
    turns = conversation_turns(book)
    context = {
        "book": book,
        "role": role,
        "session": session,
        "entries": entries,
        "turns": turns,
        "kinds": ScratchpadEntryKind.choices,
        "roles": AgentRole.choices,
        "kind": kind,
        "agent_role": agent_role,
        "can_write_turns": role in ("author", "editor"),
        "composer_error": composer_error,
        "composer_url": reverse("discovery:turn_add", args=[book.pk]),
        "draft": draft,
        "stated": stated or {},
        "agents_ran": runs_worked_on(book),
    }
    # A filter click redraws the entries, a turn the conversation; without htmx, the page.
    partial = "entries" if request.method == "GET" else "conversation"
    return render(request, partial_or_page(request, "discovery/scratchpad.html", partial), context, status=status)


# --- Dossiers ----------------------------------------------------------------------


@login_required
def dossiers(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The book's dossier snapshots, newest first, per role."""
    return _dossiers_page(request, page_access(request, book_id, Cap.BOOK_READ))


def _dossiers_page(
    request: HttpRequest, access: BookAccess, *, snapshot_error: str = "", status: int = 200
) -> HttpResponse:
    book, role = access.book, access.role
    paged_role = request.GET.get("role")
    offset = page_offset(request.GET.get("offset")) if paged_role in AgentRole.values else 0
    by_role = []
    for value, label in AgentRole.choices:
        start = offset if value == paged_role else 0
        snapshots = book.dossiers.filter(agent_role=value).select_related("requested_by").order_by("-created_at")
        page, more = bounded(snapshots, VIEW_PAGE, start)
        older = f"{reverse('discovery:dossiers', args=[book.pk])}?role={value}&offset={start + VIEW_PAGE}"
        by_role.append((value, label, page, older if more else None, start))
    return render(
        request,
        "discovery/dossiers.html",
        {
            "book": book,
            "role": role,
            "by_role": by_role,
            "roles": AgentRole.choices,
            "can_snapshot": role == "author",
            "snapshot_url": reverse("discovery:dossier_create", args=[book.pk]),
            "snapshot_error": snapshot_error,
        },
        status=status,
    )


@login_required
def dossier_detail(request: HttpRequest, book_id: uuid.UUID, dossier_id: uuid.UUID) -> HttpResponse:
    """One snapshot, read-only: the role's capabilities and what it was and was not given."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    book, role = access.book, access.role
    dossier = book.dossiers.select_related("requested_by").filter(pk=dossier_id).first()
    if dossier is None:
        raise NotFound("dossier not found")
    content = dossier_capped(dossier)
    held = set(content.get("capabilities") or [])
    return render(
        request,
        "discovery/dossier.html",
        {
            "book": book,
            "role": role,
            "dossier": dossier,
            "content": content,
            "capabilities": [(cap.value, cap.value in held) for cap in Cap],
            "withheld": content.get("withheld") or [],
            "more": content.get("more") or {},
            "more_pages": {
                # An as-of snapshot's canon is the canon as of its chapter: its rest is the codex as of then.
                "claims": (
                    f"{reverse('discovery:codex', args=[book.pk])}?as_of_chapter={content['as_of_chapter']}"
                    if content.get("as_of_chapter")
                    else _more_url(book, "claims", content.get("limit") or VIEW_PAGE)
                ),
                "scratchpad": book_links(book.pk)["scratchpad"],
                "observations": book_links(book.pk)["book"],
                "author_constraints": _more_url(book, "constraints", len(content.get("author_constraints") or [])),
                "knowledge_bases": _more_url(book, "bases", len(content.get("knowledge_bases") or [])),
            },
        },
    )


# --- Codex: canon on a chapter axis -------------------------------------------------------


@login_required
def codex(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The book's canon on a chapter axis (SVG), its story records and the fair-play check;
    ``?as_of_chapter=N`` shows only what is true by chapter N (later reveals withheld)."""
    return _render_codex(request, page_access(request, book_id, Cap.BOOK_READ))


@login_required
def codex_claim(request: HttpRequest, book_id: uuid.UUID, claim_id: uuid.UUID) -> HttpResponse:
    """One claim's history from the codex (``history.claim_history``): every version, its sources and
    the decisions that made it canon, replaced or retracted it; 404 for a claim the reader may not read."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    raw = request.GET.get("offset")
    # Without ``?offset=`` the newest page (the canon now, the last decisions), with links to older versions.
    history = claim_history(access, claim_id, None if raw is None else page_offset(raw))
    here = reverse("discovery:codex-claim", args=[access.book.pk, claim_id])
    at, total = history["offset"], history["versions_count"]
    shown = {v["number"] for v in history["versions"]}

    def version_href(number: int) -> str:
        if number in shown:
            return f"#version-{number}"
        return f"{here}?offset={(number - 1) // VIEW_PAGE * VIEW_PAGE}#version-{number}"

    every = {v["id"]: v for v in [*history["versions"], *([history["canon"]] if history["canon"] else [])]}
    for version in every.values():
        version["source_refs"] = [{**ref, "href": ref_url(access.book, ref)} for ref in version["source_refs"]]
        version["revises_href"] = version_href(version["revises_number"]) if version["revises_number"] else None
        version["revised_by"] = [(n, version_href(n)) for n in version["revised_by_numbers"]]
    pager = {
        "first": at + 1 if history["versions"] else 0,
        "last": at + len(history["versions"]),
        "count": total,
        "older_url": f"{here}?offset={max(at - VIEW_PAGE, 0)}" if at else None,
        "newer_url": f"{here}?offset={at + VIEW_PAGE}" if at + VIEW_PAGE < total else None,
    }
    context = {**history, "pager": pager, "book": access.book, "role": access.role}
    return render(request, "discovery/codex_claim.html", context)


@login_required
@require_POST
def codex_supersede(request: HttpRequest, book_id: uuid.UUID, claim_id: uuid.UUID) -> HttpResponse:
    """The author supersedes an approved claim from the codex (``services.claim_supersede``): a logged
    decision with her rationale; an error shows inline above the story records and nothing is recorded."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    try:
        form = parse_form(ClaimSupersedeForm, request.POST)
        new = services.claim_supersede(access=access, claim_id=claim_id, value=form.value, rationale=form.rationale)
    except DomainError as exc:
        error = {"id": str(claim_id), "message": exc.message, "value": request.POST.get("value", "")}
        return _render_codex(request, access, supersede_error=error, status=exc.status)
    messages.success(request, "Canon changed; the decision is in the log.")
    return redirect(f"{reverse('discovery:codex', args=[access.book.pk])}#claim-{new.pk}")


@login_required
@require_POST
def codex_retract(request: HttpRequest, book_id: uuid.UUID, claim_id: uuid.UUID) -> HttpResponse:
    """The author retracts an approved claim from the codex (``services.claim_retract``): a logged decision
    with her rationale; an error shows inline above the story records and nothing is recorded."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    try:
        form = parse_form(ClaimRetractForm, request.POST)
        services.claim_retract(access=access, claim_id=claim_id, rationale=form.rationale)
    except DomainError as exc:
        error = {"id": str(claim_id), "message": exc.message, "value": ""}
        return _render_codex(request, access, supersede_error=error, status=exc.status)
    messages.success(request, "Claim retracted; the decision is in the log.")
    # To its history: it is no longer in the codex's canon, and there the retraction reads with its rationale.
    return redirect(reverse("discovery:codex-claim", args=[access.book.pk, claim_id]))


FACT_FIELDS = (
    "subject",
    "predicate",
    "value",
    "true_from_chapter",
    "true_until_chapter",
    "known_by",
    "known_by_characters",
    "first_shown_chapter",
    "decisive",
    "evidence_for",
    "reveal",
    "rationale",
)


def _fact_from_form(book: Book, form: dict[str, str]) -> dict:
    """The "State a fact" form as a claim's input: blank chapters and choices are left out (the defaults), the
    characters who know it are a comma-separated list, "decisive" a checkbox."""
    data: dict = {
        "scope": "book",
        "scope_id": str(book.pk),
        "provenance": Provenance.AUTHOR_STATED,
        "subject": form["subject"],
        "predicate": form["predicate"],
        "value": form["value"],
        "decisive": form["decisive"] in ("on", "true", "1"),
    }
    chosen = ("true_from_chapter", "true_until_chapter", "first_shown_chapter", "known_by", "evidence_for", "reveal")
    for name in chosen:
        if form[name].strip():
            data[name] = form[name].strip()
    names = [n.strip() for n in form["known_by_characters"].split(",") if n.strip()]
    if names:
        data["known_by_characters"] = names
    return data


@login_required
@require_POST
def codex_state(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The author states a fact from the codex (``services.claim_state``): her claim with its story record, made
    canon by her verdict in the same act, logged with her rationale; an error shows inline in the form, with her
    words kept, and nothing is recorded."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    form = {name: request.POST.get(name, "") for name in FACT_FIELDS}
    try:
        payload = parse_form(ClaimIn, _fact_from_form(access.book, form))
        rationale = parse_form(FactStateForm, {"rationale": form["rationale"]}).rationale
        claim = services.claim_state(access=access, payload=payload, rationale=rationale)
    except DomainError as exc:
        error = {"message": exc.message, "field": exc.field or ""}
        return _render_codex(request, access, state_error=error, fact_form=form, status=exc.status)
    messages.success(request, "Your fact is canon; the decision is in the log with your rationale.")
    return redirect(f"{reverse('discovery:codex', args=[access.book.pk])}#claim-{claim.pk}")


def _render_codex(
    request: HttpRequest,
    access: BookAccess,
    supersede_error: dict | None = None,
    status: int = 200,
    *,
    state_error: dict | None = None,
    fact_form: dict | None = None,
) -> HttpResponse:
    book = access.book
    as_of_error = ""
    as_of_chapter = None
    raw = request.GET.get("as_of_chapter", "").strip()
    if raw:
        try:
            as_of_chapter = parse_form(AsOfFilter, {"as_of_chapter": raw}).as_of_chapter
        except DomainError as exc:
            as_of_error = exc.message
    offsets = {name: page_offset(request.GET.get(name)) for name in ("offset", "findings_offset", "retracted_offset")}
    view = codex_page(
        codex_view(access, as_of_chapter, retracted_offset=offsets["retracted_offset"]),
        offset=offsets["offset"],
        findings_offset=offsets["findings_offset"],
    )
    # The timeline draws a window of chapters (from ``?chapters_from=``, else where the page's claims start).
    window = timeline_window(view["claims"], view["chapters"], page_offset(request.GET.get("chapters_from")) or None)
    offsets["chapters_from"] = window["first"] if request.GET.get("chapters_from") else 0
    return render(
        request,
        "discovery/codex.html",
        {
            **view,
            "pagers": _codex_pagers(book, as_of_chapter, view, offsets, window),
            "book": book,
            "role": access.role,
            "as_of_raw": raw,
            "as_of_error": as_of_error,
            "timeline": timeline_svg(view["claims"], view["chapters"], view["fair_play"]["findings"], window),
            "may_change_canon": access.is_author and not as_of_chapter,
            "supersede_error": supersede_error,
            "state_error": state_error,
            "fact": fact_form or {},
            "reveals": [c for c in view["claims"] if c.get("reveal", "none") != "none"],
            "known_by_choices": KnownBy.choices,
            "reveal_choices": RevealKind.choices,
        },
        status=422 if as_of_error else status,
    )


def _codex_pagers(book: Book, as_of_chapter: int | None, view: dict, offsets: dict[str, int], window: dict) -> dict:
    """The previous and next links of the codex page's paged lists (each keeps the others' places and the
    chapter); a page of story records or findings past the end shows the last one."""
    base = reverse("discovery:codex", args=[book.pk])

    places = {**offsets, "as_of_chapter": as_of_chapter}

    def link(at: int | None, param: str) -> str | None:
        return None if at is None else page_url(base, places, **{param: at})

    pagers = {}
    for name, param in (("claims", "offset"), ("findings", "findings_offset")):
        page = view[f"{name}_page"]
        pagers[name] = {**page, "previous_url": link(page["previous"], param), "next_url": link(page["next"], param)}
    # The retracted claims are read a page at a time (newest first), not counted.
    retracted = read_page(offsets["retracted_offset"], len(view["retracted"]), view["retracted_more"], VIEW_PAGE)
    pagers["retracted"] = {
        **retracted,
        "previous_url": link(retracted["previous"], "retracted_offset"),
        "next_url": link(retracted["next"], "retracted_offset"),
        # An offset past the end shows no claim: the page says so and links the first page.
        "first_url": link(0, "retracted_offset"),
    }
    # The timeline's window of chapters: earlier and later windows.
    pagers["timeline"] = {
        "first": window["first"],
        "last": window["last"],
        "count": window["chapters"],
        "previous_url": link(window["earlier"], "chapters_from"),
        "next_url": link(window["later"], "chapters_from"),
    }
    return pagers


# --- Writes: turns, discovery start, dossier snapshots --------------------------------


@login_required
@require_POST
def turn_add(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The composer: the author (or an editor) adds a turn through ``services.turn_add``; errors show inline."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    content = request.POST.get("content", "")
    stated = {name: request.POST.get(f"stated_{name}", "").strip() for name in ("key", "value")}
    session = current_session(access.book)
    try:
        if session is None:
            raise Conflict("discovery has not started for this book", code="no_session")
        # What she states herself beside her turn: an observation in her own words (author-stated).
        observations = []
        if stated["value"] or stated["key"]:
            observations.append(
                {"key": stated["key"] or "fact", "value": stated["value"], "provenance": Provenance.AUTHOR_STATED}
            )
        payload = parse_form(TurnIn, {"role": access.role, "content": content, "observations": observations})
        turn = services.turn_add_stating(access=access, session=session, payload=payload)
    except DomainError as exc:
        return _render_scratchpad(request, access, composer_error=exc, draft=content, stated=stated, status=exc.status)
    if request.POST.get("next") == "book":  # answered from the book page, under the current question
        return redirect(f"{reverse('discovery:book', args=[access.book.pk])}#turn-{turn.pk}")
    if request.htmx:
        return _render_scratchpad(request, access)
    return redirect(f"{reverse('discovery:scratchpad', args=[access.book.pk])}#turn-{turn.pk}")


@login_required
@require_POST
def observation_resolve(request: HttpRequest, book_id: uuid.UUID, observation_id: uuid.UUID) -> HttpResponse:
    """The author confirms, corrects or retires an observation from the book page (``services.observation_resolve``)."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    observation = book_observation_get(access.book, observation_id)
    try:
        payload = parse_form(ObservationResolveIn, request.POST)
        services.observation_resolve(access=access, observation=observation, payload=payload)
    except DomainError as exc:
        error = {"id": str(observation.pk), "message": exc.message}
        return _render_book(request, access, observation_error=error, status=exc.status)
    if request.POST.get("next") == "inbox":  # decided among what waits for her
        return redirect(reverse("approvals:inbox") + "#observations-heading")
    return redirect(f"{reverse('discovery:book', args=[access.book.pk])}#observation-{observation.pk}")


@login_required
@require_POST
def turn_confirm(request: HttpRequest, book_id: uuid.UUID, turn_id: uuid.UUID) -> HttpResponse:
    """The author confirms every observation still waiting from one turn (``services.observations_confirm_turn``)."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    turn = book_turn_get(access.book, turn_id)
    try:
        services.observations_confirm_turn(access=access, turn=turn)
    except DomainError as exc:
        return _render_book(request, access, observation_error={"id": "", "message": exc.message}, status=exc.status)
    if request.POST.get("next") == "inbox":
        return redirect(reverse("approvals:inbox") + "#observations-heading")
    return redirect(f"{reverse('discovery:book', args=[access.book.pk])}#turn-{turn.pk}")


@login_required
@require_POST
def discovery_start(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """Start (or resume) the book's discovery through ``services.discovery_start``."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    services.discovery_start(access=access)
    return redirect("discovery:book", book_id=access.book.pk)


@login_required
@require_POST
def dossier_create(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The author takes a new snapshot for a role through ``services.dossier_create``."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    form = {"agent_role": request.POST.get("agent_role", "")}
    if request.POST.get("as_of_chapter", "").strip():
        form["as_of_chapter"] = request.POST["as_of_chapter"].strip()
    try:
        payload = parse_form(DossierIn, form)
        dossier = services.dossier_create(
            access=access, agent_role=payload.agent_role, as_of_chapter=payload.as_of_chapter
        )
    except DomainError as exc:
        return _dossiers_page(request, access, snapshot_error=exc.message, status=exc.status)
    return redirect("discovery:dossier", book_id=access.book.pk, dossier_id=dossier.pk)


# --- Starting: a series, a book, its editors ------------------------------------------


def _form_values(request: HttpRequest, names: tuple[str, ...]) -> dict[str, str]:
    return {name: request.POST.get(name, "") for name in names}


@login_required
@require_http_methods(["GET", "POST"])
def series_new(request: HttpRequest) -> HttpResponse:
    """A new series through ``services.series_create`` (the API's ``POST /series``); then a first book in it."""
    form = _form_values(request, ("title", "premise", "publication_target"))
    error = None
    if request.method == "POST":
        try:
            series = services.series_create(
                principal=principal_for_user(request.user), payload=parse_form(SeriesIn, form)
            )
        except DomainError as exc:
            error = exc
        else:
            messages.success(request, f"Series “{series.title}” created. Now its first book.")
            return redirect(f"{reverse('discovery:book_new')}?series={series.pk}")
    return render(
        request,
        "discovery/series_new.html",
        {"form": form, "error": error},
        status=error.status if error else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def book_new(request: HttpRequest) -> HttpResponse:
    """A new book through ``services.book_create`` (the API's ``POST /books``): title, premise, a genre
    pack from the list, optionally a series of hers and its planned order."""
    form = _form_values(request, ("title", "premise", "genre_pack", "series_id", "planned_order"))
    if request.method == "GET":
        form["series_id"] = request.GET.get("series", "")
    error = None
    if request.method == "POST":
        data = {**form, "series_id": form["series_id"] or None, "planned_order": form["planned_order"] or None}
        try:
            book = services.book_create(principal=principal_for_user(request.user), payload=parse_form(BookIn, data))
        except DomainError as exc:
            error = exc
        else:
            messages.success(request, f"“{book.title}” is yours. Start its discovery when you are ready.")
            return redirect("discovery:book", book_id=book.pk)
    return render(
        request,
        "discovery/book_new.html",
        {
            "form": form,
            "error": error,
            "series": series_of(request.user),
            "genre_packs": GENRE_PACKS,
        },
        status=error.status if error else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def book_edit(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The author changes her book's title, premise or genre through ``services.book_edit`` (the API's
    ``PATCH /books/{id}``). A new premise after G0 passed reopens G0: the first post shows the impact (what the
    premise feeds) and asks her to confirm; the confirmation saves it and takes the loop back to G0."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    services.book_edit_allowed(access)
    book = access.book
    form = {"title": book.title, "premise": book.premise, "genre_pack": book.genre_pack}
    if request.method == "GET":
        return _book_edit_page(request, access, form)
    sent = {name: request.POST[name] for name in form if name in request.POST}  # a field not sent stays as it is
    form.update(sent)
    data = {**sent, "reopen": request.POST.get("reopen") == "yes"}
    try:
        services.book_edit(access=access, payload=parse_form(BookEditIn, data))
    except DomainError as exc:
        if exc.code == "reopens_g0":
            return _book_edit_page(request, access, form, impact=exc.extra.get("impact") or {}, status=200)
        return _book_edit_page(request, access, form, error=exc, status=exc.status)
    messages.success(request, "Your changes to the book are saved.")
    return redirect("discovery:book", book_id=book.pk)


def _book_edit_page(request, access: BookAccess, form: dict, *, impact=None, error=None, status: int = 200):
    return render(
        request,
        "discovery/book_edit.html",
        {
            "book": access.book,
            "role": access.role,
            "form": form,
            "impact": impact,
            "error": error,
            "genre_packs": _genre_choices(form.get("genre_pack", "")),
        },
        status=status,
    )


def _genre_choices(current: str) -> tuple[tuple[str, str], ...]:
    """The genre packs to pick from, with the book's own when it is not one of them (the API takes any text)."""
    known = {value for value, _ in GENRE_PACKS}
    return GENRE_PACKS + (((current, current),) if current and current not in known else ())


def _people_page(request: HttpRequest, access: BookAccess, *, error=None, username: str = "", status: int = 200):
    book = access.book
    return render(
        request,
        "discovery/people.html",
        {
            "book": book,
            "role": access.role,
            "editors": list(book.editors.order_by("username")),
            "error": error,
            "username": username,
        },
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def book_people(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """Who works on the book. POST (the author): invite an editor by username (``services.book_editor_add``)."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    if request.method == "GET":
        return _people_page(request, access)
    username = request.POST.get("username", "")
    try:
        person = services.book_editor_add(access=access, payload=parse_form(EditorIn, {"username": username}))
    except DomainError as exc:
        return _people_page(request, access, error=exc, username=username, status=exc.status)
    messages.success(request, f"{person.get_username()} now edits “{access.book.title}”.")
    return redirect("discovery:people", book_id=access.book.pk)


@login_required
@require_POST
def book_editor_remove(request: HttpRequest, book_id: uuid.UUID, user_id: int) -> HttpResponse:
    """The author removes an editor (``services.book_editor_remove``); the page asks to confirm first."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    try:
        services.book_editor_remove(access=access, user_id=user_id)
    except DomainError as exc:
        return _people_page(request, access, error=exc, status=exc.status)
    messages.success(request, "The editor was removed; they no longer see this book.")
    return redirect("discovery:people", book_id=access.book.pk)


# --- The Story Charter: write a version, compare two ------------------------------------

# The charter's fields in order: (name, label, kind) where kind is "text", "lines" (one item a line)
# or "pairs" (one "aspect: description" a line, for the protagonist).
CHARTER_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("main_thrust", "Main thrust", "text"),
    ("reader_promise", "Reader promise", "lines"),
    ("protagonist", "Protagonist", "pairs"),
    ("central_conflict", "Central conflict", "text"),
    ("genre_contract", "Genre contract", "text"),
    ("thematic_questions", "Thematic questions", "lines"),
    ("narrative_form", "Narrative form", "text"),
    ("ending_horizon", "Ending horizon", "text"),
    ("constraints", "Constraints", "lines"),
    ("productive_unknowns", "Productive unknowns", "lines"),
    ("rejected_directions", "Rejected directions", "lines"),
)
REQUIRED_CHARTER_FIELDS = {"main_thrust", "reader_promise", "protagonist", "central_conflict"}


def _charter_as_form(content: dict) -> dict[str, str]:
    """A charter's content as the form's text fields (lists one item a line, the protagonist as pairs)."""
    form = {}
    for name, _label, kind in CHARTER_FIELDS:
        value = content.get(name)
        if kind == "lines":
            form[name] = "\n".join(str(v) for v in as_list(value))
        elif kind == "pairs" and isinstance(value, dict):
            form[name] = "\n".join(f"{k}: {v}" for k, v in value.items())
        else:
            form[name] = "" if value is None else str(value)
    return form


def _charter_from_form(form: dict[str, str]) -> dict:
    """The form's text as a charter payload for ``CharterIn`` (which validates it, as the API's does)."""
    data: dict = {}
    for name, _label, kind in CHARTER_FIELDS:
        text = form.get(name, "")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if kind == "lines":
            data[name] = lines
        elif kind == "pairs":
            pairs = {}
            for line in lines:
                key, sep, value = line.partition(":")
                if sep and key.strip():
                    pairs[key.strip()] = value.strip()
                else:
                    pairs.setdefault("description", "")
                    pairs["description"] = (pairs["description"] + " " + line).strip()
            data[name] = pairs
        else:
            data[name] = text.strip() or (None if name not in REQUIRED_CHARTER_FIELDS else "")
    return data


def _charter_page(request, access: BookAccess, *, form: dict, base, error=None, status: int = 200):
    book = access.book
    return render(
        request,
        "discovery/charter_new.html",
        {
            "book": book,
            "role": access.role,
            "fields": [(name, label, kind, form.get(name, "")) for name, label, kind in CHARTER_FIELDS],
            "required": REQUIRED_CHARTER_FIELDS,
            "base": base,
            "error": error,
        },
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def charter_new(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The author writes a Story Charter version of her own, starting from the current one; it is
    proposed through ``services.charter_propose`` (as from the API) and binds only once she approves it."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    base = charter_to_start_from(access.book)
    if request.method == "GET":
        return _charter_page(request, access, form=_charter_as_form(base.content if base else {}), base=base)
    form = {name: request.POST.get(name, "") for name, _label, _kind in CHARTER_FIELDS}
    try:
        access.require(Cap.CHARTER_PROPOSE)
        charter = services.charter_propose(access=access, payload=parse_form(CharterIn, _charter_from_form(form)))
    except DomainError as exc:
        return _charter_page(request, access, form=form, base=base, error=exc, status=exc.status)
    messages.success(request, f"Version {charter.version} is proposed. It binds the book once you approve it.")
    return redirect(f"{reverse('discovery:book', args=[access.book.pk])}#charter-{charter.pk}")


@login_required
def charter_compare(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """Any two Story Charter versions side by side, field by field (``?a=<version>&b=<version>``)."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    charters = charter_versions(access.book)
    by_version = {str(c.version): c for c in charters}
    left = by_version.get(request.GET.get("a", "")) or (charters[1] if len(charters) > 1 else None)
    right = by_version.get(request.GET.get("b", "")) or (charters[0] if charters else None)
    rows = []
    if left and right:
        for name, label, _kind in CHARTER_FIELDS:
            a, b = left.content.get(name), right.content.get(name)
            rows.append({"label": label, "a": a, "b": b, "changed": a != b})
    return render(
        request,
        "discovery/charter_compare.html",
        {
            "book": access.book,
            "role": access.role,
            "charters": charters,
            "left": left,
            "right": right,
            "rows": rows,
            "changed": sum(1 for row in rows if row["changed"]),
        },
    )


RECORD_MODE_LABELS = {
    "postgres": "PostgreSQL full-text search, ranked by ts_rank",
    "like": "text match, ranked by how many of your words each record holds (then newest first)",
}


# --- Searching a book's own record ------------------------------------------------


@login_required
def book_search(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """Search the book's turns, scratchpad, claims and charters (what the role may read)."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    q = request.GET.get("q", "")[:MAX_QUERY_CHARS]
    error, status, found = None, 200, None
    try:
        params = parse_form(RecordSearchParams, {"q": q})
        found = book_record_search(access, params.q, limit=params.limit)
    except Invalid as exc:
        error, status = exc, 422
    hits = [{**hit, "href": _record_href(access.book, hit)} for hit in (found.results if found else [])]
    context = {
        "book": access.book,
        "role": access.role,
        "q": q,
        "hits": hits,
        "withheld": found.withheld if found else [],
        "mode_label": RECORD_MODE_LABELS.get(found.mode, found.mode) if found else "",
        "searched": bool(q.strip()) and error is None,
        "error": error,
    }
    template = partial_or_page(request, "discovery/book_search.html", "record-results")
    return render(request, template, context, status=status)


def _record_href(book, hit: dict) -> str:
    book_page = reverse("discovery:book", args=[book.pk])
    scratchpad = reverse("discovery:scratchpad", args=[book.pk])
    return {
        "turn": f"{scratchpad}#turn-{hit['id']}",
        "entry": f"{scratchpad}#entry-{hit['id']}",
        "claim": f"{book_page}#claim-{hit['id']}",
        "charter": f"{book_page}#charter-{hit['id']}",
    }[hit["kind"]]
