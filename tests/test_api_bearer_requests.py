"""API requests with a bearer key skip the browser's middleware; session-cookie API calls keep CSRF.

A bearer key is sent on purpose by its holder, never added by a browser to a cross-site request, so a bearer
call needs no CSRF token and gets no session. A call riding the session cookie is the one CSRF protects.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from discovery.models import DiscoverySession
from novelgraph.core.services import api_key_create

from .factories import PASSWORD

pytestmark = pytest.mark.django_db

CSRF_TOKEN = "k" * 32


@pytest.fixture
def key(author):
    return api_key_create(owner=author, role="author")[1]


@pytest.fixture
def browser(author):
    """The author's browser, logged in, with Django's CSRF checks on (the test client turns them off)."""
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=author.username, password=PASSWORD)
    return client


def test_a_bearer_post_needs_no_csrf_token_and_sets_no_cookie(key, book):
    client = Client(enforce_csrf_checks=True)

    response = client.post(f"/api/v1/books/{book.pk}/discovery", HTTP_AUTHORIZATION=f"Bearer {key}")

    assert response.status_code == 201, response.content
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")
    assert DiscoverySession.objects.filter(book=book).count() == 1


def test_a_session_cookie_api_post_without_a_csrf_token_is_refused(browser, book):
    response = browser.post(f"/api/v1/books/{book.pk}/discovery")

    assert response.status_code == 403, response.content
    assert response.json()["code"] == "error" and "CSRF" in response.json()["detail"]
    assert not DiscoverySession.objects.exists()


def test_a_session_cookie_api_post_with_its_csrf_token_is_served(browser, book):
    browser.cookies[settings.CSRF_COOKIE_NAME] = CSRF_TOKEN

    response = browser.post(f"/api/v1/books/{book.pk}/discovery", HTTP_X_CSRFTOKEN=CSRF_TOKEN)

    assert response.status_code == 201, response.content
    assert DiscoverySession.objects.filter(book=book).count() == 1


def test_an_unknown_bearer_key_does_not_fall_back_to_the_session_cookie(browser, book):
    response = browser.get("/api/v1/me", HTTP_AUTHORIZATION="Bearer ng_not-a-key")

    assert response.status_code == 401
    assert browser.get("/api/v1/me").json()["username"] == "ada"


def test_a_bearer_request_gets_no_session_and_no_messages_while_a_cookie_request_does(browser, key):
    bearer = browser.get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {key}")
    cookie = browser.get("/api/v1/me")

    assert bearer.status_code == cookie.status_code == 200
    assert not hasattr(bearer.wsgi_request, "session") and not hasattr(bearer.wsgi_request, "_messages")
    assert hasattr(cookie.wsgi_request, "session") and hasattr(cookie.wsgi_request, "_messages")


def test_pages_keep_the_session_even_when_a_bearer_header_is_sent(browser, key):
    response = browser.get("/keys/", HTTP_AUTHORIZATION=f"Bearer {key}")

    assert response.status_code == 200
    assert response.context["user"].username == "ada"


def test_a_deploy_without_csrf_protection_is_still_warned(settings):
    from novelgraph.core.checks import csrf_middleware_check

    assert csrf_middleware_check() == []
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if "Csrf" not in m]

    assert [warning.id for warning in csrf_middleware_check()] == ["novelgraph.W003"]
