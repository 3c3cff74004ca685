"""Issue 26, done when: the same discovery as tests/test_discovery_to_handoff.py, with the model provider and the
stub model server answering every task. A new book goes from an empty account to hand-off through what the
author's browser can do; Sol and Terra run on a "strong hosted" model and Luna on a "small local" one (two stub
servers, two prices), each run recording its model and cost. The stub's replies are scripted per task from the
context each model is sent (the ids it may cite are the context's), and Luna's small model answers in
almost-JSON (a code fence, prose around the object, a trailing comma) that the provider repairs."""

from __future__ import annotations

import json

import pytest

from approvals.models import Approval
from approvals.selectors import decision_log_verify
from discovery.agents.models import TASK_ROLE, AgentRun, AgentRunOutput, OutputType
from discovery.agents.providers.offline import plan_for
from discovery.loop.models import ArtifactStatus, BlackboardArtifact, LensReview, LoopMeta, OptionCard
from discovery.loop.selectors import trace_lint
from discovery.models import Book, Chapter, DiscoverySession, KnowledgeClaim, Observation, StoryCharter, Turn
from novelgraph.core.models import ApiKey

from .factories import UserFactory
from .model_stub import ModelStub
from .test_discovery_to_handoff import Author, answer_to, pending

pytestmark = [pytest.mark.django_db, pytest.mark.agents_act]

STRONG, SMALL = "strong-hosted", "small-local"


def scripted(task: str, ctx: dict) -> dict:
    """The reply the script gives for ``task``: the plan a careful model makes of this context (the offline
    rules' reading of it), with each role's words marked as the model's."""
    plan = plan_for(task, ctx)
    plan["notes"] = [*plan.get("notes", [])[:9], f"Answered by the stub model for {task}."]
    return plan


def small_model(task: str):
    """Luna's small local model: the right object, wrapped in the prose, fence and trailing comma it likes."""

    def reply(ctx: dict) -> str:
        body = json.dumps(scripted(task, ctx))
        return f"Here is the {task} plan you asked for.\n```json\n{body[:-1]},}}\n```\nI hope it helps."

    return reply


@pytest.fixture
def two_models(settings):
    strong, small = ModelStub().start(), ModelStub().start()
    for task, role in TASK_ROLE.items():
        stub = small if role == "luna" else strong
        stub.script[task] = small_model(task) if role == "luna" else (lambda ctx, task=task: scripted(task, ctx))
    settings.NOVELGRAPH_AGENTS = {
        **settings.NOVELGRAPH_AGENTS,
        "PROVIDER": "openai-compatible",
        "BASE_URL": strong.base_url,
        "MODEL": STRONG,
        "API_KEY": "stub-key",
        "MAX_RETRIES": 0,
        "TIMEOUT": 30,
        "RUN_COST": 1.0,
        "COST_PER_1K_TOKENS": 0.01,
        "ROLES": {
            "sol": {},
            "terra": {},
            "luna": {"BASE_URL": small.base_url, "MODEL": SMALL, "RUN_COST": 0.2, "COST_PER_1K_TOKENS": 0.0},
        },
    }
    yield strong, small
    strong.stop()
    small.stop()


def test_a_new_book_reaches_hand_off_with_the_model_provider_answering_every_task(two_models):
    strong, small = two_models
    user = UserFactory(username="mara-model")
    author = Author(user)

    author.post(
        "/books/new/",
        {
            "title": "The Lighthouse Keeper",
            "premise": "A lighthouse keeper finds a drowned man's letter that names her as the next to die.",
            "genre_pack": "mystery",
        },
    )
    book = Book.objects.get(owner=user)
    author.post(f"/books/{book.pk}/discovery/start/")
    session = DiscoverySession.objects.get(book=book)

    asked = []
    for _ in range(3):
        session.refresh_from_db()
        asked.append(session.current_question)
        author.post(f"/books/{book.pk}/turns/", {"content": answer_to(session.current_question)})
    assert len(set(asked)) == 3, asked

    turns = list(Turn.objects.filter(session=session, role="author").order_by("ordinal"))
    observations = Observation.objects.filter(session=session)
    assert {o.turn_id for o in observations} == {t.pk for t in turns}, list(
        AgentRun.objects.values_list("task", "status", "reason")
    )
    assert observations.filter(key="protagonist name", value="Mara Quell", turn=turns[0]).exists()
    for turn in turns:
        author.post(f"/books/{book.pk}/turns/{turn.pk}/confirm/")

    author.decide(pending(book, "gate", "G0"), "This is why the book exists.")
    g15 = pending(book, "gate", "G1.5")
    assert g15 is not None, list(AgentRun.objects.values_list("task", "status", "reason"))
    recommended = OptionCard.objects.get(approval_id=g15.pk).payload["thrust"]["id"]
    author.decide(g15, "The core keeps the keeper at the centre.", thrust_id=recommended)

    charter_approval = pending(book, "story-charter")
    assert charter_approval is not None, list(AgentRun.objects.values_list("task", "status", "reason"))
    charter = StoryCharter.objects.get(pk=charter_approval.subject_id)
    assert charter.proposed_by == "terra" and charter.content["protagonist"]["name"] == "Mara Quell"
    author.decide(charter_approval, "Mara carries it.")

    canon_asks = list(Approval.objects.filter(book=book, status="pending", kind="canon-promotion"))
    assert canon_asks, list(AgentRun.objects.filter(role="sol").values_list("notes", flat=True))
    for ask in canon_asks:
        author.decide(ask, "She is mine.")
    assert KnowledgeClaim.objects.filter(
        base__scope="book", status="approved", provenance="agent-inferred", subject="Mara Quell"
    ).exists()

    g2 = pending(book, "gate", "G2")
    assert g2 is not None, list(AgentRun.objects.values_list("task", "status", "reason"))
    for lens, role in (("canon-integrity", "terra"), ("reader-trust", "luna")):
        review = LensReview.objects.get(book=book, gate="G2", lens__slug=lens)
        run = AgentRunOutput.objects.get(type=OutputType.REVIEW, object_id=str(review.pk)).run
        assert (run.role, run.status, run.provider) == (role, "done", "openai-compatible")
    assert trace_lint(book, strict=True).ok
    author.decide(g2, "The charter governs the book.")

    g3 = pending(book, "gate", "G3") or pending(book, "consent", "G3")
    assert g3 is not None, list(AgentRun.objects.filter(role="sol").values_list("notes", flat=True))[:3]
    author.decide(g3, "Ready to draft.")

    assert LoopMeta.objects.get(book=book).status == "handed-off"
    brief = BlackboardArtifact.objects.get(book=book, slug="decision-brief")
    assert brief.status == ArtifactStatus.RATIFIED and brief.content["charter"]["version"] == charter.version
    assert "Mara Quell" in Chapter.objects.get(book=book, number=1).spec
    assert decision_log_verify(book).ok
    assert not ApiKey.objects.filter(owner=user).exists(), "no agent key was made"

    # Every run went to its role's model, each task of the discovery was answered by the stub, nothing failed.
    runs = AgentRun.objects.filter(book=book)
    assert not runs.exclude(status="done").exists(), list(runs.exclude(status="done").values_list("task", "reason"))
    assert set(runs.values_list("provider", flat=True)) == {"openai-compatible"}
    for run in runs:
        assert run.model == (SMALL if run.role == "luna" else STRONG), (run.task, run.model)
        assert run.tokens > 0
        rate = 0.0 if run.role == "luna" else 0.01
        assert run.cost == pytest.approx(round((0.2 if run.role == "luna" else 1.0) + run.tokens / 1000 * rate, 4))
        assert f"Answered by the stub model for {run.task}." in run.notes, (run.task, run.notes)
        if run.role == "luna":
            assert any(n.startswith("The model's reply was repaired before it was read") for n in run.notes)
    answered = {task for task, _ in strong.answered + small.answered}
    # Every task of the roster, each by its role's model; the continuity check reads chapter text, after hand-off,
    # and Luna collects a page only when the author names its URL (tests/test_luna_research_collect.py).
    assert answered == set(TASK_ROLE) - {"continuity", "research-url"}, answered
    assert {m for _, m in small.answered} == {SMALL} and {m for _, m in strong.answered} == {STRONG}
    assert len(strong.requests) + len(small.requests) == runs.count()
    assert LoopMeta.objects.get(book=book).cost_spent == pytest.approx(sum(r.cost for r in runs), abs=0.01)
    print(f"\nauthor acts to hand-off with the model provider: {author.acts}; agent runs: {runs.count()}")
    assert author.acts <= 16
