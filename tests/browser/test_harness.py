"""The browser harness itself: Debian's Chromium reaches the live server and logs in."""

from __future__ import annotations

import pytest

from ..factories import PASSWORD, UserFactory
from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_person_logs_in_and_lands_on_their_books(page, screenshot):
    UserFactory(username="walker")
    page.goto("/")
    assert "/login/" in page.url
    screenshot(page, "login")
    log_in(page, "walker", PASSWORD)
    assert page.get_by_role("heading", level=1).inner_text() == "Your books"
    assert page.js_errors == []
