"""Background work (django-tasks): a queued run is executed by a worker, ``python manage.py db_worker``.

The database backend stores the task in the same transaction that records the run; each worker
claims a task with ``SELECT ... FOR UPDATE SKIP LOCKED``, and ``agent_run_execute`` moves the run
from queued to running under its row lock, so however many workers share the database, a run
runs once.
"""

from __future__ import annotations

from django_tasks import task


@task()
def run_agent(run_id: str) -> str:
    from .services import agent_run_execute

    run = agent_run_execute(run_id=run_id)
    return run.status if run is not None else "missing"
