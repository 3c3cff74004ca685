"""Agent runs through the API: who may queue them, what a run records, and that a refused or paused
run writes nothing."""

from __future__ import annotations

import pytest
from django_tasks_db.models import DBTaskResult

from discovery.agents.models import AgentRun
from discovery.loop.models import LoopMeta
from discovery.models import Handoff, ScratchpadEntry, StoryCharter

from .agents_support import run_of, start_run, work_off_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def session_id(author_api, book):
    return author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]


def test_a_queued_run_is_recorded_with_its_task_and_runs_once(author_api, book, session_id):
    data = start_run(author_api, book, "thrusts")

    assert data["role"] == "terra" and data["provider"] == "offline" and data["model"] == "rules-1"
    assert data["requested_by_role"] == "author" and data["dossier_id"] is None and data["written"] == []
    assert DBTaskResult.objects.get(pk=run_of(data).task_result_id).status == "READY"

    assert work_off_queue() == 1
    assert work_off_queue() == 0
    shown = author_api.get(f"/agent-runs/{data['id']}").json()
    assert shown["status"] == "done" and shown["dossier_id"] and shown["finished_at"] and shown["cost"] == 1
    assert [w["type"] for w in shown["written"]] == ["thrust", "thrust", "thrust"]
    assert shown["notes"][0].startswith("Drafted core, stretch and wild")
    listed = author_api.get(f"/books/{book.pk}/agent-runs").json()
    assert listed["count"] == 1 and listed["items"][0]["id"] == data["id"]


def test_sending_luna_with_a_topic_hands_it_to_her_first(author_api, book, session_id):
    data = start_run(author_api, book, "guidance", topic="fair play and clues")

    handoff = Handoff.objects.get(pk=data["input"]["handoff_id"])
    assert handoff.from_role == "author" and handoff.to_role == "luna" and "fair play and clues" in handoff.decision
    work_off_queue()
    handoff.refresh_from_db()
    assert handoff.status == "returned"
    observations = ScratchpadEntry.objects.filter(provenance="literary-guidance")
    assert observations.exists() and all(e.source_refs[0]["type"] == "chunk" for e in observations)


def test_only_the_author_and_sol_queue_runs(book, session_id, sol_api, terra_api, luna_api, editor_api, outsider_api):
    assert sol_api.post(f"/books/{book.pk}/agent-runs", {"task": "thrusts"}).status_code == 202
    for api in (terra_api, luna_api, editor_api):
        refused = api.post(f"/books/{book.pk}/agent-runs", {"task": "thrusts"})
        assert refused.status_code == 403 and "lacks discovery:write" in refused.json()["detail"]
    assert outsider_api.post(f"/books/{book.pk}/agent-runs", {"task": "thrusts"}).status_code == 404
    assert AgentRun.objects.count() == 1


def test_an_agent_reads_only_its_own_roles_runs(author_api, luna_api, book, session_id):
    terra_run = start_run(author_api, book, "thrusts")

    assert luna_api.get(f"/books/{book.pk}/agent-runs").json()["count"] == 0
    assert luna_api.get(f"/agent-runs/{terra_run['id']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"task": "guidance"}, "topic"),
        ({"task": "thrusts", "topic": "pacing"}, "topic"),
        ({"task": "dance"}, "task"),
        ({"task": "guidance", "topic": "x" * 501}, "topic"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(author_api, book, session_id, body, field):
    response = author_api.post(f"/books/{book.pk}/agent-runs", body)

    assert response.status_code == 422 and response.json()["field"] == field
    assert not AgentRun.objects.exists() and not Handoff.objects.exists()


def test_a_handoff_to_another_role_or_already_returned_is_refused(author_api, book, session_id):
    to_luna = author_api.post(f"/books/{book.pk}/handoffs", {"to_role": "luna", "decision": "Find guidance."}).json()

    wrong = author_api.post(f"/books/{book.pk}/agent-runs", {"task": "thrusts", "handoff_id": to_luna["id"]})
    assert wrong.status_code == 422 and wrong.json()["field"] == "handoff_id"
    start_run(author_api, book, "guidance", handoff_id=to_luna["id"])
    work_off_queue()
    again = author_api.post(f"/books/{book.pk}/agent-runs", {"task": "guidance", "handoff_id": to_luna["id"]})
    assert again.status_code == 409 and again.json()["code"] == "already_returned"


def test_no_run_before_the_discovery_starts(author_api, book):
    response = author_api.post(f"/books/{book.pk}/agent-runs", {"task": "next-question"})

    assert response.status_code == 409 and response.json()["code"] == "no_session"


def test_run_costs_pause_runaway_work_at_the_cost_bound(author_api, book, session_id):
    LoopMeta.objects.filter(book=book).update(cost_budget=2)
    first = start_run(author_api, book, "thrusts")
    second = start_run(author_api, book, "thrusts")
    third = start_run(author_api, book, "thrusts")

    work_off_queue()

    meta = LoopMeta.objects.get(book=book)
    assert meta.status == "stalled-at-cap" and meta.bound == "cost" and meta.cost_spent == 2
    assert [run_of(r).status for r in (first, second, third)] == ["done", "done", "failed"]
    paused = run_of(third)
    assert "stalled-at-cap at the cost bound" in paused.reason and paused.dossier is None and paused.cost == 0
    refused = author_api.post(f"/books/{book.pk}/agent-runs", {"task": "thrusts"})
    assert refused.status_code == 409 and refused.json()["code"] == "paused"
    # The bound pauses the work and asks the author; it never ends the discovery.
    assert meta.book.loop_cards.filter(kind="bound", status="pending").exists()


def test_a_run_whose_later_write_is_refused_writes_nothing(author_api, terra_api, book, session_id):
    handoff = author_api.post(f"/books/{book.pk}/handoffs", {"to_role": "terra", "decision": "Draft a charter."})
    data = start_run(author_api, book, "charter", handoff_id=handoff.json()["id"])
    # Before the run starts, Terra (from outside) answers the same handoff: the run's charter would be
    # written, and then its handoff result refused.
    answered = terra_api.post(f"/handoffs/{handoff.json()['id']}/result", {"facts": [{"text": "Done elsewhere."}]})
    assert answered.status_code == 200

    work_off_queue()

    run = run_of(data)
    assert run.status == "failed" and run.reason == "refused: this handoff was already returned"
    assert not StoryCharter.objects.exists() and not run.outputs.exists()
    assert ScratchpadEntry.objects.filter(handoff_id=handoff.json()["id"]).count() == 1


def _lost(run_id, *, ago):
    """The run as a worker killed mid-run leaves it: claimed (running), never settled."""
    from django.utils import timezone

    from discovery.agents.services import _claim

    run = _claim(run_id)
    AgentRun.objects.filter(pk=run.pk).update(started_at=timezone.now() - ago)
    return run


def test_a_run_whose_worker_died_is_marked_failed_before_the_next_run(author_api, book, session_id):
    from datetime import timedelta

    from discovery.agents.services import stale_after

    lost = _lost(start_run(author_api, book, "thrusts")["id"], ago=stale_after() + timedelta(seconds=1))
    busy = _lost(start_run(author_api, book, "charter")["id"], ago=stale_after() - timedelta(seconds=30))

    start_run(author_api, book, "next-question")

    shown = author_api.get(f"/agent-runs/{lost.pk}").json()
    assert shown["status"] == "failed" and "the worker stopped during the run" in shown["reason"]
    assert shown["written"] == [] and shown["finished_at"]
    assert author_api.get(f"/agent-runs/{busy.pk}").json()["status"] == "running"  # still within its time


def test_the_reap_command_marks_lost_runs_of_every_book(author_api, book, session_id, settings):
    from io import StringIO

    from django.core.management import call_command

    from discovery.agents.services import stale_after

    lost = _lost(start_run(author_api, book, "thrusts")["id"], ago=stale_after() * 2)
    out = StringIO()
    call_command("agent_runs_reap", stdout=out)

    assert out.getvalue().startswith("1 lost run(s) marked failed")
    reaped = AgentRun.objects.get(pk=lost.pk)
    # Its work began: the fixed cost of a run is charged, even though its worker never settled it.
    assert reaped.status == "failed" and reaped.cost == pytest.approx(settings.NOVELGRAPH_AGENTS["RUN_COST"])
    assert LoopMeta.objects.get(book=book).cost_spent == pytest.approx(reaped.cost)
    call_command("agent_runs_reap", stdout=StringIO())
    assert AgentRun.objects.filter(status="failed").count() == 1
