"""Everything that waits for the author is in one inbox (issue 26): her decisions, the observations drawn from
her turns to confirm (with "Confirm all from this turn"), the loop's questions routed to her. An editor's inbox
says what waits for the author, never "for you", and an editor's turns read as an editor's notes."""

from __future__ import annotations

import pytest

from discovery.models import DiscoverySession, Observation, Turn

from .loop_scenes import ask_gate, started_book, url  # noqa: F401 (the book, its discovery started)
from .pages_support import csrf_browser, submit

pytestmark = pytest.mark.django_db


def waiting_scene(book, author_api, luna_api, sol_api):
    session = DiscoverySession.objects.get(book=book)
    r = author_api.post(
        f"/sessions/{session.pk}/turns",
        {
            "role": "author",
            "content": "The keeper is Mara Quell, and nobody believes her.",
            "observations": [{"key": "protagonist", "value": "Mara Quell", "provenance": "author-stated"}],
        },
    )
    assert r.status_code == 201, r.json()
    asked = luna_api.post(
        url(book, "/questions"), {"question": "Which tide table does the harbour keep?", "target_discipline": "author"}
    )
    assert asked.status_code == 201, asked.json()
    card = ask_gate(sol_api, book, "G0", summary="Ratify the premise: why this book exists")
    assert card.status_code == 201, card.json()
    return Turn.objects.get(session=session, role="author"), asked.json()["id"], card.json()["approval_id"]


def test_her_inbox_holds_her_decisions_the_observations_to_confirm_and_her_questions(
    book, author, author_api, luna_api, sol_api
):
    turn, question_id, approval_id = waiting_scene(book, author_api, luna_api, sol_api)
    browser = csrf_browser(author)
    html = browser.get("/review/").content.decode()
    assert "What waits for you" in html
    assert f'href="/review/{approval_id}/"' in html
    # Her own observations are listed by turn, with their actions (confirm, correct, retire, all from the turn).
    assert 'data-testid="waiting-observations"' not in html, "her own observations are not listed twice"
    observations = html.split('data-testid="observations-waiting"', 1)[1].split("</section>", 1)[0]
    assert "<strong>Protagonist</strong>: Mara Quell" in observations and "your turn 1" in observations
    assert f'href="/books/{book.pk}/#turn-{turn.pk}"' in observations
    questions = html.split('data-testid="waiting-questions"', 1)[1].split("</section>", 1)[0]
    assert "Which tide table does the harbour keep?" in questions and "asked by Luna" in questions
    assert f'href="/books/{book.pk}/loop/#question-{question_id}"' in questions
    # The question's anchor is the loop page's answer form.
    assert f'id="question-{question_id}"' in browser.get(f"/books/{book.pk}/loop/").content.decode()

    # She confirms from the inbox itself.
    confirm = f"/books/{book.pk}/turns/{turn.pk}/confirm/"
    assert f'action="{confirm}"' in observations
    r = submit(browser, "/review/", confirm, {})
    assert r.status_code == 302
    assert list(Observation.objects.filter(turn=turn).values_list("status", flat=True)) == ["confirmed"]
    html = browser.get("/review/").content.decode()
    assert (
        "Mara Quell" not in html.split('data-testid="observations-waiting"', 1)[1].split("</section>")[0]
    )


def test_an_editors_inbox_says_what_waits_for_the_author_and_her_turns_are_editors_notes(
    book, editor, author_api, luna_api, sol_api
):
    waiting_scene(book, author_api, luna_api, sol_api)
    browser = csrf_browser(editor)
    html = browser.get("/review/").content.decode()
    assert "What waits for the author" in html and "for you" not in html.lower()
    observations = html.split('data-testid="waiting-observations"', 1)[1].split("</section>", 1)[0]
    assert "Protagonist: Mara Quell" in observations and "waits for the author" in observations
    assert "Confirm all from this turn" not in observations, "only the author confirms"
    assert "(waits for the author)" in html.split('aria-labelledby="pending-heading"', 1)[1]

    page = f"/books/{book.pk}/"
    r = submit(
        browser, page, f"/books/{book.pk}/turns/", {"content": "Chapter two drags; cut the storm.", "next": "book"}
    )
    assert r.status_code == 302
    assert Turn.objects.filter(session__book=book, role="editor").exists()
    shown = browser.get(page).content.decode()
    assert "Editor&#x27;s note</span>" in shown
    assert "Editor&#x27;s note</span>" in browser.get(f"/books/{book.pk}/scratchpad/").content.decode()
