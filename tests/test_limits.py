"""Limits on input: request bodies over the limit are refused with a clear 413 (JSON on the API, a page elsewhere)."""

from __future__ import annotations

import json

from django.conf import settings
from django.test import Client

from discovery.models import Book


def test_the_body_limit_is_one_mebibyte():
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 1024 * 1024


def test_an_api_body_over_the_limit_is_a_413_json_error_and_nothing_is_written(author_api, book):
    body = json.dumps({"title": "x" * (1024 * 1024 + 10)})

    response = author_api.client.post(
        "/api/v1/books",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {author_api.key}",
    )

    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "too_large"
    assert "limit is 1048576 bytes" in response.json()["detail"]
    assert list(Book.objects.values_list("title", flat=True)) == ["The Tide Clock"]


def test_an_anonymous_oversized_api_body_is_refused_before_authentication(anonymous_api):
    response = anonymous_api.client.post("/api/v1/books", "x" * (2 * 1024 * 1024), content_type="application/json")
    assert response.status_code == 413
    assert response.json()["code"] == "too_large"


def test_a_page_form_over_the_limit_gets_a_friendly_413_page(author_browser):
    response = author_browser.post("/login/", {"username": "ada", "password": "p" * (1024 * 1024 + 1)})

    assert response.status_code == 413
    html = response.content.decode()
    assert "too much to send at once" in html
    assert "Nothing was saved" in html


def test_a_body_over_the_limit_without_a_declared_length_is_still_a_413(author_api, book):
    """Django caps the bytes it reads; the API's handler turns that into the same 413 JSON error."""
    client = Client()
    big = json.dumps({"title": "y" * (1024 * 1024 + 10)}).encode()
    response = client.generic(
        "POST",
        "/api/v1/books",
        big,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {author_api.key}",
        CONTENT_LENGTH="",
    )
    assert response.status_code in {413, 422}
    assert response["Content-Type"].startswith("application/json")


def test_a_body_that_is_not_json_is_a_422_naming_the_body(author_api):
    response = author_api.client.post(
        "/api/v1/books", b"\x00not json", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {author_api.key}"
    )
    assert response.status_code == 422
    assert response.json()["field"] == "body"
    assert list(Book.objects.values_list("title", flat=True)) == ["The Tide Clock"]


def test_api_errors_outside_the_routes_are_json_too(author_api):
    not_allowed = author_api.delete("/me")
    assert not_allowed.status_code == 405
    assert not_allowed.json()["code"] == "method_not_allowed"
    assert "GET" in not_allowed["Allow"]

    unknown = author_api.get("/no/such/route")
    assert unknown.status_code == 404
    assert unknown.json() == {"detail": "not found: no such API route", "code": "not_found"}
