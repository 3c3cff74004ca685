"""What every API route refuses before any service sees it: NUL characters and non-finite numbers."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_a_nul_character_anywhere_in_a_body_is_a_422_naming_the_field(author_api, book):
    session = author_api.post(f"/books/{book.pk}/discovery").json()
    body = {
        "role": "author",
        "content": "fine",
        "observations": [{"key": "k", "value": "a\x00b", "provenance": "author-stated"}],
    }
    response = author_api.post(f"/sessions/{session['session_id']}/turns", body)
    assert response.status_code == 422
    assert response.json()["field"] == "observations.0.value"
    assert book.sessions.get().turns.count() == 0


def test_a_nul_character_in_a_query_string_is_a_422(author_api, book):
    response = author_api.get("/library/search", q="fair\x00play")
    assert response.status_code == 422
    assert response.json()["field"] == "q"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(author_api, book, constant):
    session = author_api.post(f"/books/{book.pk}/discovery").json()
    raw = '{"kind": "hypothesis", "content": "x", "confidence": ' + constant + ', "source_refs": []}'
    response = author_api.client.post(
        f"/api/v1/sessions/{session['session_id']}/scratchpad",
        raw,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {author_api.key}",
    )
    assert response.status_code == 422
    assert response.json()["code"] == "invalid"
