"""Steering the discovery in the browser, through the same services as the API (CSRF enforced):
write a charter version from the current one, compare two versions, answer Sol's question from the
book page, pick a candidate saying why not the others, answer the loop question routed to the author."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from approvals.models import Approval
from discovery.loop.models import Candidate, OpenQuestion, PlanNode
from discovery.models import Book, StoryCharter, Turn
from novelgraph.core.services import api_key_create

from .approval_subjects import propose_charter
from .conftest import Api
from .factories import DiscoverySessionFactory
from .loop_scenes import url
from .pages_support import csrf_browser, submit

pytestmark = pytest.mark.django_db
DEMO_PASSWORD = "novelgraph-author"


def charter_form(**changes) -> dict:
    form = {
        "main_thrust": "A keeper must prove a drowning was murder.",
        "reader_promise": "a fair-play puzzle\na keeper who lies to protect",
        "protagonist": "name: Mara\nflaw: lies to protect her sister",
        "central_conflict": "The sea erases evidence faster than she can find it.",
        "thematic_questions": "",
        "constraints": "",
        "productive_unknowns": "who wrote the letter",
        "rejected_directions": "",
        "genre_contract": "",
        "narrative_form": "",
        "ending_horizon": "",
    }
    form.update(changes)
    return form


def test_the_author_writes_a_charter_version_starting_from_the_current_one(author, book):
    first = propose_charter(book)
    browser = csrf_browser(author)
    page = f"/books/{book.pk}/charters/new/"
    shown = browser.get(page).content.decode()
    assert "Starting from version 1" in shown
    assert first.content["main_thrust"] in shown, "the form starts from the current version"

    response = submit(browser, page, page, charter_form(ending_horizon="The letter is burned unread."))
    second = StoryCharter.objects.get(book=book, version=2)
    assert response.status_code == 302 and response["Location"].endswith(f"#charter-{second.pk}")
    assert second.proposed_by == "author" and second.status == "proposed"
    assert second.content["reader_promise"] == ["a fair-play puzzle", "a keeper who lies to protect"]
    assert second.content["protagonist"] == {"name": "Mara", "flaw": "lies to protect her sister"}
    assert "thematic_questions" not in second.content, "blank optional fields are not stored"
    assert Approval.objects.get(pk=second.approval_id).status == "pending", "it binds only once approved"


def test_a_charter_without_a_reader_promise_is_refused_inline_and_kept(author, book):
    page = f"/books/{book.pk}/charters/new/"
    response = submit(csrf_browser(author), page, page, charter_form(reader_promise="  "))
    assert response.status_code == 422
    html = response.content.decode()
    assert 'role="alert"' in html and "reader_promise" in html
    assert "A keeper must prove a drowning was murder." in html, "what she wrote is kept"
    assert not StoryCharter.objects.filter(book=book).exists()


def test_an_editor_sees_no_charter_form_and_may_not_propose(editor, book):
    page = f"/books/{book.pk}/charters/new/"
    browser = csrf_browser(editor)
    assert "Only the book's author writes" in browser.get(page).content.decode()
    response = submit(browser, page, page, charter_form())
    assert response.status_code == 403
    assert not StoryCharter.objects.filter(book=book).exists()


def test_two_versions_side_by_side_field_by_field(author_browser, book):
    propose_charter(book, thrust="The first thrust.")
    propose_charter(book, thrust="The second thrust.")
    html = author_browser.get(f"/books/{book.pk}/charters/compare/?a=1&b=2").content.decode()
    assert "The first thrust." in html and "The second thrust." in html
    assert 'data-testid="changed-count">1 field differs.' in html
    row = html.split('<th scope="row">Main thrust', 1)[1].split("</tr>", 1)[0]
    assert "changed" in row
    same = author_browser.get(f"/books/{book.pk}/charters/compare/?a=2&b=2").content.decode()
    assert 'data-testid="changed-count">0 fields differ.' in same


def test_the_author_answers_sols_question_from_the_book_page(author, book):
    session = DiscoverySessionFactory(book=book, current_question="Who does the reader trust at the end?")
    page = f"/books/{book.pk}/"
    assert 'name="next" value="book"' in csrf_browser(author).get(page).content.decode()
    response = submit(
        csrf_browser(author),
        page,
        f"/books/{book.pk}/turns/",
        {"content": "Nobody, until the last page.", "next": "book"},
    )
    turn = Turn.objects.get(session=session)
    assert response.status_code == 302 and response["Location"] == f"/books/{book.pk}/#turn-{turn.pk}"
    assert (turn.role, turn.content) == ("author", "Nobody, until the last page.")


@pytest.fixture
def demo_book(db) -> Book:
    call_command("demo", stdout=StringIO())
    return Book.objects.get(title="The Lighthouse Letter")


def test_the_loop_page_is_a_tab_of_the_book_and_answers_the_question_routed_to_her(demo_book):
    author = demo_book.owner
    question = OpenQuestion.objects.get(book=demo_book, target_discipline="author")
    page = f"/books/{demo_book.pk}/loop/"
    browser = csrf_browser(author, DEMO_PASSWORD)
    html = browser.get(page).content.decode()
    assert 'aria-label="This book"' in html and 'aria-current="page">Loop<' in html
    assert f'action="/books/{demo_book.pk}/loop/questions/{question.pk}/answer/"' in html

    refused = submit(browser, page, f"{page}questions/{question.pk}/answer/", {"resolution": " "})
    assert refused.status_code == 422 and 'role="alert"' in refused.content.decode()
    question.refresh_from_db()
    assert question.status == "routed"

    response = submit(
        browser, page, f"{page}questions/{question.pk}/answer/", {"resolution": "In chapter 2, on the tide log."}
    )
    assert response.status_code == 302
    question.refresh_from_db()
    assert question.status == "resolved" and question.resolution == "In chapter 2, on the tide log."
    assert question.resolution_ref == f"question:{question.pk}"
    again = submit(browser, page, f"{page}questions/{question.pk}/answer/", {"resolution": "Twice."})
    assert again.status_code == 404 or again.status_code == 409


@pytest.fixture
def sol_api_for_demo(demo_book) -> Api:
    return Api(Client(), api_key_create(owner=demo_book.owner, role="sol")[1])


def test_the_author_picks_a_candidate_and_says_why_not_the_others(demo_book, sol_api_for_demo):
    node = PlanNode.objects.get(book=demo_book, intent__startswith="How does the reader see")
    ids = []
    for mechanic in ("the tide log", "a second letter"):
        made = sol_api_for_demo.post(
            url(demo_book, f"/nodes/{node.pk}/candidates"),
            {"altitude": "book", "mechanic": mechanic, "shape": f"{mechanic} shows it", "riskiest_assumption": "r"},
        )
        assert made.status_code == 201, made.json()
        ids.append(made.json()["id"])
    page = f"/books/{demo_book.pk}/loop/"
    browser = csrf_browser(demo_book.owner, DEMO_PASSWORD)
    assert f'action="/books/{demo_book.pk}/loop/nodes/{node.pk}/pick/"' in browser.get(page).content.decode()

    refused = submit(browser, page, f"{page}nodes/{node.pk}/pick/", {"candidate_id": ids[0], "rationale": ""})
    assert refused.status_code == 422
    assert Candidate.objects.get(pk=ids[0]).status == "proposed"

    response = submit(
        browser,
        page,
        f"{page}nodes/{node.pk}/pick/",
        {"candidate_id": ids[0], "rationale": "A letter is one too many."},
    )
    assert response.status_code == 302
    chosen, other = Candidate.objects.get(pk=ids[0]), Candidate.objects.get(pk=ids[1])
    assert chosen.status == "selected"
    assert (other.status, other.rationale) == ("rejected", "A letter is one too many.")


def test_an_editor_may_not_pick_or_answer_on_the_loop_page(demo_book):
    from .factories import UserFactory

    editor = UserFactory(username="ed")
    demo_book.editors.add(editor)
    question = OpenQuestion.objects.get(book=demo_book, target_discipline="author")
    page = f"/books/{demo_book.pk}/loop/"
    browser = csrf_browser(editor)
    assert "/answer/" not in browser.get(page).content.decode()
    response = submit(browser, page, f"{page}questions/{question.pk}/answer/", {"resolution": "Mine."})
    assert response.status_code == 403
    question.refresh_from_db()
    assert question.status == "routed"
