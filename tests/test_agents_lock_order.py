"""One book, one lock order (``novelgraph.core.db.lock_row``): queueing a run while Sol's run holds the
loop never deadlocks, and a deadlock that still happens is retried in the request, never a 500.

PostgreSQL only (on SQLite every write transaction holds the database's write lock, so writers queue and
never deadlock). The probe's deadlock: Sol's run held the session row (its question) and then wanted the
loop (``lock_meta``, which also locked the book row), while a request queueing a run held a key-share lock
on the book (a row it inserted refers to it) and waited on the session row (another row refers to it)."""

from __future__ import annotations

import os
import threading
import time

import pytest
from django.db import connection, connections, transaction

from discovery.agents.models import AgentRun
from discovery.agents.services import agent_run_execute
from discovery.loop.models import LoopMeta
from discovery.loop.services import cost_charge
from discovery.loop.services.base import lock_meta
from discovery.models import DiscoverySession
from discovery.services.sessions import locked_session

from .agents_support import _turn, start_run

pytestmark = pytest.mark.django_db(transaction=True)
# The 100 rounds (about a minute); NOVELGRAPH_DEADLOCK_ROUNDS runs more or fewer while working on it.
ROUNDS = int(os.environ.get("NOVELGRAPH_DEADLOCK_ROUNDS", "100"))


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite serialises write transactions: no deadlock to test")


def _in_thread(target, results: dict, name: str) -> threading.Thread:
    def run():
        try:
            results[name] = target()
        except Exception as exc:
            results[name] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _blocked_or_done(thread: threading.Thread) -> None:
    """Wait (for state, not time) until the request's thread is waiting on a lock, or has finished."""
    deadline = time.monotonic() + 20
    with connections["default"].cursor() as cursor:
        while thread.is_alive() and time.monotonic() < deadline:
            cursor.execute("SELECT pg_stat_clear_snapshot()")  # else the view is read once per transaction
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.01)


def test_queueing_a_run_while_sols_run_holds_the_session_and_wants_the_loop(author_api, book):
    session_id = author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]
    results: dict = {}
    holding = threading.Event()
    request_sent = threading.Event()
    threads: dict = {}
    started = threading.Event()  # the request's thread is known to Sol's run (it may send before it is named)

    def sols_run():
        # Sol's run's writes, in the order its transaction takes them: the session (its question), then the
        # loop (its gate card, its cost).
        with transaction.atomic():
            locked_session(DiscoverySession.objects.get(pk=session_id))
            holding.set()
            request_sent.wait(10)
            started.wait(10)
            _blocked_or_done(threads["request"])
            lock_meta(book)
            cost_charge(book=book, amount=1)
        return "settled"

    def queue_a_run():
        holding.wait(10)
        request_sent.set()
        return author_api.post(f"/books/{book.pk}/agent-runs", {"task": "guidance", "topic": "fair clues"})

    worker = _in_thread(sols_run, results, "run")
    threads["request"] = _in_thread(queue_a_run, results, "request")
    started.set()
    worker.join(60)
    threads["request"].join(60)

    assert results["run"] == "settled", results
    assert results["request"].status_code == 202, results["request"].content
    assert LoopMeta.objects.get(book=book).cost_spent == 1


def test_queueing_runs_against_running_sol_runs_100_times_never_answers_500(author_api, book):
    session_id = author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]
    # Something for Sol to ask about: each of its runs then asks a question (the session's lock) and hands
    # work on (runs queued inside its transaction), besides the loop's lock (its cost).
    _turn(author_api, session_id, "Mara keeps the light.", protagonist_name="Mara", aftertaste="unease")
    LoopMeta.objects.filter(book=book).update(cost_budget=100_000, round_cap=100_000)
    statuses: list[int] = []
    started = time.monotonic()
    for round_ in range(ROUNDS):
        _turn(author_api, session_id, f"Round {round_}: the harbour master lies.", conflict=f"lie {round_}")
        sol = start_run(author_api, book, "next-question")
        results: dict = {}
        worker = _in_thread(lambda run_id=sol["id"]: agent_run_execute(run_id=run_id), results, "run")
        request = _in_thread(
            lambda: author_api.post(f"/books/{book.pk}/agent-runs", {"task": "guidance", "topic": "fair clues"}),
            results,
            "request",
        )
        worker.join(60)
        request.join(60)
        assert not isinstance(results["run"], Exception), results["run"]
        assert not isinstance(results["request"], Exception), results["request"]
        statuses.append(results["request"].status_code)
        assert results["run"].status in ("done", "failed"), results["run"]
    print(f"{ROUNDS} rounds in {time.monotonic() - started:.1f} s; statuses {sorted(set(statuses))}")
    assert 500 not in statuses and set(statuses) <= {202, 409}
    failed = AgentRun.objects.filter(status="failed").values_list("reason", flat=True)
    assert not [reason for reason in failed if "Deadlock" in reason or "internal error" in reason], list(failed)[:3]
