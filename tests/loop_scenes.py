"""Scenes for the loop tests: build a book's loop state through the API, as the agents would."""

from __future__ import annotations

import pytest

from discovery.loop.models import BlackboardArtifact, LoopMeta


def url(book, tail: str = "") -> str:
    return f"/books/{book.pk}/loop{tail}"


def a_thrust(book) -> str:
    """An open thrust candidate of the book (G1.5 ratifies one): the newest, or a new one."""
    from discovery.models import DiscoverySession, ThrustCandidate

    from .factories import ThrustCandidateFactory

    open_ = ThrustCandidate.objects.filter(session__book=book, status__in=["proposed", "selected"])
    thrust = open_.order_by("-created_at").first()
    if thrust is None:
        session = DiscoverySession.objects.filter(book=book).order_by("-created_at").first()
        thrust = ThrustCandidateFactory(**({"session": session} if session else {"session__book": book}))
    return str(thrust.pk)


def a_governing_charter(book) -> None:
    """An approved Story Charter version (G2 ratifies one), unless the book has one: proposed by Sol and
    approved by the book's author through the services (so the decision log records it)."""
    from approvals.services import approval_decide
    from discovery.access import book_access
    from discovery.models import StoryCharter
    from novelgraph.core.auth import principal_for_user

    from .approval_subjects import propose_charter

    if not StoryCharter.objects.filter(book=book, status="approved").exists():
        charter = propose_charter(book)
        approval_decide(
            access=book_access(principal_for_user(book.owner), book),
            approval_id=charter.approval_id,
            verdict="approve",
            rationale="The charter the loop's G2 ratifies.",
        )


def ask_gate(api, book, gate: str, **extra):
    body = {
        "summary": f"ratify {gate}",
        "decisions_requested": ["ratify the slots"],
        "recommended": "approve",
        "reversibility_class": "reversible",
    }
    if gate == "G1.5" and "thrust_id" not in extra:
        body["thrust_id"] = a_thrust(book)
    body.update(extra)
    return api.post(url(book, f"/gates/{gate}/request"), body)


def decide(api, book, approval_id, verdict: str, rationale: str = "Seen and agreed.", constraint: str = ""):
    return api.post(
        url(book, f"/approvals/{approval_id}/verdict"),
        {"verdict": verdict, "rationale": rationale, "constraint": constraint},
    )


def trace(api, book, nodes: list[tuple[str, str]], edges: list[tuple[str, str]], lens: str = ""):
    """Nodes and edges drawn by ``api``'s caller; each node signed by the caller, or by ``lens`` (one of its own)."""
    for node_id, kind in nodes:
        r = api.post(url(book, "/trace/nodes"), {"node_id": node_id, "kind": kind, "produced_by": lens})
        assert r.status_code == 201, r.json()
    for a, b in edges:
        r = api.post(url(book, "/trace/edges"), {"from_id": a, "to_id": b})
        assert r.status_code == 201, r.json()


def clean_chain(api, book) -> None:
    """premise -> story question -> chapter: a graph the strict lint passes."""
    trace(
        api,
        book,
        [("premise", "premise"), ("sq", "story-question"), ("ch1", "chapter")],
        [("premise", "sq"), ("sq", "ch1")],
    )


def pass_gate(sol_api, author_api, book, gate: str) -> None:
    r = ask_gate(sol_api, book, gate)
    assert r.status_code in (200, 201), r.json()
    if r.status_code == 201:
        d = decide(author_api, book, r.json()["approval_id"], "approve")
        assert d.status_code == 200, d.json()


def reach_g2(sol_api, author_api, book) -> None:
    for gate in ("G0", "G1", "G1.5"):
        pass_gate(sol_api, author_api, book, gate)
    assert LoopMeta.objects.get(book=book).gate == "G2"


def review(api, book, lens: str, gate: str = "G2"):
    r = api.post(
        url(book, "/reviews"),
        {"lens": lens, "gate": gate, "findings": [{"text": "a promise", "resolution": "resolved", "reason": "paid"}]},
    )
    assert r.status_code == 201, r.json()
    return r


def saturate(sol_api, luna_api, terra_api, book) -> None:
    """Both required lenses reviewed, a clean chain, one full round without invalidation, and an
    approved Story Charter version for G2 to ratify."""
    a_governing_charter(book)
    clean_chain(sol_api, book)
    review(terra_api, book, "canon-integrity")  # the roster names Terra (she reads series canon)
    review(luna_api, book, "reader-trust")  # and Luna for reader trust: two distinct lenses
    r = sol_api.post(url(book, "/rounds"), {})
    assert r.status_code == 200, r.json()


def at_g3(book, sol_api, author_api, luna_api, terra_api, brief: dict | None = None):
    """At G3; with ``brief``, a decision brief written before G2 and ratified by the author's G2 verdict."""
    reach_g2(sol_api, author_api, book)
    saturate(sol_api, luna_api, terra_api, book)
    if brief is None:
        pass_gate(sol_api, author_api, book, "G2")
        return
    r = sol_api.post(url(book, "/artifacts"), {"slug": "decision-brief", "type": "decision-brief", "content": brief})
    assert r.status_code == 201, r.json()
    r = ask_gate(sol_api, book, "G2", artifacts=["decision-brief"])
    assert r.status_code == 201, r.json()
    assert decide(author_api, book, r.json()["approval_id"], "approve").status_code == 200
    assert BlackboardArtifact.objects.get(book=book, slug="decision-brief").status == "ratified"


def start_discovery(book) -> None:
    """Start the book's discovery through the API, as its author: that is when its loop begins (G0)."""
    from django.test import Client

    from novelgraph.core.services import api_key_create

    from .conftest import Api

    api = Api(Client(), api_key_create(owner=book.owner, role="author")[1])
    r = api.post(f"/books/{book.pk}/discovery")
    assert r.status_code in (200, 201), r.content
    assert LoopMeta.objects.filter(book=book).exists()


@pytest.fixture(name="book")
def started_book(book):
    """The scene's book with its discovery started (so with its loop at G0). Import it into a loop test module."""
    start_discovery(book)
    return book
