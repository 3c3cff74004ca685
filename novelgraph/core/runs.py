"""Which agent run wrote a record: the agents app (high above the kernel) registers how to tell.

Pages of discovery and of approvals name the run behind what they show ("drafted by Sol's run"). They ask here,
and the agents app answers from ``AgentsConfig.ready()``; with no agents app installed nothing was written by a
run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_writers: list[Callable[[str, list], dict[str, Any]]] = []
_ran: list[Callable[[Any], bool]] = []


def register_run_records(*, produced_by: Callable[[str, list], dict[str, Any]], ran_for: Callable[[Any], bool]) -> None:
    """``produced_by(kind, ids)`` maps each id some run wrote to that run; ``ran_for(book)``: has any run worked
    on the book."""
    _writers.append(produced_by)
    _ran.append(ran_for)


def produced_by(kind: str, object_ids) -> dict[str, Any]:
    """Which run wrote each of these objects: ``{object_id: run}`` (ids no run wrote are left out)."""
    ids = [str(pk) for pk in object_ids]
    found: dict[str, Any] = {}
    for writer in _writers if ids else ():
        found.update(writer(kind, ids))
    return found


def runs_worked_on(book) -> bool:
    """Whether any agent run has worked on ``book``."""
    return any(ran(book) for ran in _ran)
