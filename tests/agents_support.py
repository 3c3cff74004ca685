"""Helpers for the agent-run tests: queue a run through the API and work off the task queue in-process."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings
from django.db import connection, transaction
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from discovery.agents.models import AgentRun


def work_off_queue(limit: int = 100) -> int:
    """Run every ready task with the database worker's own code, in this process (and this test's
    transaction), including tasks queued by the tasks it runs. Returns how many ran."""
    worker = Worker(
        queue_names=["*"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="in-process",
        excluded_queue_names=[],
    )
    ran = 0
    while ran < limit:
        with transaction.atomic():  # the claim is its own transaction, as in the worker
            task_result = DBTaskResult.objects.ready().get_locked()
            if task_result is None:
                return ran
            task_result.claim(worker.worker_id)
        worker.run_task(task_result)
        ran += 1
    raise AssertionError(f"more than {limit} tasks: a run keeps queueing runs")


WORKER = [
    "manage.py",
    "db_worker",
    "--batch",
    "--no-reload",
    "--no-startup-delay",
    "--interval",
    "0",
    "--queue-name",
    "*",
]


def worker_environment() -> dict[str, str]:
    """The environment of a worker process that uses this test's database."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "novelgraph.settings", "PYTHONUNBUFFERED": "1"}
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        env["DATABASE_URL"] = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    else:
        env["DATABASE_URL"] = ""
        env["NOVELGRAPH_SQLITE_PATH"] = str(db["NAME"])
    return env


def start_worker(worker_id: str | None = None, **env: str) -> subprocess.Popen:
    """A ``db_worker --batch`` process on this test's database (named ``worker_id``, else as ``make worker``
    names it: by host and pid), with ``env`` added to its environment."""
    named = ["--worker-id", worker_id] if worker_id else []
    return subprocess.Popen(
        [sys.executable, *WORKER, *named, "--verbosity", "0"],
        cwd=settings.BASE_DIR,
        env={**worker_environment(), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def start_run(api, book, task: str, **fields) -> dict:
    response = api.post(f"/books/{book.pk}/agent-runs", {"task": task, **fields})
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued"
    return response.json()


def run_of(data: dict) -> AgentRun:
    return AgentRun.objects.get(pk=data["id"])


# --- The whole discovery of a new book, with only agent runs and the author's turns ------------------


def _turn(author_api, session_id: str, content: str, **observations: str) -> None:
    response = author_api.post(
        f"/sessions/{session_id}/turns",
        {
            "role": "author",
            "content": content,
            "observations": [
                {"key": key.replace("_", " "), "value": value, "provenance": "author-stated"}
                for key, value in observations.items()
            ],
        },
    )
    assert response.status_code == 201, response.content
    # Observations enter working; the author confirms each herself (each confirmation leaves a revision).
    for observation in response.json()["observations"]:
        confirmed = author_api.post(f"/observations/{observation['id']}/resolve", {"action": "confirm"})
        assert confirmed.status_code == 200, confirmed.content


def _canon(author_api, book, scope: str, scope_id, predicate: str, value: str) -> str:
    claim = author_api.post(
        "/claims",
        {
            "scope": scope,
            "scope_id": str(scope_id),
            "subject": "Mara",
            "predicate": predicate,
            "value": value,
            "provenance": "author-stated",
        },
    )
    assert claim.status_code == 201, claim.content
    promoted = author_api.post(
        f"/claims/{claim.json()['id']}/promote", {"book_id": str(book.pk), "rationale": "Fixed in book one."}
    )
    assert promoted.status_code == 200, promoted.content
    return claim.json()["id"]


def ask_sol(author_api, book) -> AgentRun:
    """The author asks Sol for the next question; Sol's run and the runs it hands on are worked off."""
    data = start_run(author_api, book, "next-question")
    work_off_queue()
    return run_of(data)


def discover_a_new_book(author_api, book) -> dict:
    """From an empty discovery to a proposed Story Charter: the author's turns (and her two canon
    decisions, made before any agent runs) and Sol's runs, which hand work on to Luna and Terra."""
    session_id = author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]
    series_claim = _canon(author_api, book, "series", book.series_id, "eye colour", "green")
    book_claim = _canon(author_api, book, "book", book.pk, "fears", "deep water")

    first = ask_sol(author_api, book)
    _turn(
        author_api,
        session_id,
        "Uneasy, about whom they trusted. Mara's eyes are brown, and she is afraid of heights.",
        aftertaste="unease about whom to trust",
        eye_colour="brown",
        fears="heights",
    )
    second = ask_sol(author_api, book)
    _turn(
        author_api,
        session_id,
        "Mara keeps the light. The harbour master wants the drowning closed as an accident.",
        protagonist_name="Mara",
        conflict="the harbour master wants the drowning closed as an accident",
        ending="the truth costs Mara the light",
    )
    third = ask_sol(author_api, book)
    return {
        "session_id": session_id,
        "series_claim": series_claim,
        "book_claim": book_claim,
        "sol_runs": [first, second, third],
    }
