"""Which worker holds a run, and when a run or its task can no longer move.

Each ``db_worker`` process names itself ``<host>:<pid>:<random>`` (``management/commands/db_worker.py``);
the task row keeps that id when the worker claims it, and the run keeps it when ``agent_run_execute``
claims the run. A worker of this host whose process is gone is known dead at once, so the reap that
``make run`` and ``make worker`` run on start finds the runs of the worker that stopped. A worker of
another host (or one started with a ``--worker-id`` of its own) cannot be asked: its runs are taken for
lost only after their provider's time is up (``stale_after``).

Used by the reap (``services.agent_runs_reap``) and by the runs panel, which stops polling when no run can
move (``selectors.runs_moving``). Reads only.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from django.utils.crypto import get_random_string
from django_tasks_db.models import DBTaskResult

from .models import Provider, RunStatus
from .providers import options_for

# The offline provider answers in milliseconds: a run of it still running after this long has lost its worker.
OFFLINE_STALE_SECONDS = 30
# A worker claims a run a few milliseconds after it claims the run's task: a task running this long
# while its run is still queued was claimed by a worker that stopped in between.
CLAIM_GRACE = timedelta(seconds=30)
HOST_CHARS = 40


def this_host() -> str:
    return socket.gethostname()[:HOST_CHARS].replace(":", "-") or "localhost"


def new_worker_id() -> str:
    """The id a ``db_worker`` process gives itself: its host, its process id and a random tail (64 chars at most)."""
    return f"{this_host()}:{os.getpid()}:{get_random_string(12)}"


def worker_state(worker_id: str | None, since: datetime | None) -> str:
    """``gone``, ``alive`` or ``unknown``: whether the worker named ``worker_id``, which claimed its task or run
    at ``since``, still runs. Only a worker of this host can be asked; a process that started after ``since``
    under the same id is another one (the id was reused, as after a container's restart), so the worker is gone."""
    host, _, rest = (worker_id or "").partition(":")
    pid = rest.partition(":")[0]
    if host != this_host() or not pid.isdigit():
        return "unknown"
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return "gone"
    except (PermissionError, OverflowError, ValueError):
        return "unknown"
    started = _process_started(int(pid))
    return "gone" if since is not None and started is not None and started > since.timestamp() + 2 else "alive"


def _process_started(pid: int) -> float | None:
    """When process ``pid`` started (Linux: /proc), as a timestamp; None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        with open("/proc/stat") as system:
            booted = next(int(line.split()[1]) for line in system if line.startswith("btime "))
        return booted + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def stale_after(provider: str, role: str | None = None) -> timedelta:
    """How long a run of ``provider`` may stay ``running`` before it is taken for lost when its worker
    cannot be asked. Offline: seconds. A model: every call with all its retries at the configured
    timeout, and a minute for the dossier and the writes."""
    if provider == Provider.OFFLINE:
        return timedelta(seconds=OFFLINE_STALE_SECONDS)
    options = options_for(role)  # the role's own model settings, else the global ones
    return timedelta(seconds=options["TIMEOUT"] * (options["MAX_RETRIES"] + 1) + 60)


def run_lost(run, now: datetime) -> str | None:
    """Why a ``running`` run can no longer finish (its worker's process is gone, or its time is up with a worker
    that cannot be asked), or None. A run whose worker still runs is never taken from it."""
    state = worker_state(run.worker, run.started_at)
    if state == "gone":
        return "its worker's process is gone"
    if state == "alive":
        return None
    limit = stale_after(run.provider, run.role)
    if run.started_at is not None and run.started_at < now - limit:
        return f"still running after {int(limit.total_seconds())} s"
    return None


def task_worker(task) -> str:
    return task.worker_ids[-1] if task is not None and task.worker_ids else ""


def task_stuck(task, now: datetime) -> bool:
    """A task row marked RUNNING whose worker stopped: no worker takes a RUNNING row again."""
    if task is None or task.status != "RUNNING":
        return False
    state = worker_state(task_worker(task), task.started_at)
    if state != "unknown":
        return state == "gone"
    return task.started_at is not None and task.started_at < now - CLAIM_GRACE


def queued_stuck(task, now: datetime) -> bool:
    """A queued run that no worker will run: its task is gone, ended without running it, or is held by a
    worker that stopped before claiming the run."""
    if task is None or task.status in ("SUCCESSFUL", "FAILED"):
        return True
    return task_stuck(task, now)


def tasks_of(runs) -> dict[str, DBTaskResult]:
    """The task rows of ``runs``, by id (one query)."""
    ids = [run.task_result_id for run in runs if run.task_result_id]
    return {str(task.pk): task for task in DBTaskResult.objects.filter(pk__in=ids)} if ids else {}


def stuck_runs(runs, now: datetime) -> set:
    """The pks of the active ``runs`` that can no longer move until the reap settles them (one query)."""
    queued = [run for run in runs if run.status == RunStatus.QUEUED]
    tasks = tasks_of(queued)
    stuck = {run.pk for run in queued if queued_stuck(tasks.get(run.task_result_id), now)}
    return stuck | {run.pk for run in runs if run.status == RunStatus.RUNNING and run_lost(run, now) is not None}
