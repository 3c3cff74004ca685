"""Issue 16: Sol, Terra and Luna run inside NovelGraph, offline, under the same rules as outside agents.

The whole flow: a new book goes from an empty discovery to a proposed Story Charter with only
offline runs and the author's turns; every run stays inside its role's capabilities."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from approvals.models import Approval, DecisionLogEntry
from discovery.access import capabilities_of
from discovery.agents.models import AgentRun
from discovery.loop.models import LoopMeta, OptionCard
from discovery.models import (
    OPENING_QUESTION,
    Book,
    DiscoverySession,
    Handoff,
    KnowledgeClaim,
    ScratchpadEntry,
    StoryCharter,
    ThrustCandidate,
)
from novelgraph.core.services import api_key_create

from .agents_support import ask_sol, discover_a_new_book, work_off_queue
from .conftest import Api

pytestmark = pytest.mark.django_db


def assert_the_discovery_reached_a_proposed_charter(book, scene: dict, *, provider: str, model: str) -> None:
    runs = list(AgentRun.objects.filter(book=book).order_by("created_at"))
    assert {(r.role, r.task) for r in runs} >= {
        ("sol", "next-question"),
        ("luna", "guidance"),
        ("luna", "contradictions"),
        ("terra", "thrusts"),
        ("terra", "charter"),
    }
    assert [r.status for r in runs] == ["done"] * len(runs), [(r.task, r.reason) for r in runs]
    assert {(r.provider, r.model) for r in runs} == {(provider, model)}

    # Sol waited for the author's first answer, then asked, citing what prompted each question.
    first, second, third = scene["sol_runs"]
    assert not first.outputs.filter(type="question").exists()
    # Sol handed work on through handoffs, each answered by a run of the target role.
    assert set(second.children.values_list("task", flat=True)) == {"guidance", "thrusts", "contradictions"}
    assert third.children.filter(task="charter").exists()
    session = DiscoverySession.objects.get(pk=scene["session_id"])
    questions = list(session.questions.order_by("sequence"))
    assert len(questions) == 2 and session.current_question == questions[-1].question != OPENING_QUESTION
    assert questions[0].source_refs[0]["type"] == "turn"
    # The second question is about the contradiction Luna found, and cites it.
    contradiction = ScratchpadEntry.objects.get(session=session, kind="contradiction")
    assert {"type": "entry", "id": str(contradiction.pk)} in questions[1].source_refs
    assert "contradiction" in questions[1].question

    # Luna's guidance: observations drawn from library chunks, citing them; the handoff returned.
    guidance = ScratchpadEntry.objects.filter(session=session, agent_role="luna", provenance="literary-guidance")
    assert guidance.exists()
    assert all(any(ref["type"] == "chunk" for ref in e.source_refs) for e in guidance)
    assert not Handoff.objects.filter(book=book, status="open").exists()
    # Luna's contradiction names both sides: the author's observation and the book canon it contradicts.
    assert {ref["type"] for ref in contradiction.source_refs} == {"observation", "claim"}
    assert {"type": "claim", "id": scene["book_claim"]} in contradiction.source_refs

    # Terra's thrust candidates, and her Story Charter draft waiting for the author.
    assert sorted(ThrustCandidate.objects.filter(session=session).values_list("kind", flat=True)) == [
        "core",
        "stretch",
        "wild",
    ]
    charter = StoryCharter.objects.get(book=book)
    assert charter.status == "proposed" and charter.proposed_by == "terra"
    assert Approval.objects.get(pk=charter.approval_id).status == "pending"
    assert charter.content["protagonist"] == {"name": "Mara"}
    assert charter.content["central_conflict"] == "the harbour master wants the drowning closed as an accident"
    assert any(u.startswith("the themes: not yet confirmed") for u in charter.content["productive_unknowns"])
    assert all(ref["type"] == "observation" for ref in charter.source_refs) and charter.source_refs

    # Every run's cost counted against the loop's budget.
    assert LoopMeta.objects.get(book=book).cost_spent == pytest.approx(sum(r.cost for r in runs))


def assert_each_run_stayed_inside_its_role(book, scene: dict) -> None:
    for run in AgentRun.objects.filter(book=book).select_related("dossier"):
        assert run.dossier.agent_role == run.role
        assert run.dossier.content["capabilities"] == sorted(c.value for c in capabilities_of(run.role))
    series_claim = scene["series_claim"]
    # Luna's runs never read series canon: not in their dossiers, not in what they looked up, not cited.
    for run in AgentRun.objects.filter(book=book, role="luna").select_related("dossier"):
        assert "series canon (luna lacks series:read)" in run.dossier.content["withheld"]
        assert series_claim not in {c["id"] for c in run.dossier.content["claims"]}
        assert series_claim not in str(run.looked_up)
    assert not ScratchpadEntry.objects.filter(agent_role="luna", source_refs__icontains=series_claim).exists()
    # So the observation that contradicts series canon (eye colour) is not flagged by Luna, who cannot see it,
    # while Sol's dossier holds that canon.
    assert not ScratchpadEntry.objects.filter(kind="contradiction", content__icontains="eye colour").exists()
    sol = AgentRun.objects.filter(book=book, role="sol").select_related("dossier").first()
    assert series_claim in {c["id"] for c in sol.dossier.content["claims"]}

    # Nothing becomes canon without the author: only her two promotions; no charter approved; no gate passed
    # by anyone but her; every logged decision is hers.
    approved = {str(pk) for pk in KnowledgeClaim.objects.filter(status="approved").values_list("pk", flat=True)}
    assert approved == {scene["series_claim"], scene["book_claim"]}
    assert not StoryCharter.objects.filter(book=book, status="approved").exists()
    assert set(DecisionLogEntry.objects.filter(book=book).values_list("ratified_by", flat=True)) == {"author:ada"}
    assert not OptionCard.objects.filter(book=book, status__in=["decided", "auto-passed"]).exists()
    # Agents never put words in the author's mouth.
    assert not ScratchpadEntry.objects.filter(session__book=book, provenance="author-stated").exists()


def test_offline_runs_take_a_new_book_from_an_empty_discovery_to_a_proposed_charter(author_api, book):
    scene = discover_a_new_book(author_api, book)

    assert_the_discovery_reached_a_proposed_charter(book, scene, provider="offline", model="rules-1")
    assert_each_run_stayed_inside_its_role(book, scene)


def test_sol_raises_the_current_gates_card_when_its_preconditions_hold(author_api, book):
    author_api.post(f"/books/{book.pk}/discovery")

    run = ask_sol(author_api, book)

    card = OptionCard.objects.get(book=book, status="pending")
    assert card.gate == "G0" and book.premise in card.summary and card.raised_by == "sol"
    assert {(o.type, o.object_id) for o in run.outputs.all()} >= {("card", str(card.pk))}
    assert LoopMeta.objects.get(book=book).status == "awaiting-human"


def test_every_task_makes_progress_on_the_demo_book(client):
    call_command("demo", stdout=StringIO())
    demo = Book.objects.get(title="The Lighthouse Letter")
    api = Api(client, api_key_create(owner=demo.owner, role="author")[1])
    for task, fields in (
        ("next-question", {}),
        ("guidance", {"topic": "planting fair clues before the reveal"}),
        ("contradictions", {}),
        ("thrusts", {}),
        ("charter", {}),
    ):
        response = api.post(f"/books/{demo.pk}/agent-runs", {"task": task, **fields})
        assert response.status_code == 202, (task, response.content)

    work_off_queue()

    runs = AgentRun.objects.filter(book=demo)
    assert [(r.task, r.reason) for r in runs if r.status != "done"] == []
    assert runs.filter(outputs__isnull=False).distinct().count() >= 4
