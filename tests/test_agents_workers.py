"""Several workers share one database: two ``db_worker`` processes race for 50 queued runs, and each
run runs exactly once (the backend claims a task with SELECT ... FOR UPDATE SKIP LOCKED on
PostgreSQL, an exclusive transaction on SQLite; the run moves from queued to running under its row
lock). Runs on whichever database the suite uses; CI runs it on both."""

from __future__ import annotations

from collections import Counter

import pytest
from django_tasks_db.models import DBTaskResult

from discovery.access import book_access
from discovery.agents.models import AgentRun
from discovery.agents.schemas import AgentRunIn
from discovery.agents.services import agent_run_start
from discovery.models import StoryCharter
from discovery.services import discovery_start
from novelgraph.core.auth import principal_for_user

from .agents_support import start_worker

pytestmark = pytest.mark.django_db(transaction=True)
RUNS = 50


def test_two_workers_racing_for_50_queued_runs_run_each_exactly_once(author, book):
    access = book_access(principal_for_user(author), book)
    discovery_start(access=access)
    runs = [agent_run_start(access=access, payload=AgentRunIn(task="charter")) for _ in range(RUNS)]

    workers = {worker_id: start_worker(worker_id) for worker_id in ("worker-a", "worker-b")}
    outputs = {worker_id: process.communicate(timeout=900)[0] for worker_id, process in workers.items()}

    assert all(process.returncode == 0 for process in workers.values()), outputs
    tasks = list(DBTaskResult.objects.filter(pk__in=[run.task_result_id for run in runs]))
    assert len(tasks) == RUNS
    assert all(task.status == "SUCCESSFUL" and len(task.worker_ids) == 1 for task in tasks)
    failed = list(AgentRun.objects.filter(status="failed").values_list("reason", flat=True))
    assert set(AgentRun.objects.values_list("status", flat=True)) == {"done"}, failed[:3]
    # Each run proposed its Story Charter version once: nothing was run twice. (Not thrusts: a book holds at most
    # a page of open thrust candidates, so that the author's G1.5 choice lists them all.)
    assert StoryCharter.objects.filter(book=book).count() == RUNS
    for run in AgentRun.objects.prefetch_related("outputs"):
        assert [o.type for o in run.outputs.all()].count("charter") == 1
    share = Counter(task.worker_ids[0] for task in tasks)
    assert set(share) <= set(workers) and sum(share.values()) == RUNS
    print(f"runs per worker: {dict(share)}")
