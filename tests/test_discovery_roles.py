"""Route x role matrix: every capability is enforced by the server (invariant 2).

Each cell is either allowed (a 2xx) or refused with a 403 whose message names what is
missing. A book the caller may not touch is a 404; no key is a 401.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from .discovery_support import charter_body, start, thrust_body

pytestmark = pytest.mark.django_db

ROLES = ("author", "editor", "sol", "terra", "luna")


@dataclass
class Scene:
    book: object
    author_api: object
    sol_api: object

    @property
    def session(self):
        return start(self.author_api, self.book)

    def charter(self) -> str:
        self.session  # noqa: B018 (a session exists)
        return self.sol_api.post(f"/books/{self.book.pk}/charters", charter_body()).json()["id"]

    def claim(self) -> str:
        body = {
            "scope": "book",
            "scope_id": str(self.book.pk),
            "subject": "Mara",
            "predicate": "fears",
            "value": "water",
            "provenance": "agent-proposed",
        }
        return self.sol_api.post("/claims", body).json()["id"]

    def handoff(self) -> str:
        self.session  # noqa: B018
        body = {"to_role": "luna", "decision": "Find the places.", "statements": []}
        return self.sol_api.post(f"/books/{self.book.pk}/handoffs", body).json()["id"]


def _claim_body(scene: Scene) -> dict:
    return {
        "scope": "book",
        "scope_id": str(scene.book.pk),
        "subject": "Mara",
        "predicate": "fears",
        "value": "water",
        "provenance": "agent-proposed",
    }


# route name -> (method, builder(scene, role) -> (path, body), {role: None (allowed) | text the 403 names})
Builder = Callable[[Scene, str], tuple[str, dict | None]]
MATRIX: dict[str, tuple[str, Builder, dict[str, str | None]]] = {
    "read book": (
        "get",
        lambda s, r: (f"/books/{s.book.pk}", None),
        dict.fromkeys(ROLES),
    ),
    "start discovery": (
        "post",
        lambda s, r: (f"/books/{s.book.pk}/discovery", {}),
        {
            "author": None,
            "sol": None,
            "editor": "editor lacks discovery:write",
            "terra": "terra lacks discovery:write",
            "luna": "luna lacks discovery:write",
        },
    ),
    "read discovery": (
        "get",
        lambda s, r: (f"/books/{s.book.pk}/discovery", None),
        dict.fromkeys(ROLES),
    ),
    "write a turn": (
        "post",
        lambda s, r: (
            f"/sessions/{s.session.pk}/turns",
            {"role": r if r in ("author", "editor", "sol") else "author", "content": "A turn."},
        ),
        {
            "author": None,
            "editor": None,
            "sol": None,
            "terra": "terra lacks turn:write",
            "luna": "luna lacks turn:write",
        },
    ),
    "append to the scratchpad": (
        "post",
        lambda s, r: (f"/sessions/{s.session.pk}/scratchpad", {"kind": "question", "content": "Why?"}),
        {
            "sol": None,
            "terra": None,
            "luna": None,
            "author": "author lacks scratchpad:write",
            "editor": "editor lacks scratchpad:write",
        },
    ),
    "read the scratchpad": (
        "get",
        lambda s, r: (f"/sessions/{s.session.pk}/scratchpad", None),
        dict.fromkeys(ROLES),
    ),
    "propose a thrust": (
        "post",
        lambda s, r: (f"/sessions/{s.session.pk}/thrusts", thrust_body()),
        {
            "author": None,
            "sol": None,
            "terra": None,
            "editor": "editor lacks charter:propose",
            "luna": "luna lacks charter:propose",
        },
    ),
    "propose a charter": (
        "post",
        lambda s, r: (f"/books/{s.book.pk}/charters", charter_body()),
        {
            "author": None,
            "sol": None,
            "terra": None,
            "editor": "editor lacks charter:propose",
            "luna": "luna lacks charter:propose",
        },
    ),
    "resolve a charter": (
        "post",
        lambda s, r: (f"/charters/{s.charter()}/resolve", {"approved": True, "rationale": "Yes."}),
        {
            "author": None,
            "editor": "editor lacks decision:make",
            "sol": "sol lacks decision:make",
            "terra": "terra lacks decision:make",
            "luna": "luna lacks decision:make",
        },
    ),
    "propose a claim": (
        "post",
        lambda s, r: ("/claims", _claim_body(s)),
        {
            "author": None,
            "sol": None,
            "editor": "editor lacks canon:propose",
            "terra": "terra lacks canon:propose",
            "luna": "luna lacks canon:propose",
        },
    ),
    "request approval of a claim": (
        "post",
        lambda s, r: (f"/claims/{s.claim()}/request-approval", {"book_id": str(s.book.pk), "note": ""}),
        {
            "sol": None,
            "author": "author lacks approval:request",
            "editor": "editor lacks approval:request",
            "terra": "terra lacks approval:request",
            "luna": "luna lacks approval:request",
        },
    ),
    "promote a claim": (
        "post",
        lambda s, r: (f"/claims/{s.claim()}/promote", {"book_id": str(s.book.pk), "rationale": "Yes."}),
        {
            "author": None,
            "editor": "editor lacks decision:make",
            "sol": "sol lacks decision:make",
            "terra": "terra lacks decision:make",
            "luna": "luna lacks decision:make",
        },
    ),
    "reject a claim": (
        "post",
        lambda s, r: (f"/claims/{s.claim()}/reject", {"book_id": str(s.book.pk), "rationale": "No."}),
        {
            "author": None,
            "editor": "editor lacks decision:make",
            "sol": "sol lacks decision:make",
            "terra": "terra lacks decision:make",
            "luna": "luna lacks decision:make",
        },
    ),
    "take a dossier for one's own role": (
        "post",
        lambda s, r: (
            f"/books/{s.session.book_id}/dossiers",
            {"agent_role": r if r in ("sol", "terra", "luna") else "luna"},
        ),
        {"author": None, "sol": None, "terra": None, "luna": None, "editor": "editor lacks discovery:write"},
    ),
    "take Sol's dossier": (
        "post",
        lambda s, r: (f"/books/{s.session.book_id}/dossiers", {"agent_role": "sol"}),
        {
            "author": None,
            "sol": None,
            "terra": "terra may take only its own dossier",
            "luna": "luna may take only its own dossier",
            "editor": "editor lacks discovery:write",
        },
    ),
    "list dossiers": (
        "get",
        lambda s, r: (f"/books/{s.book.pk}/dossiers", None),
        dict.fromkeys(ROLES),
    ),
    "hand off": (
        "post",
        lambda s, r: (
            f"/books/{s.session.book_id}/handoffs",
            {"to_role": "terra", "decision": "Check the ending.", "statements": []},
        ),
        {
            "author": None,
            "sol": None,
            "editor": "editor lacks discovery:write",
            "terra": "terra lacks discovery:write",
            "luna": "luna lacks discovery:write",
        },
    ),
    "return a handoff to luna": (
        "post",
        lambda s, r: (f"/handoffs/{s.handoff()}/result", {"facts": [{"text": "North shore.", "source_refs": []}]}),
        {"luna": None, "author": "only luna", "editor": "only luna", "sol": "only luna", "terra": "only luna"},
    ),
    "read a handoff": (
        "get",
        lambda s, r: (f"/handoffs/{s.handoff()}", None),
        dict.fromkeys(ROLES),
    ),
}

CELLS = [(route, role) for route in MATRIX for role in ROLES]


@pytest.mark.parametrize(("route", "role"), CELLS, ids=[f"{route}-{role}" for route, role in CELLS])
def test_route_role_matrix(request, route, role, book, author_api, sol_api):
    method, build, expected = MATRIX[route]
    scene = Scene(book=book, author_api=author_api, sol_api=sol_api)
    path, body = build(scene, role)
    api = request.getfixturevalue(f"{role}_api")
    response = api.get(path) if method == "get" else api.post(path, body)
    refusal = expected[role]
    if refusal is None:
        assert 200 <= response.status_code < 300, (route, role, response.content)
    else:
        assert response.status_code == 403, (route, role, response.content)
        assert refusal in response.json()["detail"]
        assert response.json()["code"] in ("missing_capability", "not_target_role")


@pytest.mark.parametrize("route", list(MATRIX))
def test_a_foreign_book_is_a_404_and_no_key_a_401(route, book, author_api, sol_api, outsider_api, anonymous_api):
    method, build, _ = MATRIX[route]
    scene = Scene(book=book, author_api=author_api, sol_api=sol_api)
    path, body = build(scene, "author")
    for api, status in ((outsider_api, 404), (anonymous_api, 401)):
        response = api.get(path) if method == "get" else api.post(path, body)
        if route == "propose a claim" and api is outsider_api:
            status = 404  # the base belongs to a book she cannot reach
        assert response.status_code == status, (route, response.content)
        assert "Mara" not in response.content.decode() and book.title not in response.content.decode()
