"""Issue 26, done when (its second run): the discovery of tests/test_discovery_to_handoff.py, steered once at G0
(redirect) and sent to explore alternatives once at G1.5, still reaches hand-off with the offline provider, no agent
key and only what her browser posts. Sol acts on the steer (his next G0 card answers it) and the explore verdict's
re-run is done by an in-app run of Terra's, so no verdict leaves work that only the API could finish."""

from __future__ import annotations

import pytest

from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.agents.models import AgentRun
from discovery.loop.models import ArtifactStatus, BlackboardArtifact, LensRerun, LoopMeta, OptionCard
from discovery.loop.selectors import trace_lint
from discovery.models import Book, Chapter, DiscoverySession, StoryCharter, ThrustCandidate, Turn
from novelgraph.core.models import ApiKey

from .factories import UserFactory
from .test_discovery_to_handoff import Author, answer_to, pending

pytestmark = [pytest.mark.django_db, pytest.mark.agents_act]

STEER = "The harbour master wrote the letter himself; make the book about why."
EXPLORE = "These thrusts keep the letter at arm's length; I want one where it is the keeper's own past."


def test_a_discovery_steered_at_g0_and_explored_at_g15_still_reaches_hand_off(settings):
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline"}
    user = UserFactory(username="mara-writer")
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
    for _ in range(3):
        session.refresh_from_db()
        author.post(f"/books/{book.pk}/turns/", {"content": answer_to(session.current_question)})
    for turn in Turn.objects.filter(session=session, role="author").order_by("ordinal"):
        author.post(f"/books/{book.pk}/turns/{turn.pk}/confirm/")

    # G0: she steers instead of approving. Sol's next card answers the steer; that one she approves.
    g0 = pending(book, "gate", "G0")
    author.post(f"/review/{g0.pk}/", {"verdict": "redirect", "rationale": "Not quite.", "constraint": STEER})
    steered = pending(book, "gate", "G0")
    assert steered is not None and steered.pk != g0.pk, list(AgentRun.objects.values_list("task", "notes"))
    card = OptionCard.objects.get(approval=steered)
    assert STEER in card.summary and card.payload["answers"][0]["text"] == STEER
    author.decide(steered, "That is why the book exists.")

    # G1.5: she asks for alternatives. Terra drafts new thrusts in-app, Sol asks again; she chooses a new one.
    g15 = pending(book, "gate", "G1.5")
    assert g15 is not None, list(AgentRun.objects.values_list("task", "status", "notes"))
    first_drafts = set(ThrustCandidate.objects.filter(session=session).values_list("pk", flat=True))
    author.post(f"/review/{g15.pk}/", {"verdict": "explore-alternatives", "rationale": EXPLORE})
    assert list(LensRerun.objects.filter(book=book).values_list("lens", "status")) == [("explore-options", "done")]
    again = pending(book, "gate", "G1.5")
    assert again is not None and again.pk != g15.pk, list(AgentRun.objects.values_list("task", "status", "notes"))
    chosen = OptionCard.objects.get(approval=again).payload["thrust"]["id"]
    assert chosen not in {str(pk) for pk in first_drafts}, "Sol recommends one of Terra's new drafts"
    author.decide(again, "The second draft is the keeper's own.", thrust_id=chosen)

    # From here the discovery goes as it does unsteered: charter, canon, G2, G3.
    charter_approval = pending(book, "story-charter")
    assert charter_approval is not None, list(AgentRun.objects.values_list("task", "status", "notes"))
    charter = StoryCharter.objects.get(pk=charter_approval.subject_id)
    assert charter.content["protagonist"]["name"] == "Mara Quell"
    author.decide(charter_approval, "Mara carries it.")
    for ask in list(book.approvals.filter(status="pending", kind="canon-promotion")):
        author.decide(ask, "She is mine.")
    g2 = pending(book, "gate", "G2")
    assert g2 is not None, list(AgentRun.objects.values_list("task", "status", "notes"))
    assert trace_lint(book, strict=True).ok
    author.decide(g2, "The charter governs the book.")
    g3 = pending(book, "gate", "G3") or pending(book, "consent", "G3")
    assert g3 is not None, list(AgentRun.objects.filter(role="sol").values_list("notes", flat=True))[:3]
    author.decide(g3, "Ready to draft.")

    assert LoopMeta.objects.get(book=book).status == "handed-off"
    brief = BlackboardArtifact.objects.get(book=book, slug="decision-brief")
    assert brief.status == ArtifactStatus.RATIFIED
    assert brief.content["thrust"]["id"] == chosen, "the brief carries the thrust she chose from the new drafts"
    assert Chapter.objects.filter(book=book, number=1).exists()
    # The log holds the steer, the card that answered it, and the explore verdict with its in-app re-run.
    effects = [e.detail.get("effect") or {} for e in DecisionLogEntry.objects.filter(book=book).order_by("sequence")]
    assert any(e.get("steer") == STEER for e in effects)
    assert any((e.get("answers") or [{}])[0].get("text") == STEER for e in effects)
    assert any([r["lens"] for r in e.get("reruns") or []] == ["explore-options"] for e in effects)
    assert decision_log_verify(book).ok
    assert not ApiKey.objects.filter(owner=user).exists(), "no agent key was made"
    assert not LensRerun.objects.filter(book=book, status="queued").exists()
    runs = AgentRun.objects.filter(book=book).count()
    print(f"\nauthor acts to hand-off, steered: {author.acts}; agent runs: {runs}")
    assert author.acts <= 18
