"""Under the strict Content-Security-Policy, the API docs (vendored Swagger UI) and the admin work in Chromium."""

from __future__ import annotations

import pytest

from tests.factories import PASSWORD, UserFactory

from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_render_without_a_policy_violation(page):
    UserFactory(username="ada")
    page.goto("/login/")
    log_in(page, "ada", PASSWORD)

    page.goto("/api/v1/docs")
    # Swagger UI builds 70 operations from the schema in the browser: on a loaded machine that takes
    # longer than the context's 10 s default, so the wait for that state gets a wider bound.
    page.locator(".swagger-ui .opblock").first.wait_for(timeout=60_000)

    assert page.locator(".swagger-ui .opblock").count() >= 50, "every operation is listed"
    assert page.js_errors == []


def test_the_admin_works_without_a_policy_violation(page):
    UserFactory(username="root", is_staff=True, is_superuser=True)
    page.goto("/login/")
    log_in(page, "root", PASSWORD)

    page.goto("/admin/discovery/book/add/")
    page.get_by_label("Title").fill("A book from the admin")
    page.locator("#changelist-filter, form#book_form").first.wait_for()

    assert page.js_errors == []
