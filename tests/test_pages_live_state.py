"""Live and honest state: an in-place decision updates the status pill (and triggers the badges' refresh);
a verdict sent against a state that changed meanwhile says so and records nothing."""

from __future__ import annotations

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
    assert response["HX-Trigger"] == "approvals-changed", "the nav badge and the inbox refresh themselves"
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
    assert "nothing was recorded" in htmx.content.decode() and 'hx-swap-oob="true"' in htmx.content.decode()
