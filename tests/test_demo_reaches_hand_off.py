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
            "nothing left for her to do:\n"
            + "\n".join(steps)
            + f"\n{meta.gate} {meta.status} {g2_reasons(book)}\n"
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


# --- The rules behind it, in the offline provider (pure functions of a run's context) ----------------------


def _sol_context(**over) -> dict:
    base = {
        "book": {"title": "T", "premise": "P", "genre_pack": "mystery"},
        "dossier": {"scratchpad": [], "claims": [], "observations": []},
        "turns": [{"id": "t1", "role": "author", "ordinal": 1, "content": "x", "created_at": "2"}],
        "questions": [{"question": "Q", "source_refs": [], "created_at": "1"}],
        "charters": [],
        "thrusts": [],
        "handoffs": [],
        "loop": {},
    }
    return {**base, **over}


def test_a_contradiction_written_twice_is_asked_about_once():
    from discovery.agents.providers.offline import sol_next_question

    said = "Turn 1 wants an unreliable narrator; turn 3 makes her the victim."
    entries = [
        {"id": "e1", "kind": "contradiction", "content": said, "sequence": 1},
        {"id": "e2", "kind": "contradiction", "content": said + " ", "sequence": 2},
    ]
    asked = {"question": "Luna found a contradiction", "source_refs": [{"type": "entry", "id": "e1"}]}
    plan = sol_next_question(
        _sol_context(
            dossier={"scratchpad": entries, "claims": [], "observations": []}, questions=[{**asked, "created_at": "1"}]
        )
    )
    assert plan["question"] is None or "unreliable narrator" not in plan["question"]["question"]


def test_sol_closes_his_question_only_when_he_has_nothing_more_to_ask():
    from discovery.agents.providers.offline import CHARTER_FIELDS, sol_next_question

    everything = [{"question": q, "source_refs": [], "created_at": "1"} for _, _, _, q in CHARTER_FIELDS]
    plan = sol_next_question(_sol_context(questions=everything))
    assert plan["question"] is None and plan["done_asking"] is True
    waiting = [{**q, "created_at": "3"} for q in everything]  # asked after her last turn: she has not answered
    assert sol_next_question(_sol_context(questions=waiting))["done_asking"] is False
    plan = sol_next_question(_sol_context(questions=everything[:1]))
    assert plan["question"] is not None and plan["done_asking"] is False


def test_terras_canon_review_resolves_the_questions_routed_to_its_lens_citing_the_admitted_research():
    from discovery.agents.providers.offline import terra_canon_review

    plan = terra_canon_review(
        {
            "charter": {"version": 1, "content": {"main_thrust": "M"}, "source_refs": []},
            "dossier": {"claims": [], "scratchpad": []},
            "lens_questions": [
                {"id": "q1", "kind": "question", "question": "Is the tide table consistent?", "raised_by": "luna"},
                {"id": "q2", "kind": "value-conflict", "question": "Which value holds?", "raised_by": "luna"},
            ],
            "research_decisions": [{"sequence": 7, "rationale": "A primary source."}],
        }
    )
    assert [(q["question_id"], q["cites"]) for q in plan["questions"]] == [("q1", "decision:7")], "a conflict is hers"
    assert any(f["text"].startswith("Open question: Is the tide") for f in plan["review"]["findings"])


def test_terras_brief_links_an_orphan_from_the_root_and_into_chapter_1():
    from discovery.agents.providers.offline import terra_brief

    orphan = {
        "node_id": "subplot-harbour",
        "kind": "subplot",
        "message": "subplot-harbour has no producer and is not a chapter and has no consumer",
        "root": "premise",
        "leaf_kind": "chapter",
    }
    plan = terra_brief(
        {
            "book": {"title": "T", "premise": "P", "genre_pack": "mystery"},
            "charter": {"version": 1, "content": {}},
            "dossier": {"claims": []},
            "thrusts": [],
            "trace": [{"node_id": "premise", "kind": "premise"}, {"node_id": "subplot-harbour", "kind": "subplot"}],
            "orphans": [orphan],
        }
    )
    edges = {(e["from_id"], e["to_id"]) for e in plan["edges"]}
    assert {("premise", "subplot-harbour"), ("subplot-harbour", "chapter-1")} <= edges


def test_a_confirmation_that_changes_no_charter_field_asks_for_no_new_version():
    from discovery.agents.providers.offline import _charter_would_change, terra_charter

    context = _sol_context(
        thrusts=[],
        confirmed_observations=[{"id": "o1", "key": "protagonist name", "value": "Mara", "created_at": "5"}],
    )
    drafted = {k: v for k, v in terra_charter(context)["charter"].items() if k != "source_refs"}
    same = {**context, "charters": [{"status": "approved", "version": 2, "fields": drafted, "created_at": "4"}]}
    assert _charter_would_change(same) is False
    other = {**drafted, "central_conflict": "Something she never said."}
    changed = {**context, "charters": [{"status": "approved", "version": 2, "fields": other, "created_at": "4"}]}
    assert _charter_would_change(changed) is True
