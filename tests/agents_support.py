"""Helpers for the agent-run tests: queue a run through the API and work off the task queue in-process."""

from __future__ import annotations

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
        task_result = DBTaskResult.objects.ready().get_locked()
        if task_result is None:
            return ran
        task_result.claim(worker.worker_id)
        worker.run_task(task_result)
        ran += 1
    raise AssertionError(f"more than {limit} tasks: a run keeps queueing runs")


def start_run(api, book, task: str, **fields) -> dict:
    response = api.post(f"/books/{book.pk}/agent-runs", {"task": task, **fields})
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued"
    return response.json()


def run_of(data: dict) -> AgentRun:
    return AgentRun.objects.get(pk=data["id"])
