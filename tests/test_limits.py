"""Limits on input: request bodies over the limit are refused with a clear 413 (JSON on the API, a page elsewhere)."""

from __future__ import annotations

import functools
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
    assert "script-src 'self'" in response["Content-Security-Policy"]


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


# --- Pagination on every list route, text lengths, source references ------------------------------


@functools.cache
def _schema() -> dict:
    """The API's OpenAPI schema, built once per test process: building it takes seconds (every route's models),
    and the list-route walks below read it once per route. The routes are fixed when the module is imported, so
    every call built the same schema. Read only."""
    from novelgraph.api import api

    return api.get_openapi_schema()


def _list_routes() -> list[str]:
    schema = _schema()
    routes = []
    for path, methods in schema["paths"].items():
        get = methods.get("get")
        names = {p["name"] for p in (get or {}).get("parameters", []) if p["in"] == "query"}
        if {"limit", "offset"} <= names:
            routes.append(path.removeprefix("/api/v1"))
    return routes


# A list route's required query parameters, as the scene fills them (the page parameters are checked beside them).
REQUIRED_QUERY = {"node": "premise"}


def _trace_premise(book, sol_api) -> dict:
    """The traceability node the cascade routes start from (``REQUIRED_QUERY``), and a queued re-run (the route
    of its slots names it): the ids they add to the scene."""
    from discovery.loop.models import LensRerun

    made = sol_api.post(f"/books/{book.pk}/loop/trace/nodes", {"node_id": "premise", "kind": "premise"})
    assert made.status_code == 201, made.content
    rerun = LensRerun.objects.create(book=book, lens="reader-trust", artifacts=["premise"], reason="stale")
    # A list a verdict records (GET /approvals/{approval_id}/lists/{name}).
    return {"rerun_id": rerun.pk, "name": "contradictions"}


def _required(route: str) -> dict:
    get = _schema()["paths"]["/api/v1" + route]["get"]
    query = [p for p in get.get("parameters", []) if p["in"] == "query" and p.get("required")]
    return {p["name"]: REQUIRED_QUERY[p["name"]] for p in query}


def _array_routes_without_pagination() -> list[str]:
    schema = _schema()
    bare = []
    for path, methods in schema["paths"].items():
        get = methods.get("get")
        if not get:
            continue
        ok = get["responses"].get("200", {}).get("content", {}).get("application/json", {}).get("schema", {})
        if ok.get("type") == "array":
            bare.append(path)
    return bare


def test_no_list_route_returns_a_bare_unpaginated_array():
    assert _array_routes_without_pagination() == []
    assert len(_list_routes()) >= 15


def test_every_list_route_refuses_a_page_larger_than_200(author_api, book, sol_api):
    from .security_scene import build_scene

    ids = build_scene(book, sol_api)
    ids.update(_trace_premise(book, sol_api))
    checked = []
    for route in _list_routes():
        path = route
        for name, value in ids.items():
            path = path.replace("{" + name + "}", str(value))
        required = _required(route)
        too_big = author_api.get(path, limit=100000, **required)
        assert too_big.status_code == 422, (route, too_big.status_code)
        assert too_big.json()["field"] == "limit", route
        fine = author_api.get(path, limit=200, **required)
        assert fine.status_code == 200, (route, fine.status_code, fine.content[:200])
        assert set(fine.json()) == {"items", "count"}, route
        assert author_api.get(path, limit=0, **required).status_code == 422, route
        checked.append(route)
    assert len(checked) == len(_list_routes())
    # search ranks rather than lists (no offset), but its page is bounded too
    assert author_api.get("/library/search", q="tide", limit=100000).status_code == 422


def test_every_list_route_answers_a_huge_offset_with_a_422_naming_it(author_api, book, sol_api):
    """A 20-digit offset cannot reach the database (it would overflow its 64-bit integers): 422, on both backends."""
    from novelgraph.core.pagination import MAX_OFFSET

    from .security_scene import build_scene

    ids = build_scene(book, sol_api)
    ids.update(_trace_premise(book, sol_api))
    for route in _list_routes():
        path = route
        for name, value in ids.items():
            path = path.replace("{" + name + "}", str(value))
        required = _required(route)
        for offset in ("9223372036854775808", "9223372036854775807", "99999999999999999999999", str(MAX_OFFSET + 1)):
            huge = author_api.get(path, offset=offset, **required)
            assert huge.status_code == 422, (route, offset, huge.status_code)
            assert huge.json()["field"] == "offset", route
        far = author_api.get(path, offset=MAX_OFFSET, **required)
        assert far.status_code == 200, (route, far.status_code)
        assert far.json()["items"] == [], route


def test_the_review_pages_survive_a_huge_page_number(author_browser, book):
    for prefix in ("/review/?", f"/review/?book={book.pk}&", f"/review/books/{book.pk}/log/?"):
        for page in ("99999999999999999999999", "9223372036854775808", "-5", "two"):
            url = f"{prefix}page={page}"
            response = author_browser.get(url)
            assert response.status_code == 200, url
            assert response["Content-Type"].startswith("text/html")


def test_default_page_is_50_and_count_is_the_total(author_api, author):
    from .factories import BookFactory

    for n in range(60):
        BookFactory(owner=author, title=f"Book {n:02d}")
    page = author_api.get("/books").json()
    assert len(page["items"]) == 50
    assert page["count"] == 61
    assert len(author_api.get("/books", offset=50).json()["items"]) == 11


def test_text_fields_have_maximum_lengths(author_api, luna_api, book):
    from .factories import DiscoverySessionFactory

    session = DiscoverySessionFactory(book=book)
    turn = author_api.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "x" * 50_001})
    assert turn.status_code == 422 and turn.json()["field"] == "content"
    title = author_api.post("/books", {"title": "t" * 10_000})
    assert title.status_code == 422 and title.json()["field"] == "title"
    note = luna_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": "n" * 200_000})
    assert note.status_code == 422 and note.json()["field"] == "content"
    assert not session.turns.exists()


def test_source_references_per_entry_are_capped(luna_api, book):
    import uuid

    from .factories import DiscoverySessionFactory

    session = DiscoverySessionFactory(book=book)
    refs = [{"type": "chunk", "id": str(uuid.uuid4())} for _ in range(51)]
    response = luna_api.post(
        f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": "Too many refs?", "source_refs": refs}
    )
    assert response.status_code == 422
    assert response.json()["field"].startswith("source_refs")
    assert not session.scratchpad.exists()


def test_every_operation_with_a_body_documents_the_413():
    """Found by make fuzz: a generated 1 MiB chunk got the (correct) 413, which the schema did not list."""
    missing = [
        f"{method.upper()} {path}"
        for path, methods in _schema()["paths"].items()
        for method, operation in methods.items()
        if "requestBody" in operation and "413" not in {str(code) for code in operation["responses"]}
    ]
    assert missing == []
