"""Small helpers shared by the discovery tests (plain functions, no fixtures)."""

from __future__ import annotations

from discovery.models import DiscoverySession


def start(api, book) -> DiscoverySession:
    """Start the book's discovery through the API and return the session."""
    response = api.post(f"/books/{book.pk}/discovery")
    assert response.status_code in (200, 201), response.content
    return DiscoverySession.objects.get(pk=response.json()["session_id"])


def charter_body(**overrides) -> dict:
    return {
        "main_thrust": "A keeper must prove a drowning was murder.",
        "reader_promise": ["a fair-play puzzle"],
        "protagonist": {"name": "Mara", "want": "to be believed"},
        "central_conflict": "The harbour master wants the case closed.",
        **overrides,
    }


def thrust_body(**overrides) -> dict:
    return {
        "kind": "core",
        "title": "The keeper's doubt",
        "main_thrust": "A keeper must prove a drowning was murder.",
        "character_engine": "Her need to be believed versus her habit of lying.",
        "central_conflict": "The harbour master wants the case closed.",
        "reader_promise": ["a fair-play puzzle"],
        **overrides,
    }


def assert_forbidden(response, capability: str) -> None:
    assert response.status_code == 403, response.content
    assert capability in response.json()["detail"], response.json()
