"""Issue 26: the demo book (``manage.py demo``) reaches hand-off with the built-in agents and her browser's forms
alone (posted with Django's test client): the demo's orphan trace node is linked by Terra's brief, Luna's question
for the canon-integrity lens is taken up by Terra's review, Sol closes the round, closes his question when he has
nothing more to ask, and Terra drafts a new charter version only when a confirmation changes a field."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from approvals.models import Approval
from discovery.loop.models import LoopMeta, OpenQuestion
from discovery.loop.selectors import trace_lint
from discovery.models import Book, DiscoverySession, Observation, SessionQuestion, StoryCharter

from .agents_support import work_off_queue

pytestmark = [pytest.mark.django_db, pytest.mark.agents_act]

ANSWERS = {
    "Turn 1 wants an unreliable narrator": "The forgery holds: Mara tells the truth, and someone copied her hand.",
    "A fair-play solution needs the forger visible early": "The forger is on the page in chapter one, "
    "mending nets on the harbour wall.",
    "blackout alternative": "Ines's letter holds; the blackout goes.",
}


def answer(question: str) -> str:
    found = [text for start, text in ANSWERS.items() if start in question]
    return found[0] if found else "Mara Quell carries it, and the harbour master stands in her way."


def test_the_demo_book_reaches_hand_off_with_the_agents_inside(settings):
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline"}
    call_command("demo", stdout=StringIO())
    book = Book.objects.get(title="The Lighthouse Letter")
    client = Client()
    client.force_login(book.owner)
    work_off_queue()

    def post(path: str, data: dict | None = None) -> None:
        response = client.post(path, data or {})
        assert response.status_code in (200, 302), (path, response.status_code, response.content[:1500])
        work_off_queue()

    steps: list[str] = []
    answered: set[str] = set()
    session = DiscoverySession.objects.get(book=book)
    for _ in range(60):
        meta = LoopMeta.objects.get(book=book)
        if meta.status == "handed-off":
            break
        waiting = Approval.objects.filter(book=book, status="pending").order_by("created_at").first()
        if waiting is not None:
            steps.append(f"decide {waiting.kind} {waiting.gate}")
            post(f"/review/{waiting.pk}/", {"verdict": "approve", "rationale": "Yes, this holds for the book."})
            continue
        working = Observation.objects.filter(session=session, status="working").order_by("created_at").first()
        if working is not None and working.turn_id:
            steps.append("confirm a turn")
            post(f"/books/{book.pk}/turns/{working.turn_id}/confirm/")
            continue
        session.refresh_from_db()
        question = session.current_question
        if question and question not in answered:
            answered.add(question)
            steps.append(f"answer: {question[:60]}")
            post(f"/books/{book.pk}/turns/", {"content": answer(question)})
            continue
        mine = OpenQuestion.objects.filter(book=book, target_discipline="author").exclude(status="resolved").first()
        if mine is not None:
            steps.append(f"answer on the loop page: {mine.question[:60]}")
            post(
                f"/books/{book.pk}/loop/questions/{mine.pk}/answer/",
                {"resolution": "In chapter four, on the tide-table page of the logbook."},
            )
            continue
        from discovery.agents.models import AgentRun
        from discovery.loop.services.gates import g2_reasons

        last = list(AgentRun.objects.filter(book=book).order_by("-created_at").values_list("task", "status", "notes"))
        pytest.fail(
            "nothing left for her to do:\n" + "\n".join(steps) + f"\n{meta.gate} {meta.status} {g2_reasons(book)}\n"
            + "\n".join(map(str, last[:8]))
        )
    assert LoopMeta.objects.get(book=book).status == "handed-off", "\n".join(steps)
    assert trace_lint(book, strict=True).ok
    assert not OpenQuestion.objects.filter(book=book).exclude(status="resolved").exists()
    session.refresh_from_db()
    assert session.current_question == "", "Sol has nothing more to ask: the question closed"
    # Each contradiction is asked about once; a charter version only when a field changed.
    asked = list(SessionQuestion.objects.filter(session=session).values_list("question", flat=True))
    assert len(asked) == len(set(asked)), asked
    charters = StoryCharter.objects.filter(book=book).count()
    assert charters <= 3, (charters, steps)
    print("\n" + "\n".join(steps))
