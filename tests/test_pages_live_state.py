"""Live and honest state: an in-place decision updates the status pill (and triggers the badges' refresh);
a verdict sent against a state that changed meanwhile says so and records nothing."""

from __future__ import annotations

import json
import re

import pytest

from approvals.models import Approval, DecisionLogEntry

from .approval_subjects import propose_charter
from .pages_support import TOKEN, csrf_browser

pytestmark = pytest.mark.django_db


def test_an_in_place_decision_updates_the_status_pill_and_tells_the_badges(author, book):
    charter = propose_charter(book)
    browser = csrf_browser(author)
    page = f"/review/{charter.approval_id}/"
    token = TOKEN.search(browser.get(page).content.decode()).group(1)
    response = browser.post(
        page,
        {"verdict": "approve", "rationale": "It holds.", "csrfmiddlewaretoken": token},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert json.loads(response["HX-Trigger"]) == {"approvals-changed": {}}, "the nav badge and the inbox refresh"
    html = response.content.decode()
    assert re.search(r'<span id="approval-status" class="badge ok"[^>]*hx-swap-oob="true"[^>]*>decided</span>', html)


def test_a_verdict_from_a_second_tab_after_the_first_decided_says_so_and_records_nothing(author, book):
    charter = propose_charter(book)
    page = f"/review/{charter.approval_id}/"
    first, second = csrf_browser(author), csrf_browser(author)
    second_token = TOKEN.search(second.get(page).content.decode()).group(1)  # the second tab is open
    first_token = TOKEN.search(first.get(page).content.decode()).group(1)
    assert (
        first.post(page, {"verdict": "approve", "rationale": "Yes.", "csrfmiddlewaretoken": first_token}).status_code
        == 302
    )

    late = second.post(page, {"verdict": "reject", "rationale": "No.", "csrfmiddlewaretoken": second_token})
    assert late.status_code == 409
    html = late.content.decode()
    assert re.search(r"Already approved by ada at \d\d:\d\d; nothing was recorded\.", html)
    assert DecisionLogEntry.objects.filter(book=book).count() == 1
    assert Approval.objects.get(pk=charter.approval_id).verdict == "approve"

    htmx = second.post(
        page, {"verdict": "reject", "rationale": "No.", "csrfmiddlewaretoken": second_token}, HTTP_HX_REQUEST="true"
    )
    assert htmx.status_code == 409  # in place too, a refusal answers as the API does
    assert "nothing was recorded" in htmx.content.decode() and 'hx-swap-oob="true"' in htmx.content.decode()
    assert json.loads(htmx["HX-Trigger"]) == {"approvals-changed": {}}  # decided elsewhere: the counts moved


def test_an_in_place_research_admission_tells_the_review_badge_and_the_badge_listens(author, book):
    from discovery.access import book_access
    from library.schemas import ResearchIn
    from library.services import research_propose
    from novelgraph.core.auth import principal_for_user

    item = research_propose(
        access=book_access(principal_for_user(author), book),
        payload=ResearchIn(url="https://example.org/t", title="Tide tables", claim="06:12.", citation="Almanac"),
    )
    browser = csrf_browser(author)
    page = f"/books/{book.pk}/research/"
    html = browser.get(page).content.decode()
    # The review badge in the nav counts the admission, and refreshes itself on a decision or a finished run.
    assert 'aria-label="1 pending decision"' in html
    assert 'hx-trigger="approvals-changed from:body, agents-finished from:body"' in html
    token = TOKEN.search(html).group(1)
    response = browser.post(
        f"/books/{book.pk}/research/{item.pk}/decide/",
        {"verdict": "approve", "rationale": "The almanac holds.", "csrfmiddlewaretoken": token},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert json.loads(response["HX-Trigger"]) == {"approvals-changed": {}}
    assert "pending decision" not in browser.get("/review/?nav=1", HTTP_HX_REQUEST="true").content.decode()
    assert Approval.objects.get(pk=item.approval_id).status == "decided"
