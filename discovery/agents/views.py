"""The agents in the browser: buttons that queue a run where the author wants one, the runs'
progress in place (HTMX polling while a run is queued or running), and the runs page.

Writes go through ``services.agent_run_start`` like the API; a refused start shows inline.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import trigger_client_event

from discovery.access import BookAccess, Cap, page_access
from discovery.manuscript_pages import chapter_page_render
from discovery.selectors import current_session
from discovery.services import book_agents_act_set
from library.views import render_research
from novelgraph.core.errors import DomainError
from novelgraph.core.events import AGENTS_FINISHED
from novelgraph.core.schemas import parse_form

from .models import AgentRun, AgentTask
from .schemas import AgentRunIn, ResearchCollectIn
from .selectors import chapter_check_latest, research_collections, runs_for, runs_moving
from .services import acts_on_its_own, agent_run_start, continuity_check_queue, research_collect_queue

PANEL_RUNS = 6
# What each role does, for the empty states (no agent has run on the book yet).
WHAT_THEY_DO = [
    (
        "sol",
        "chooses the next consequential question and cites what prompted it, hands work to Terra and Luna, "
        "asks you to decide proposals that are ready and raises the current gate's card",
    ),
    (
        "luna",
        "looks for guidance in the literary library, citing the passages she draws on, and names "
        "contradictions between what has been said and approved canon",
    ),
    (
        "terra",
        "drafts thrust candidates (core, stretch, wild) and a Story Charter from your confirmed "
        "observations, listing what is still unknown",
    ),
]


def agents_panel(
    request: HttpRequest, access: BookAccess, *, error: DomainError | None = None, limit: int = PANEL_RUNS
):
    """The panel's context: the latest runs and whether the visitor may start one."""
    book = access.book
    runs = list(runs_for(access).select_related("parent")[:limit])
    active, stuck = runs_moving(runs)
    return {
        "book": book,
        "runs": runs,
        # Polled every 2 s while a run can still move; a run whose worker stopped waits for the reap.
        "active": active,
        "stuck": stuck,
        "watch": ",".join(str(run.pk) for run in runs if run.active),
        "can_start": access.holds(Cap.DISCOVERY_WRITE) and not access.is_agent,
        "may_set_acting": access.is_author,
        "acting": acts_on_its_own(book),
        "act_url": reverse("agents:act", args=[book.pk]),
        "started": current_session(book) is not None,
        "start_url": reverse("agents:start", args=[book.pk]),
        "runs_url": reverse("agents:runs", args=[book.pk]),
        "next": request.get_full_path() if request.method == "GET" else request.POST.get("next", ""),
        "what_they_do": WHAT_THEY_DO,
        "error": error,
        "limit": limit,
    }


def _finished(watch: str, runs: list[AgentRun]) -> bool:
    """Whether a run the page was watching has finished since (its results are now in the scratchpad)."""
    watched = {part for part in watch.split(",") if part}
    return any(str(run.pk) in watched and not run.active for run in runs) or bool(
        watched - {str(run.pk) for run in runs}
    )


def _runs_fragment(request: HttpRequest, access: BookAccess, *, error=None, status: int = 200) -> HttpResponse:
    asked = request.GET.get("limit") or request.POST.get("limit") or ""
    limit = int(asked) if asked.isdigit() else PANEL_RUNS
    context = agents_panel(request, access, error=error, limit=max(1, min(limit, 200)))
    response = render(request, "agents/_panel.html#runs", {"agents": context}, status=status)
    if _finished(request.GET.get("watch", ""), context["runs"]):
        trigger_client_event(response, AGENTS_FINISHED)
    return response


@login_required
def runs(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """Every run on the book, newest first (HTMX: the runs list alone, polled while one is active)."""
    access = page_access(request, book_id, Cap.DISCOVERY_READ)
    if request.htmx:
        return _runs_fragment(request, access)

    return render(
        request,
        "agents/runs.html",
        {
            "book": access.book,
            "role": access.role,
            "agents": agents_panel(request, access, limit=200),
        },
    )


def _safe_next(value: str, book_id) -> str:
    return (
        value
        if value.startswith(f"/books/{book_id}/") and "//" not in value
        else reverse("agents:runs", args=[book_id])
    )


@login_required
@require_POST
def start(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """A button: queue a role's task through ``services.agent_run_start``; a refusal shows inline."""
    access = page_access(request, book_id, Cap.DISCOVERY_READ)
    data = {"task": request.POST.get("task", "")}
    if request.POST.get("task") == AgentTask.GUIDANCE:
        data["topic"] = request.POST.get("topic", "")
    if request.POST.get("as_of_chapter", "").strip():
        data["as_of_chapter"] = request.POST["as_of_chapter"].strip()
    try:
        agent_run_start(access=access, payload=parse_form(AgentRunIn, data))
    except DomainError as exc:
        if request.htmx:
            return _runs_fragment(request, access, error=exc, status=exc.status)

        return render(
            request,
            "agents/runs.html",
            {
                "book": access.book,
                "role": access.role,
                "agents": agents_panel(request, access, error=exc, limit=200),
            },
            status=exc.status,
        )
    if request.htmx:
        return _runs_fragment(request, access)
    return redirect(_safe_next(request.POST.get("next", ""), access.book.pk))


@login_required
@require_POST
def act_on_their_own(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The author turns Sol's own next steps on or off for her book (``services.book_agents_act_set``)."""
    access = page_access(request, book_id, Cap.DISCOVERY_READ)
    try:
        book_agents_act_set(access=access, on=request.POST.get("on") == "1")
    except DomainError as exc:
        return render(
            request,
            "agents/runs.html",
            {"book": access.book, "role": access.role, "agents": agents_panel(request, access, error=exc, limit=200)},
            status=exc.status,
        )
    return redirect(_safe_next(request.POST.get("next", ""), access.book.pk))


# --- "Ask Luna to collect a page", on the research page ------------------------------------------------------


def research_collect_part(access: BookAccess, state: dict) -> dict:
    """The research page's part for asking Luna to collect a page (registered into ``library.views``): for the
    author (who may queue Luna's work), with Luna's latest collections and how each ended."""
    if access.is_agent or not access.holds(Cap.DISCOVERY_WRITE):
        return {}
    return {"luna_collect": {"runs": research_collections(access.book), "form": state.get("collect") or {}}}


# --- The continuity check from the chapter page -------------------------------------------------------------


def chapter_check_panel(access: BookAccess, number: int, *, error: DomainError | None = None) -> dict:
    """The chapter page's check box: the latest check of the chapter, whether it can still move (the box polls
    only then), and whether the visitor may run one (as the API's ``continuity_check_queue`` allows)."""
    run = chapter_check_latest(access, number)
    active, stuck = runs_moving([run] if run is not None else [])
    return {
        "run": run,
        "active": active,
        "stuck": run is not None and run.pk in stuck,
        "found": run.outputs.count() if run is not None and run.status == "done" else 0,
        "can_check": access.holds(Cap.DISCOVERY_WRITE) and not access.is_agent,
        "check_url": reverse("agents:chapter-check", args=[access.book.pk, number]),
        "status_url": reverse("agents:chapter-check-status", args=[access.book.pk, number]),
        "error": error,
    }


def _check_fragment(request: HttpRequest, access: BookAccess, number: int, *, watch="", error=None, status=200):
    """The check's status alone; when the run the page watches (``watch``) has finished, the page's text and
    findings refresh in place (``AGENTS_FINISHED``)."""
    check = chapter_check_panel(access, number, error=error)
    response = render(request, "agents/_chapter_check.html#status", {"check": check}, status=status)
    watched = watch or request.GET.get("watch", "")
    if watched and check["run"] is not None and (str(check["run"].pk) != watched or not check["run"].active):
        trigger_client_event(response, AGENTS_FINISHED)
    return response


@login_required
@require_POST
def research_collect(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """Ask Luna to collect a page (``services.research_collect_queue``); a refused request (no address, no
    discovery yet) shows inline on the research page, the form keeping what was typed. A page the guards refuse
    is Luna's run's to find: it ends failed, and the research page says why."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    form = {key: request.POST.get(key, "") for key in ("url", "claim", "citation")}
    try:
        research_collect_queue(access=access, payload=parse_form(ResearchCollectIn, form))
    except DomainError as exc:
        failed = {**form, "field": exc.field or "url", "message": exc.message}
        return render_research(request, access, part_state={"collect": failed}, status=exc.status)
    if request.htmx:
        return render_research(request, access)  # the new collection is listed, waiting for Luna
    messages.success(request, "Luna is collecting the page; she proposes it below for your admission.")
    return redirect(f"{reverse('library:research', args=[access.book.pk])}#luna-collect")


@login_required
@require_POST
def chapter_check(request: HttpRequest, book_id: uuid.UUID, number: int) -> HttpResponse:
    """The "Run the check" button: queue Luna's continuity check of the chapter's latest revision through
    ``services.continuity_check_queue`` (as ``POST .../chapters/{number}/check``); a refusal shows inline."""
    access = page_access(request, book_id, Cap.DISCOVERY_READ)
    try:
        run = continuity_check_queue(access=access, number=number)
    except DomainError as exc:
        if exc.status == 404:
            raise
        if request.htmx:
            return _check_fragment(request, access, number, error=exc, status=exc.status)
        return chapter_page_render(request, access, number, error={"message": exc.message}, status=exc.status)
    if request.htmx:  # a worker may have finished it already: the page then refreshes at once
        return _check_fragment(request, access, number, watch=str(run.pk))
    return redirect(reverse("discovery:chapter", args=[access.book.pk, number]))


@login_required
def chapter_check_status(request: HttpRequest, book_id: uuid.UUID, number: int) -> HttpResponse:
    """The check box's status alone (HTMX polls it while the check is queued or running)."""
    access = page_access(request, book_id, Cap.DISCOVERY_READ)
    return _check_fragment(request, access, number)
