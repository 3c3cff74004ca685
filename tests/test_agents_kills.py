"""A worker killed at each point of a run's life leaves no run ``queued`` or ``running`` after the reap
that ``make run`` and ``make worker`` run on start; the run is charged for the work it did; the runs panel
stops polling.

Each test kills a real ``db_worker`` subprocess (named by host and pid, as ``make worker`` names it) at a
named point: ``NOVELGRAPH_TEST_KILL_AT`` makes it ``os._exit`` there (``services.kill_point``, test-only).
Runs on whichever database the suite uses; CI runs it on both."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from discovery.access import book_access
from discovery.agents.models import AgentRun
from discovery.agents.schemas import AgentRunIn
from discovery.agents.services import KILL_AT, _claim, _settle, agent_run_start, agent_runs_reap
from discovery.agents.workers import this_host
from discovery.loop.models import LoopMeta
from discovery.models import ThrustCandidate
from discovery.services import discovery_start, dossier_store
from novelgraph.core.auth import principal_for_user

from .agents_support import start_worker, work_off_queue

pytestmark = pytest.mark.django_db(transaction=True)
POLLING = 'hx-trigger="every 2s"'


def _queue_a_run(author, book) -> AgentRun:
    access = book_access(principal_for_user(author), book)
    discovery_start(access=access)
    return agent_run_start(access=access, payload=AgentRunIn(task="thrusts"))


def _panel_polls(author, book) -> bool:
    client = Client()
    client.force_login(author)
    response = client.get(reverse("agents:runs", args=[book.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 200
    return POLLING in response.content.decode()


def _killed_at(point: str) -> None:
    worker = start_worker(**{KILL_AT: point})
    output = worker.communicate(timeout=300)[0]
    assert worker.returncode == 137, output


def _reap() -> None:
    """What ``make run`` and ``make worker`` run on start."""
    call_command("agent_runs_reap", stdout=StringIO())


def _nothing_stuck() -> None:
    assert not AgentRun.objects.filter(status__in=("queued", "running")).exists()
    assert not DBTaskResult.objects.filter(status="RUNNING").exists()


def test_killed_once_it_claimed_the_task_the_run_is_queued_again_and_runs(author, book):
    run = _queue_a_run(author, book)
    assert _panel_polls(author, book)

    _killed_at("task-claimed")
    run.refresh_from_db()
    task = DBTaskResult.objects.get(pk=run.task_result_id)
    assert run.status == "queued" and task.status == "RUNNING" and task.worker_ids[0].startswith(f"{this_host()}:")
    assert not _panel_polls(author, book)  # nothing can move it until the reap

    _reap()
    run.refresh_from_db()
    assert run.status == "queued" and not DBTaskResult.objects.filter(pk=task.pk).exists()
    assert DBTaskResult.objects.get(pk=run.task_result_id).status == "READY"
    assert _panel_polls(author, book)  # a worker will take it
    work_off_queue()  # the worker that `make worker` starts after the reap

    run.refresh_from_db()
    assert run.status == "done" and run.cost == 1
    assert LoopMeta.objects.get(book=book).cost_spent == 1
    _nothing_stuck()
    assert not _panel_polls(author, book)


@pytest.mark.parametrize("point", ["run-claimed", "dossier-stored", "output-written"])
def test_killed_during_the_run_the_run_fails_charged_for_the_work_done(author, book, point):
    charged = 1  # the fixed cost of a run (the offline provider spends no tokens)
    run = _queue_a_run(author, book)

    _killed_at(point)
    run.refresh_from_db()
    assert run.status == "running" and run.worker.startswith(f"{this_host()}:")
    assert not _panel_polls(author, book)

    _reap()
    run.refresh_from_db()
    assert run.status == "failed" and "its worker's process is gone" in run.reason
    assert run.cost == charged and LoopMeta.objects.get(book=book).cost_spent == charged
    assert (run.dossier_id is not None) == (point != "run-claimed")
    assert not ThrustCandidate.objects.exists() and not run.outputs.exists()  # the writes rolled back
    _nothing_stuck()
    assert not _panel_polls(author, book)
    _reap()
    assert LoopMeta.objects.get(book=book).cost_spent == charged  # charged once


def test_killed_after_the_run_settled_its_task_row_is_pruned(author, book):
    run = _queue_a_run(author, book)

    _killed_at("run-settled")
    run.refresh_from_db()
    assert run.status == "done" and DBTaskResult.objects.get(pk=run.task_result_id).status == "RUNNING"

    _reap()
    run.refresh_from_db()
    assert run.status == "done" and run.cost == 1 and ThrustCandidate.objects.count() == 3
    assert not DBTaskResult.objects.filter(pk=run.task_result_id).exists()
    _nothing_stuck()


def test_a_run_that_spent_tokens_with_a_model_is_charged_for_them(author, book):
    """Tokens a model reported are on the run as soon as the reply comes; a worker that stops after
    that leaves the run charged for them (without spawning a worker: a process that has ended)."""
    run = _queue_a_run(author, book)
    _claim(run.pk, f"{this_host()}:{_pid_of_ended_process()}:x")
    dossier = dossier_store(book=book, agent_role="terra", requested_by=author, as_of_chapter=None)
    AgentRun.objects.filter(pk=run.pk).update(dossier=dossier, tokens=2000)

    assert agent_runs_reap(book=book) == 1

    run.refresh_from_db()
    assert run.status == "failed" and run.cost == pytest.approx(1.2)
    assert LoopMeta.objects.get(book=book).cost_spent == pytest.approx(1.2)


def _pid_of_ended_process() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_run_whose_worker_still_runs_is_never_taken_from_it(author, book):
    run = _queue_a_run(author, book)
    _claim(run.pk, f"{this_host()}:{os.getpid()}:x")  # this process: alive, and started before the claim
    claimed = AgentRun.objects.get(pk=run.pk).started_at

    assert agent_runs_reap(book=book, now=claimed + timedelta(hours=1)) == 0
    assert AgentRun.objects.get(pk=run.pk).status == "running"


def test_a_process_id_used_again_by_a_later_process_is_a_stopped_worker(author, book):
    run = _queue_a_run(author, book)
    _claim(run.pk, f"{this_host()}:{os.getpid()}:x")
    # Claimed before this process started: the worker that claimed it had the same id, and is gone.
    AgentRun.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(days=400))

    assert agent_runs_reap(book=book) == 1
    assert "its worker's process is gone" in AgentRun.objects.get(pk=run.pk).reason


def test_a_worker_that_finishes_after_the_reap_settled_its_run_charges_nothing_twice(author, book):
    run = _queue_a_run(author, book)
    claimed = _claim(run.pk, "another-host:1:x")  # a worker that cannot be asked: time decides
    AgentRun.objects.filter(pk=run.pk).update(tokens=1000)
    assert agent_runs_reap(book=book, now=timezone.now() + timedelta(minutes=5)) == 1
    spent = LoopMeta.objects.get(book=book).cost_spent

    with transaction.atomic():
        assert not _settle(claimed, status="done", began=time.monotonic(), tokens=1000, notes=[])

    run.refresh_from_db()
    assert run.status == "failed" and run.cost == pytest.approx(1.1)
    assert LoopMeta.objects.get(book=book).cost_spent == spent == pytest.approx(1.1)
