"""Agent-run routes: queue a role's task for a book, and read the runs. Thin: resolve access, validate,
call a service."""

import uuid

from django.http import HttpRequest
from ninja import Router
from ninja.pagination import paginate
from ninja.responses import Status

from discovery.access import book_access
from novelgraph.core.auth import principal_of
from novelgraph.core.schemas import ERRORS

from .schemas import AgentRunIn, AgentRunOut, ResearchCollectIn, RunOutputOut
from .selectors import agent_run_get, run_outputs, run_readable, runs_for
from .services import agent_run_start, continuity_check_queue, research_collect_queue

router = Router(tags=["agents"])


@router.post("/books/{book_id}/agent-runs", response={202: AgentRunOut, **ERRORS})
def runs_start(request: HttpRequest, book_id: uuid.UUID, payload: AgentRunIn):
    """Queue one role's task (next-question: Sol; guidance, contradictions: Luna; thrusts, charter:
    Terra). The author or Sol (discovery:write). 202: the run is queued; a worker runs it."""
    run = agent_run_start(access=book_access(principal_of(request), book_id), payload=payload)
    return Status(202, run)


@router.post("/books/{book_id}/chapters/{number}/check", response={202: AgentRunOut, **ERRORS})
def chapter_check(request: HttpRequest, book_id: uuid.UUID, number: int):
    """Queue Luna's continuity check of the chapter's latest revision (the author, or Sol). 202: the run is
    queued; its findings are listed at GET /books/{book_id}/continuity?chapter={number}."""
    run = continuity_check_queue(access=book_access(principal_of(request), book_id), number=number)
    return Status(202, run)


@router.post("/books/{book_id}/research/collect", response={202: AgentRunOut, **ERRORS})
def research_collect(request: HttpRequest, book_id: uuid.UUID, payload: ResearchCollectIn):
    """Ask Luna to collect a web page as research (the author, or Sol). 202: the run is queued; it fetches the page
    through the research guards and proposes it (the run's ``written``), or fails with the reason it was refused."""
    run = research_collect_queue(access=book_access(principal_of(request), book_id), payload=payload)
    return Status(202, run)


@router.get("/books/{book_id}/agent-runs", response={200: list[AgentRunOut], **ERRORS})
@paginate
def runs_list(request: HttpRequest, book_id: uuid.UUID):
    """The book's runs, newest first: status, provider and model, the dossier, what each wrote."""
    return runs_for(book_access(principal_of(request), book_id))


@router.get("/agent-runs/{run_id}", response={200: AgentRunOut, **ERRORS})
def runs_get(request: HttpRequest, run_id: uuid.UUID):
    run = agent_run_get(run_id)
    return run_readable(book_access(principal_of(request), run.book, missing="run"), run)


@router.get("/agent-runs/{run_id}/written", response={200: list[RunOutputOut], **ERRORS})
@paginate
def runs_written(request: HttpRequest, run_id: uuid.UUID):
    """Everything the run wrote, in order, paged (a run's ``written`` holds the first page)."""
    run = agent_run_get(run_id)
    run = run_readable(book_access(principal_of(request), run.book, missing="run"), run)
    return run_outputs(run)
