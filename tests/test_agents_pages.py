"""The agents in the browser: buttons where the author wants them, the run's progress in place
(HTMX), results in the scratchpad, every entry and proposal naming the run, provider and model
that produced it, and empty states that say what the agents will do."""

from __future__ import annotations

import json

import pytest

from discovery.agents.models import AgentRun

from .agents_support import start_run, work_off_queue
from .conftest import Api

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def started(author_api, book):
    return author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]


def test_the_book_page_offers_the_agents_and_says_what_they_will_do(author_browser, book, started):
    html = author_browser.get(f"/books/{book.pk}/").content.decode()

    for button in (
        "Ask Sol for the next question",
        "Send Luna to look for guidance on…",
        "Ask Terra for thrust candidates",
        "Ask Terra for a charter draft",
    ):
        assert button in html
    assert "No agent has run on this book yet. Start one with the buttons above" in html
    assert "Terra drafts them (core, stretch, wild)" in html and "Ask Terra for a charter draft” under Agents" in html


def test_an_editor_sees_the_runs_but_no_buttons_and_cannot_start_one(editor_browser, book, started):
    html = editor_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()

    assert "Ask Sol for the next question" not in html and "The author starts them." in html
    response = editor_browser.post(f"/books/{book.pk}/agents/start/", {"task": "thrusts"}, **HTMX)
    assert response.status_code == 403 and not AgentRun.objects.exists()


def test_asking_sol_shows_the_run_in_place_until_it_is_done(author_browser, book, started):
    response = author_browser.post(
        f"/books/{book.pk}/agents/start/", {"task": "next-question", "next": f"/books/{book.pk}/"}, **HTMX
    )

    assert response.status_code == 200
    run = AgentRun.objects.get()
    html = response.content.decode()
    assert 'data-status="queued"' in html and 'hx-trigger="every 2s"' in html and f"watch={run.pk}" in html
    work_off_queue()
    polled = author_browser.get(f"/books/{book.pk}/agents/?limit=6&watch={run.pk}", **HTMX)
    html = polled.content.decode()
    assert 'data-status="done"' in html and "every 2s" not in html
    assert json.loads(polled["HX-Trigger"]) == {"agents-finished": {}}


def test_a_run_still_running_keeps_the_page_polling(author_browser, book, started):
    data = start_run(Api(author_browser), book, "thrusts")
    AgentRun.objects.filter(pk=data["id"]).update(status="running")

    polled = author_browser.get(f"/books/{book.pk}/agents/?watch={data['id']}", **HTMX)

    assert 'data-status="running"' in polled.content.decode() and "every 2s" in polled.content.decode()
    assert "HX-Trigger" not in polled


def test_sending_luna_without_a_topic_says_so_in_place(author_browser, book, started):
    response = author_browser.post(f"/books/{book.pk}/agents/start/", {"task": "guidance", "topic": " "}, **HTMX)

    assert response.status_code == 422 and "topic:" in response.content.decode()
    assert not AgentRun.objects.exists()


def test_without_javascript_a_button_posts_and_comes_back(author_browser, book, started):
    response = author_browser.post(
        f"/books/{book.pk}/agents/start/", {"task": "guidance", "topic": "fair clues", "next": f"/books/{book.pk}/"}
    )

    assert response.status_code == 302 and response["Location"] == f"/books/{book.pk}/"
    elsewhere = author_browser.post(
        f"/books/{book.pk}/agents/start/", {"task": "thrusts", "next": "https://example.org/"}
    )
    assert elsewhere["Location"] == f"/books/{book.pk}/agents/"


def test_entries_and_proposals_say_which_run_wrote_them(author_browser, author_api, luna_api, book, started):
    start_run(author_api, book, "guidance", topic="fair play and clues")
    start_run(author_api, book, "thrusts")
    start_run(author_api, book, "charter")
    work_off_queue()
    luna_api.post(f"/sessions/{started}/scratchpad", {"kind": "question", "content": "Asked from outside."})

    scratchpad = author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()
    assert "Written by Luna's run · literary-guidance" in scratchpad
    assert "rules-1" not in scratchpad, "the provider's model is on the runs page, not among the entries"
    assert "Written by Luna through the API" in scratchpad
    book_page = author_browser.get(f"/books/{book.pk}/").content.decode()
    assert "terra</span>'s run</span>" in book_page
    assert "terra</span>'s run (<a href=" in book_page


def test_the_scratchpad_says_what_the_agents_will_do_before_any_has_run(author_browser, book, started):
    html = author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()

    assert "no agent has run on this book yet" in html and "start them with the buttons under Agents above" in html
    assert 'hx-trigger="agents-finished from:body"' in html
    assert "Sol reads it when you ask for the next question" in html


def test_the_runs_page_shows_every_run_its_dossier_and_why_a_failed_one_wrote_nothing(
    author_browser, author_api, terra_api, book, started
):
    handoff = author_api.post(f"/books/{book.pk}/handoffs", {"to_role": "terra", "decision": "Draft."}).json()
    start_run(author_api, book, "thrusts")
    start_run(author_api, book, "charter", handoff_id=handoff["id"])
    terra_api.post(f"/handoffs/{handoff['id']}/result", {"facts": [{"text": "Answered from outside first."}]})
    work_off_queue()

    html = author_browser.get(f"/books/{book.pk}/agents/").content.decode()

    done = AgentRun.objects.get(task="thrusts")
    assert f'href="/books/{book.pk}/dossiers/{done.dossier_id}/"' in html
    assert "Why it failed" in html and "this handoff was already returned" in html
    assert html.count('class="agent-run"') == 4  # two in the panel, two in the details


def test_the_review_page_says_which_run_asked_for_the_decision(author_browser, author_api, book, started):
    start_run(author_api, book, "charter")
    work_off_queue()
    run = AgentRun.objects.get()
    approval_id = run.outputs.get(type="approval").object_id

    html = author_browser.get(f"/review/{approval_id}/").content.decode()

    assert "Terra</span>'s run (<a href=" in html and f"#details-{run.pk}" in html
