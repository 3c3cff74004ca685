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
    # Swagger UI parses the whole OpenAPI document (about 160 KB) before it draws: on a loaded machine that
    # takes longer than the default wait, so wait for the state with a generous ceiling.
    page.locator(".swagger-ui .opblock").first.wait_for(timeout=60_000)

    assert page.locator(".swagger-ui .opblock").count() >= 50, "every operation is listed"
    assert page.js_errors == []


def test_the_admin_works_without_a_policy_violation(page):
    UserFactory(username="root", is_staff=True, is_superuser=True)
    page.goto("/login/")
    log_in(page, "root", PASSWORD)

    page.goto("/admin/library/knowledgesource/add/")
    page.get_by_label("Title").fill("A source from the admin")
    page.locator("form#knowledgesource_form").wait_for()

    assert page.js_errors == []
