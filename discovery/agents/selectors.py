"""Reads of agent runs, shared by the API and the pages (a fixed number of queries each)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from discovery.access import BookAccess, Cap
from discovery.selectors import MappedRows
from novelgraph.core.errors import NotFound

from .models import AgentRun, AgentRunOutput, AgentTask, OutputType, RunStatus
from .workers import stuck_runs


def agent_run_get(run_id: Any) -> AgentRun:
    """A run with its book, so the edge resolves access from ``run.book``."""
    try:
        return AgentRun.objects.select_related("book__series", "book__owner").get(pk=run_id)
    except (AgentRun.DoesNotExist, ValidationError, ValueError, TypeError):
        raise NotFound("run not found") from None


def runs_for(access: BookAccess) -> QuerySet[AgentRun]:
    """The book's runs, newest first, with what each wrote. An agent sees only its own role's runs
    (what another role looked up is not its to read), as with dossiers."""
    access.require(Cap.DISCOVERY_READ)
    runs = (
        AgentRun.objects.filter(book=access.book)
        .prefetch_related(Prefetch("outputs", queryset=AgentRunOutput.objects.order_by("position")))
        .order_by("-created_at")
    )
    if access.is_agent:
        runs = runs.filter(role=access.role)
    return runs


def run_readable(access: BookAccess, run: AgentRun) -> AgentRun:
    access.require(Cap.DISCOVERY_READ)
    if access.is_agent and run.role != access.role:
        raise NotFound("run not found")
    return run


def run_outputs(run: AgentRun) -> MappedRows:
    """What a run wrote, in order, as ``written`` shows it (paged in SQL when sliced)."""
    rows = AgentRunOutput.objects.filter(run=run).order_by("position").values("type", "object_id")
    return MappedRows(rows, lambda row: {"type": row["type"], "id": row["object_id"]})


def produced_by(kind: str, object_ids) -> dict[str, AgentRun]:
    """Which run wrote each of these objects (one query): ``{object_id: run}``."""
    ids = [str(pk) for pk in object_ids]
    if not ids:
        return {}
    rows = AgentRunOutput.objects.filter(type=kind, object_id__in=ids).select_related("run")
    return {row.object_id: row.run for row in rows}


def ran_for(book) -> bool:
    """Whether any run has worked on ``book``."""
    return AgentRun.objects.filter(book=book).exists()


def runs_moving(runs) -> tuple[bool, set]:
    """Whether any of ``runs`` can still move (the panel polls only then), and the pks of the active runs
    that cannot: their worker stopped, and the next reap settles them."""
    stuck = stuck_runs([run for run in runs if run.active], timezone.now())
    return any(run.active and run.pk not in stuck for run in runs), stuck


def research_collections(book, *, last: int = 5) -> list[dict]:
    """Luna's latest page collections for the book, newest first, for the research page: the address asked for,
    whether the run is still going, the research item it proposed, or why the page was not collected."""
    runs = (
        AgentRun.objects.filter(book=book, task=AgentTask.RESEARCH_URL)
        .prefetch_related(Prefetch("outputs", queryset=AgentRunOutput.objects.filter(type=OutputType.RESEARCH)))
        .order_by("-created_at")[:last]
    )
    rows = []
    for run in runs:
        proposed = next((output.object_id for output in run.outputs.all()), None)
        reason = run.reason
        if reason.startswith("refused"):  # "refused (url): <why>": the author reads the why
            reason = reason.split(": ", 1)[-1]
        rows.append(
            {
                "url": (run.input or {}).get("url", ""),
                "moving": run.active,
                "failed": run.status == RunStatus.FAILED,
                "reason": reason,
                "research_id": proposed,
                "created_at": run.created_at,
            }
        )
    return rows


def chapter_check_latest(access: BookAccess, number: int) -> AgentRun | None:
    """The latest continuity check queued for chapter ``number`` (what the chapter page shows), or None."""
    return (
        runs_for(access)
        .filter(task=AgentTask.CONTINUITY, input__chapter=number)
        .order_by("-created_at")
        .first()
    )
