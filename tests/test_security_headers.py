"""Content-Security-Policy: only our own scripts, styles and images, on every page, the admin and the API docs."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from novelgraph.core.security import CONTENT_SECURITY_POLICY

from .factories import PASSWORD, UserFactory

EXPECTED = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'"
)


def directives(header: str) -> dict[str, tuple[str, ...]]:
    """A policy as {directive: sources}: django-csp may send the directives in another order."""
    parsed = {}
    for part in header.split(";"):
        name, *sources = part.split()
        parsed[name] = tuple(sources)
    return parsed


def assert_policy(response) -> None:
    assert directives(response["Content-Security-Policy"]) == directives(EXPECTED)


SCRIPT_TAG = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S | re.I)


def inline_scripts(html: str) -> list[str]:
    """Script elements that would execute inline code (JSON data blocks do not execute)."""
    found = []
    for attrs, body in SCRIPT_TAG.findall(html):
        if "src=" in attrs or 'type="application/json"' in attrs:
            continue
        if body.strip():
            found.append(body.strip()[:80])
    return found


def assert_strict(response) -> str:
    assert_policy(response)
    html = response.content.decode()
    assert inline_scripts(html) == []
    assert not re.search(r"\son[a-z]+=", html), "no inline event handlers"
    assert not re.search(r"""<(script|link)[^>]+(src|href)=["']https?://""", html), "no third-party assets"
    return html


@pytest.fixture
def staff_browser(db):
    user = UserFactory(username="root", is_staff=True, is_superuser=True)
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_the_policy_is_the_documented_one():
    from csp.utils import build_policy

    assert CONTENT_SECURITY_POLICY == EXPECTED
    assert directives(build_policy()) == directives(EXPECTED), "django-csp's setting is the documented policy"


def test_the_login_page_carries_the_policy_and_no_inline_script(client, db):
    assert_strict(client.get("/login/"))


def test_the_home_page_carries_the_policy(author_browser, book):
    response = author_browser.get("/")
    assert response.status_code == 200
    html = assert_strict(response)
    assert "The Tide Clock" in html


def test_api_responses_carry_the_policy_too(author_api):
    response = author_api.get("/books")
    assert_policy(response)


def test_the_api_docs_work_under_the_strict_policy_with_vendored_swagger(author_browser):
    response = author_browser.get("/api/v1/docs")
    assert response.status_code == 200
    html = assert_strict(response)
    # Swagger UI is served from our own static files (no CDN: there is no internet at run time).
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "/static/ninja/swagger-ui-init.js" in html
    assert author_browser.get("/api/v1/openapi.json").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/admin/",
        "/admin/discovery/book/",
        "/admin/library/knowledgesource/add/",
        "/admin/approvals/decisionlogentry/",
        "/admin/auth/user/add/",
    ],
)
def test_admin_pages_run_without_inline_script(staff_browser, path):
    response = staff_browser.get(path)
    assert response.status_code == 200
    assert_strict(response)


def test_error_pages_carry_the_policy(author_browser):
    response = author_browser.get("/no/such/page/")
    assert response.status_code == 404
    assert_policy(response)


def test_frames_and_sniffing_are_refused(client, db):
    response = client.get("/login/")
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
