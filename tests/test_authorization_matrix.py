"""The authorisation matrix: every API operation and every page, called by every kind of caller.

Built FROM the API's OpenAPI document and the project's URL patterns: a route without an entry in
``API_EXPECTED`` / ``PAGE_EXPECTED`` fails ``test_every_route_has_an_entry``. Callers, in this
order (refused callers first, so the permitted ones act on an untouched scene):

    anon        no key
    revoked     the author's personal key, revoked
    other       the author of another book (her personal key)
    staff       a superuser's personal key (staff curate the library; they own no book)
    elsewhere   the author's personal key limited to her other book
    luna_else, terra_else, sol_else   the author's agent keys limited to her other book
    luna, terra, sol   the author's agent keys
    editor      the book's editor (personal key)
    author      the book's author (personal key)

Each cell is the expected status. Beyond the status, every call is checked for what it let the
caller see and change:
- anon and revoked get 401 everywhere;
- to every caller who may not touch the book (other, staff, elsewhere and the agent keys limited elsewhere) it is
  invisible:
  nothing about it answers 2xx, and no response contains its id or title;
- no response to Luna contains the book's series canon (she lacks series:read);
- a refused call (any 4xx) and every GET leave the database exactly as it was (every table hashed).
``ACCOUNT_ACTIONS`` adds what staff (and everyone else) can do to the author's account: nobody but
her sets, resets or disables her password, makes her a set-password link or changes her e-mail address.
To regenerate the table after an intended change: ``NOVELGRAPH_MATRIX_RECORD=1 pytest <this file> -s``,
then review every changed cell before pasting it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from discovery.loop.models import ValidationPlanItem
from discovery.models import KnowledgeBase, KnowledgeLink
from novelgraph.api import api
from novelgraph.core.services import api_key_create, api_key_revoke

from .dbstate import rows_written
from .factories import (
    PASSWORD,
    BookFactory,
    KnowledgeChunkFactory,
    KnowledgeClaimFactory,
    ResearchItemFactory,
    UserFactory,
)
from .security_scene import build_scene

CALLERS = [
    "anon",
    "revoked",
    "other",
    "staff",
    "elsewhere",
    "luna_else",
    "terra_else",
    "sol_else",
    "luna",
    "terra",
    "sol",
    "editor",
    "author",
]
STRANGERS = {"other", "staff", "elsewhere", "luna_else", "terra_else", "sol_else"}
SERIES_SECRET = "the lamp was lit by the drowned"
RECORD = os.environ.get("NOVELGRAPH_MATRIX_RECORD") == "1"


@functools.cache
def api_operations() -> list[tuple[str, str, dict]]:
    schema = api.get_openapi_schema()
    ops = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            ops.append((method.upper(), path.removeprefix("/api/v1"), operation))
    return ops


def page_patterns() -> list[str]:
    found = []

    def walk(patterns, prefix=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                if str(p.pattern) in {"admin/", "api/v1/"}:
                    continue
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                found.append("/" + prefix + str(p.pattern))

    walk(get_resolver().url_patterns)
    return found


# --- Request bodies: the smallest body the schema accepts, ids taken from the scene ------------

SCHEMA = None
FIELD_IDS = {"book_id": "book_id", "parent_id": "node_id", "candidate_id": "candidate_id", "scope_id": "book_id"}
FIELD_VALUES = {
    "scope": "book",
    "target_discipline": "sol",
    "role": "author",
    "agent_role": "luna",
    "to_role": "luna",
    "provenance": "agent-inferred",
    "url": "https://example.org/tides",
    "protagonist": {"name": "Mara"},
    # A verdict (typed: the first choice would be approve) that the scene's charter approval does not take: the
    # author's 422 writes nothing, where approve would decide (or lapse) the approval in the middle of the matrix.
    "verdict": "extend",
}


def _resolve(node: dict) -> dict:
    while "$ref" in node:
        node = SCHEMA["components"]["schemas"][node["$ref"].split("/")[-1]]
    return node


def sample(node: dict, name: str, ids: dict):
    node = _resolve(node)
    if name in FIELD_IDS and FIELD_IDS[name] in ids:
        return str(ids[FIELD_IDS[name]])
    if name in FIELD_VALUES:
        return FIELD_VALUES[name]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in node:
            options = [o for o in node[key] if _resolve(o).get("type") != "null"]
            return sample(options[0], name, ids)
    if "enum" in node:
        return node["enum"][0]
    if "const" in node:
        return node["const"]
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        return {k: sample(v, k, ids) for k, v in props.items() if k in node.get("required", [])}
    if kind == "array":
        return [sample(node.get("items", {}), name, ids) for _ in range(node.get("minItems", 0))]
    if kind == "integer":
        return max(node.get("minimum", 1), 1)
    if kind == "number":
        return max(node.get("minimum", 1), 1)
    if kind == "boolean":
        return False
    if node.get("format") == "uuid":
        return str(uuid.uuid4())
    return "a" * max(node.get("minLength", 1), 12)


def body_for(operation: dict, ids: dict) -> dict | None:
    content = operation.get("requestBody", {}).get("content", {})
    if "application/json" not in content:
        return None
    return sample(content["application/json"]["schema"], "body", ids)


# --- The scene and the callers --------------------------------------------------------------------


@pytest.fixture
def scene(author, editor, outsider, book, other_book, sol_api, monkeypatch, research_site):
    # Research from a URL collects the local test site's page (reached through the test-only allow list).
    monkeypatch.setitem(FIELD_VALUES, "url", f"{research_site.base}/page")
    # A key records when it was used at most once a minute; the matrix runs longer than a minute, so that
    # once-a-minute write is moved out of its way (the check below is that refusals and reads write nothing).
    monkeypatch.setattr("novelgraph.core.auth.KEY_USE_RESOLUTION", timedelta(days=1))
    ids = build_scene(book, sol_api)
    node = ids.get("node_id")
    if node:
        made = sol_api.post(
            f"/books/{book.pk}/loop/nodes/{node}/candidates",
            {"altitude": "book", "mechanic": "m", "shape": "s", "riskiest_assumption": "r"},
        )
        if made.status_code == 201:
            ids["candidate_id"] = made.json()["id"]
    ids["item_id"] = ResearchItemFactory(book=book).pk
    ids["chunk_id"] = KnowledgeChunkFactory(source_id=ids["source_id"]).pk  # the library's pages open a real chunk
    ids["topic"] = "pacing"
    ids["name"] = "contradictions"  # a list a verdict records (GET /approvals/{approval_id}/lists/{name})
    # Series canon that Luna must never read, with a promotion waiting for the author.
    series = KnowledgeBase.objects.create(scope="series", owner_id=str(book.series_id), name="Series canon")
    KnowledgeLink.objects.create(book=book, base=series, relation="series-canon")
    secret = KnowledgeClaimFactory(base=series, subject="The lamp", predicate="was lit by", value=SERIES_SECRET)
    assert sol_api.post(f"/claims/{secret.pk}/request-approval", {"book_id": str(book.pk)}).status_code == 201
    elsewhere = BookFactory(owner=author, title="The author's other book")
    staff = UserFactory(username="root", is_staff=True, is_superuser=True)
    revoked, revoked_raw = api_key_create(owner=author, role="author")
    api_key_revoke(key=revoked)
    keys = {
        "revoked": revoked_raw,
        "other": api_key_create(owner=outsider, role="author")[1],
        "staff": api_key_create(owner=staff, role="author")[1],
        "elsewhere": api_key_create(owner=author, role="author", books=[elsewhere])[1],
        "luna_else": api_key_create(owner=author, role="luna", books=[elsewhere])[1],
        "terra_else": api_key_create(owner=author, role="terra", books=[elsewhere])[1],
        "sol_else": api_key_create(owner=author, role="sol", books=[elsewhere])[1],
        "luna": api_key_create(owner=author, role="luna")[1],
        "terra": api_key_create(owner=author, role="terra")[1],
        "sol": api_key_create(owner=author, role="sol")[1],
        "editor": api_key_create(owner=editor, role="author")[1],
        "author": api_key_create(owner=author, role="author")[1],
    }
    ids["key_id"] = api_key_create(owner=author, role="luna")[0].pk
    # A second editor, whom the author may remove (the scene's editor keeps her access for the other rows).
    second_editor = UserFactory(username="second-editor")
    book.editors.add(second_editor)
    ids["user_id"] = second_editor.pk
    return ids, keys, book


def call_api(keys: dict, caller: str, method: str, path: str, body):
    headers = {} if caller == "anon" else {"HTTP_AUTHORIZATION": f"Bearer {keys[caller]}"}
    client = Client()
    if method == "GET":
        return client.get(f"/api/v1{path}", **headers)
    data = json.dumps(body if body is not None else {})
    return client.generic(method, f"/api/v1{path}", data, content_type="application/json", **headers)


def fill(path: str, ids: dict) -> str:
    def value(match):
        name = match.group(1).split(":")[-1]
        return str(ids.get(name, uuid.uuid4()))

    return re.sub(r"[{<]([^}>]+)[}>]", value, path)


def body_text(response) -> str:
    """The body of a response, streamed or not (read once, then kept on the response)."""
    if not hasattr(response, "_matrix_text"):
        raw = b"".join(response.streaming_content) if response.streaming else response.content
        response._matrix_text = raw.decode(errors="replace")
    return response._matrix_text


def assert_no_leak(response, book) -> None:
    text = body_text(response)
    assert str(book.pk) not in text and book.title not in text, f"leaks the book: {text[:300]}"


# --- The expected table (recorded, then reviewed) -------------------------------------------------

# Columns: anon, revoked, other, staff, elsewhere, luna_else, terra_else, sol_else, luna, terra, sol, editor, author
API_EXPECTED: dict[str, tuple[int, ...]] = {
    "GET /me": (401, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
    "POST /series": (401, 401, 201, 201, 403, 403, 403, 403, 403, 403, 403, 201, 201),
    "POST /books": (401, 401, 201, 201, 403, 403, 403, 403, 403, 403, 403, 201, 201),
    "GET /books": (401, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
    # Only the author, as a person, changes her book (the scene's loop is at G0: a new premise reopens nothing).
    "PATCH /books/{book_id}": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    "GET /books/{book_id}": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/editors": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 422),
    "DELETE /books/{book_id}/editors/{user_id}": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 204),
    "POST /books/{book_id}/discovery": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 200, 403, 200),
    "GET /books/{book_id}/discovery": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/turns": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/sessions": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/thrusts": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/scratchpad": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /sessions/{session_id}/turns": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /sessions/{session_id}/turns": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 201),
    "GET /sessions/{session_id}/observations": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /sessions/{session_id}/thrusts": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /sessions/{session_id}/thrusts": (401, 401, 404, 404, 404, 404, 404, 404, 403, 201, 201, 403, 201),
    "GET /books/{book_id}/charters": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/charters": (401, 401, 404, 404, 404, 404, 404, 404, 403, 201, 201, 403, 201),
    "GET /books/{book_id}/observations": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/canon": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/author-constraints": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/knowledge-bases": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /sessions/{session_id}/scratchpad": (401, 401, 404, 404, 404, 404, 404, 404, 201, 201, 201, 403, 403),
    "GET /sessions/{session_id}/scratchpad": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /sessions/{session_id}/question": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 422, 403, 422),
    "POST /sessions/{session_id}/question/close": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 200, 403, 200),
    "GET /sessions/{session_id}/questions": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /turns/{turn_id}/observations": (401, 401, 404, 404, 404, 404, 404, 404, 201, 201, 201, 403, 201),
    "POST /observations/{observation_id}/resolve": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    "GET /observations/{observation_id}": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /observations/{observation_id}/revisions": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /charters/{charter_id}/resolve": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    "POST /claims": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 201, 403, 201),
    "POST /claims/{claim_id}/request-approval": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 201, 403, 403),
    "POST /claims/{claim_id}/story": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 200, 403, 200),
    "GET /books/{book_id}/claims/{claim_id}/conflicts": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        200,
        200,
        200,
        200,
        200,
    ),
    "POST /claims/{claim_id}/promote": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    "POST /claims/{claim_id}/reject": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 409),
    "POST /claims/{claim_id}/supersede": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    # 409 for the author: the supersede row before it has just replaced the scene's claim (no longer canon).
    "POST /claims/{claim_id}/retract": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 409),
    "POST /books/{book_id}/dossiers": (401, 401, 404, 404, 404, 404, 404, 404, 201, 403, 403, 403, 201),
    "GET /books/{book_id}/dossiers": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /dossiers/{dossier_id}": (401, 401, 404, 404, 404, 404, 404, 404, 200, 403, 403, 200, 200),
    "GET /books/{book_id}/codex": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/codex/chapters": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/chapters": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/chapters": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 201),
    "GET /books/{book_id}/codex/entries": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    # Sol proposes an entry (issue 28); the scene's name is taken, so his and the author's are a 422.
    "POST /books/{book_id}/codex/entries": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 422, 403, 422),
    # No chapter named: the bible is as of the chapter the reader has reached, never a default (422).
    "GET /books/{book_id}/bible": (401, 401, 404, 404, 404, 404, 404, 404, 422, 422, 422, 422, 422),
    "GET /books/{book_id}/bible/links": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    "POST /books/{book_id}/bible/links": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 201),
    "DELETE /books/{book_id}/bible/links/{link_id}": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 404),
    # A person's own notifications (issue 29): the author's and the editor's each; no agent key has an inbox.
    "GET /books/{book_id}/notifications": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 200, 200),
    "PUT /books/{book_id}/notifications": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 200, 200),
    # The series bible: series access is book access (the scene's book is in the series); Luna reads no series
    # material. No book or chapter named: 422, as for the book's bible; the smallest link body names no book of it.
    "GET /series/{series_id}/bible": (401, 401, 404, 404, 404, 404, 404, 404, 403, 422, 422, 422, 422),
    "GET /series/{series_id}/bible/links": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    "POST /series/{series_id}/bible/links": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 422),
    "DELETE /series/{series_id}/bible/links/{link_id}": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        403,
        403,
        403,
        404,
    ),
    "PATCH /books/{book_id}/codex/entries/{entry_id}": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        403,
        403,
        403,
        200,
    ),
    "PATCH /books/{book_id}/chapters/{number}": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    "PUT /books/{book_id}/chapters/{number}/text": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 201),
    "GET /books/{book_id}/chapters/{number}/text": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/chapters/{number}/revisions": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        200,
        200,
        200,
        200,
        200,
    ),
    "GET /books/{book_id}/chapters/{number}/compare": (401, 401, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422),
    "POST /books/{book_id}/manuscript": (401, 401, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422),
    "POST /books/{book_id}/chapters/{number}/findings": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        201,
        403,
        403,
        403,
        403,
    ),
    "GET /books/{book_id}/continuity": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/promises": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/continuity/{finding_id}/settle": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        403,
        403,
        403,
        409,
    ),
    "POST /books/{book_id}/chapters/{number}/check": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 202, 403, 202),
    "GET /books/{book_id}/codex/claims": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/codex/withheld": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/codex/findings": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/codex/claims/{claim_id}/history": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        200,
        200,
        200,
        200,
        200,
    ),
    "GET /books/{book_id}/codex/claims/{claim_id}/versions": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        200,
        200,
        200,
        200,
        200,
    ),
    "GET /books/{book_id}/codex/claims/{claim_id}/decisions": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        200,
        200,
        200,
        200,
        200,
    ),
    "POST /books/{book_id}/handoffs": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 201, 403, 201),
    "POST /handoffs/{handoff_id}/result": (401, 401, 404, 404, 404, 404, 404, 404, 422, 422, 422, 422, 422),
    "GET /handoffs/{handoff_id}": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /handoffs/{handoff_id}/result-entries": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/loop": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/loop/constraints": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/loop/nodes": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/loop/nodes": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 201, 403, 201),
    "PATCH /books/{book_id}/loop/nodes/{node_id}": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 200, 403, 200),
    "GET /books/{book_id}/loop/nodes/{node_id}/candidates": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        200,
        200,
        200,
        200,
        200,
    ),
    "POST /books/{book_id}/loop/nodes/{node_id}/candidates": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        201,
        201,
        201,
        403,
        201,
    ),
    "POST /books/{book_id}/loop/nodes/{node_id}/select": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        403,
        200,
        403,
        409,
    ),
    "GET /books/{book_id}/loop/questions": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/loop/questions": (401, 401, 404, 404, 404, 404, 404, 404, 201, 201, 201, 403, 201),
    "POST /books/{book_id}/loop/questions/{question_id}/route": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        403,
        200,
        403,
        200,
    ),
    "POST /books/{book_id}/loop/questions/{question_id}/resolve": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        422,
        422,
        422,
        403,
        422,
    ),
    "POST /books/{book_id}/loop/questions/{question_id}/surface": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        403,
        200,
        403,
        200,
    ),
    "GET /books/{book_id}/loop/trace/nodes": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/loop/trace/nodes": (401, 401, 404, 404, 404, 404, 404, 404, 201, 409, 409, 403, 409),
    "GET /books/{book_id}/loop/trace/edges": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/loop/trace/edges": (401, 401, 404, 404, 404, 404, 404, 404, 201, 409, 409, 403, 409),
    "POST /books/{book_id}/loop/trace/nodes/{trace_node}/withdraw": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        404,
    ),
    # Luna's node (above) is signed hers, so she withdraws the edge she drew from it; it is then gone for the others.
    "POST /books/{book_id}/loop/trace/edges/withdraw": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        200,
        404,
        404,
        403,
        404,
    ),
    "GET /books/{book_id}/loop/validation": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/loop/validation": (401, 401, 404, 404, 404, 404, 404, 404, 201, 201, 201, 403, 201),
    # Terra is refused before the item is looked up: the validation plan is not hers to move (SIGNED_INPUT below).
    "POST /books/{book_id}/loop/validation/{item_id}/status": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        404,
        403,
        404,
    ),
    "POST /books/{book_id}/loop/trace/settings": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 200, 403, 200),
    "GET /books/{book_id}/loop/lint": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/loop/missing": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/loop/lint/findings": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/loop/cascade-preview": (401, 401, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422),
    "GET /books/{book_id}/loop/cascade-preview/affected": (
        401,
        401,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
    ),
    "GET /books/{book_id}/loop/cascade-stale": (401, 401, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422),
    "GET /books/{book_id}/loop/cascade-stale/artifacts": (
        401,
        401,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
        422,
    ),
    "GET /books/{book_id}/loop/artifacts": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/loop/artifacts": (401, 401, 404, 404, 404, 404, 404, 404, 201, 201, 201, 403, 201),
    "GET /books/{book_id}/loop/reviews": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/loop/reviews": (401, 401, 404, 404, 404, 404, 404, 404, 422, 422, 422, 403, 422),
    "GET /books/{book_id}/loop/reruns": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/loop/reruns/{rerun_id}/artifacts": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
    ),
    "POST /books/{book_id}/loop/reruns/{rerun_id}/done": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        404,
    ),
    "POST /books/{book_id}/loop/rounds": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 200, 403, 200),
    "POST /books/{book_id}/loop/cost": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 200, 403, 200),
    "GET /books/{book_id}/loop/cards": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /books/{book_id}/loop/gates/{gate}/request": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        403,
        201,
        403,
        409,
    ),
    "POST /books/{book_id}/loop/approvals/{approval_id}/verdict": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        403,
        403,
        403,
        404,
    ),
    "GET /books/{book_id}/loop/export": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    # The preview needs its gate (422 before anything is looked up); the scene's book is not handed off, so the
    # author's reopen is a 409 (tests/test_discovery_reopen.py reopens a handed-off one).
    "GET /books/{book_id}/reopen": (401, 401, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422),
    "POST /books/{book_id}/reopen": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 409),
    "POST /books/{book_id}/loop/import": (401, 401, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422),
    "POST /books/{book_id}/agent-runs": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 202, 403, 202),
    "GET /books/{book_id}/agent-runs": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /agent-runs/{run_id}": (401, 401, 404, 404, 404, 404, 404, 404, 200, 404, 404, 200, 200),
    "GET /agent-runs/{run_id}/written": (401, 401, 404, 404, 404, 404, 404, 404, 200, 404, 404, 200, 200),
    "GET /library/search": (401, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/search": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /library/sources": (401, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
    "POST /library/sources": (401, 401, 201, 409, 409, 403, 403, 403, 403, 403, 403, 409, 409),
    "GET /library/sources/{source_id}": (401, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
    "GET /library/sources/{source_id}/chunks": (401, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
    "POST /library/sources/{source_id}/chunks": (401, 401, 201, 201, 201, 403, 403, 403, 403, 403, 403, 201, 201),
    "POST /books/{book_id}/research": (401, 401, 404, 404, 404, 404, 404, 404, 201, 201, 201, 403, 201),
    "PUT /books/{book_id}/webhook": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    # The PUT row before registered it (the matrix's rows share one scene).
    "GET /books/{book_id}/webhook": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    "POST /books/{book_id}/research/from-url": (401, 401, 404, 404, 404, 404, 404, 404, 201, 201, 201, 403, 201),
    "POST /books/{book_id}/research/collect": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 202, 403, 202),
    "GET /books/{book_id}/research": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "POST /research/{research_id}/admit": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 200),
    "POST /research/{research_id}/reject": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 409),
    "GET /approvals": (401, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
    "GET /approvals/{approval_id}": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /approvals/{approval_id}/lists/{name}": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /approvals/{approval_id}/superseded-versions": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        200,
        200,
        200,
        200,
        200,
    ),
    "POST /approvals/{approval_id}/verdict": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 422),
    "GET /books/{book_id}/decision-log": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/decision-log/verify": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
    "GET /books/{book_id}/decision-log/export": (401, 401, 404, 404, 404, 404, 404, 404, 200, 200, 200, 200, 200),
}
# Columns: anon, other, staff, editor, author (browser sessions)
PAGE_EXPECTED: dict[str, tuple[int, ...]] = {
    "/login/": (200, 200, 200, 200, 200),
    "/logout/": (405, 405, 405, 405, 405),
    "/set-password/<uidb64>/<token>/": (200, 200, 200, 200, 200),
    "/password-reset/": (200, 200, 200, 200, 200),
    "/password-reset/sent/": (200, 200, 200, 200, 200),
    "/password-reset/<uidb64>/<token>/": (200, 200, 200, 200, 200),
    "/keys/": (302, 200, 200, 200, 200),
    "/keys/<uuid:key_id>/revoke/": (302, 405, 405, 405, 405),
    "/review/": (302, 200, 200, 200, 200),
    "/review/<uuid:approval_id>/": (302, 404, 404, 200, 200),
    "/review/books/<uuid:book_id>/log/": (302, 404, 404, 200, 200),
    "/library/": (302, 200, 200, 200, 200),
    "/library/chunks/<str:chunk_id>/": (302, 200, 200, 200, 200),
    "/library/topics/": (302, 200, 200, 200, 200),
    "/library/topics/<path:topic>/": (302, 200, 200, 200, 200),
    "/library/sources/": (302, 200, 200, 200, 200),
    "/library/sources/<uuid:source_id>/": (302, 200, 200, 200, 200),
    "/books/<uuid:book_id>/search/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/research/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/research/<uuid:item_id>/decide/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/research/from-url/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/research/collect/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/webhook/": (302, 404, 404, 403, 200),
    "/books/<uuid:book_id>/loop/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/agents/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/agents/start/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/agents/act/": (302, 405, 405, 405, 405),
    "/": (302, 200, 200, 200, 200),
    "/books/<uuid:book_id>/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/edit/": (302, 404, 404, 403, 200),
    "/books/<uuid:book_id>/discovery/start/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/scratchpad/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/turns/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/turns/<uuid:turn_id>/confirm/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/observations/<uuid:observation_id>/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/dossiers/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/dossiers/new/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/dossiers/<uuid:dossier_id>/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/codex/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/codex/entries/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/bible/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/bible.md": (302, 404, 404, 422, 422),
    "/books/<uuid:book_id>/bible/links/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/bible/links/<uuid:link_id>/revoke/": (302, 405, 405, 405, 405),
    "/bible/shared/<str:token>/": (404, 404, 404, 404, 404),
    "/bible/shared/<str:token>/bible.md": (404, 404, 404, 404, 404),
    "/notifications/": (302, 200, 200, 200, 200),
    "/notifications/books/<uuid:book_id>/": (302, 405, 405, 405, 405),
    "/feeds/<str:token>/atom.xml": (404, 404, 404, 404, 404),
    "/series/<uuid:series_id>/bible/": (302, 404, 404, 200, 200),
    "/series/<uuid:series_id>/bible.md": (302, 404, 404, 422, 422),
    "/series/<uuid:series_id>/bible/links/": (302, 405, 405, 405, 405),
    "/series/<uuid:series_id>/bible/links/<uuid:link_id>/revoke/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/chapters/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/chapters/<int:number>/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/promises/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/chapters/<int:number>/findings/<uuid:finding_id>/settle/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/chapters/<int:number>/check/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/chapters/<int:number>/check/status/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/chapters/<int:number>/findings/<uuid:finding_id>/entry/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/codex/claims/<uuid:claim_id>/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/codex/claims/<uuid:claim_id>/supersede/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/codex/claims/<uuid:claim_id>/retract/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/codex/facts/": (302, 405, 405, 405, 405),
    "/series/new/": (302, 200, 200, 200, 200),
    "/books/new/": (302, 200, 200, 200, 200),
    "/books/<uuid:book_id>/people/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/people/<int:user_id>/remove/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/charters/new/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/charters/compare/": (302, 404, 404, 200, 200),
    "/books/<uuid:book_id>/loop/nodes/<uuid:node_id>/pick/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/loop/questions/<uuid:question_id>/answer/": (302, 405, 405, 405, 405),
    "/books/<uuid:book_id>/loop/hand-off/": (302, 405, 405, 405, 405),
    # The scene's book is not handed off: the author's reopen page says so (409) with the form's gate.
    "/books/<uuid:book_id>/reopen/": (302, 404, 404, 403, 409),
}


def test_every_route_has_an_entry():
    missing_api = [f"{m} {p}" for m, p, _ in api_operations() if f"{m} {p}" not in API_EXPECTED]
    missing_pages = [p for p in page_patterns() if p not in PAGE_EXPECTED]
    stale = [k for k in API_EXPECTED if k not in {f"{m} {p}" for m, p, _ in api_operations()}]
    assert not missing_api and not missing_pages and not stale, (missing_api, missing_pages, stale)


def test_every_api_operation_answers_each_caller_as_expected(scene):
    global SCHEMA
    SCHEMA = api.get_openapi_schema()
    ids, keys, book = scene
    observed, mismatches = {}, []
    for raw in keys.values():  # each key's first use records when it was used (at most once a minute)
        Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    for method, path, operation in api_operations():
        key = f"{method} {path}"
        body = body_for(operation, ids)
        row = []
        for caller in CALLERS:
            url = fill(path, ids)
            written = rows_written()
            response = call_api(keys, caller, method, url, body)
            row.append(response.status_code)
            assert response.status_code < 500, (key, caller, response.content[:300])
            if caller in {"anon", "revoked"}:
                assert response.status_code == 401, (key, caller, response.status_code)
            if caller in STRANGERS:
                book_route = "{book_id}" in path or any(
                    f"{{{n}}}" in path for n in ("session_id", "charter_id", "observation_id")
                )
                assert not (book_route and response.status_code < 300), (key, caller, "reached the book")
                assert_no_leak(response, book)
            if caller == "luna":
                assert SERIES_SECRET not in body_text(response), (key, "series canon to Luna")
            if method == "GET" or response.status_code >= 400:
                assert rows_written() == written, (key, caller, response.status_code, "wrote to the store")
        observed[key] = tuple(row)
        if not RECORD and API_EXPECTED.get(key) != tuple(row):
            mismatches.append(f"{key}: expected {API_EXPECTED.get(key)}, got {tuple(row)}")
    if RECORD:
        print("\nAPI_EXPECTED = {")
        for key, row in observed.items():
            print(f'    "{key}": {row},')
        print("}")
    assert not mismatches, "\n".join(mismatches)


# Rows for what a body may say about who made a record (issue 24): the route's row above sends the smallest body; these
# send the body an impostor would. Columns as API_EXPECTED. ``{caller}`` in a body is the caller's name.
TURN_ROLE = {"sol": "sol", "editor": "editor"}  # the role a caller's turn must name (the author's otherwise)
SIGNED_INPUT: dict[str, tuple[str, str, dict]] = {
    # An observation always enters working: the schema refuses any other status, for everyone (before access).
    "observation status confirmed on input": (
        "POST", "/sessions/{session_id}/turns",
        {"content": "Ines forged it.", "observations": [
            {"key": "forger", "value": "Ines", "provenance": "agent-inferred", "status": "confirmed"}]},
    ),
    # Only the author's own turns label an observation author-stated (Sol's and the editor's are a 422).
    "observation author-stated in the caller's own turn": (
        "POST", "/sessions/{session_id}/turns",
        {"content": "Ines forged it.", "observations": [
            {"key": "forger", "value": "Ines", "provenance": "author-stated"}]},
    ),
    # A traceability node is signed by its caller: Luna's lens is Luna's, the author's name the author's.
    "trace node produced_by reader-trust (Luna's lens)": (
        "POST", "/books/{book_id}/loop/trace/nodes", {"node_id": "rt-{caller}", "kind": "chapter", "produced_by": "reader-trust"},
    ),
    "trace node produced_by author": (
        "POST", "/books/{book_id}/loop/trace/nodes", {"node_id": "au-{caller}", "kind": "chapter", "produced_by": "author"},
    ),
    # The validation plan moves by the validation lens (Luna), Sol or the author; Terra is refused.
    "validation-plan status validating, by lens": (
        "POST", "/books/{book_id}/loop/validation/{validation_item_id}/status", {"validation_status": "validating"},
    ),
}  # fmt: skip
SIGNED_INPUT_EXPECTED: dict[str, tuple[int, ...]] = {
    "observation status confirmed on input": (401, 401, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422, 422),
    "observation author-stated in the caller's own turn": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        403,
        403,
        422,
        422,
        201,
    ),
    "trace node produced_by reader-trust (Luna's lens)": (
        401,
        401,
        404,
        404,
        404,
        404,
        404,
        404,
        201,
        403,
        403,
        403,
        403,
    ),
    "trace node produced_by author": (401, 401, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 201),
    "validation-plan status validating, by lens": (401, 401, 404, 404, 404, 404, 404, 404, 200, 403, 200, 403, 200),
}


def test_what_a_body_says_about_its_maker_answers_each_caller_as_expected(scene):
    ids, keys, book = scene
    item = ValidationPlanItem.objects.create(book=book, assumption="a", kill_condition="k", activity="r")
    ids = {**ids, "validation_item_id": item.pk}
    for raw in keys.values():
        Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert set(SIGNED_INPUT) == set(SIGNED_INPUT_EXPECTED)
    mismatches = []
    for row, (method, path, template) in SIGNED_INPUT.items():
        observed = []
        for caller in CALLERS:
            body = json.loads(json.dumps(template).replace("{caller}", caller))
            if path.endswith("/turns"):
                body["role"] = TURN_ROLE.get(caller, "author")
            written = rows_written()
            response = call_api(keys, caller, method, fill(path, ids), body)
            observed.append(response.status_code)
            assert response.status_code < 500, (row, caller, response.content[:300])
            if caller in STRANGERS:
                assert_no_leak(response, book)
            if response.status_code >= 400:
                assert rows_written() == written, (row, caller, response.status_code, "wrote to the store")
        if tuple(observed) != SIGNED_INPUT_EXPECTED[row]:
            mismatches.append(f"{row}: expected {SIGNED_INPUT_EXPECTED[row]}, got {tuple(observed)}")
    assert not mismatches, "\n".join(mismatches)
    assert ValidationPlanItem.objects.get(pk=item.pk).validation_status == "validating"


def _browser(user) -> Client:
    client = Client()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


PAGE_CALLERS = ["anon", "other", "staff", "editor", "author"]


def test_every_page_answers_each_person_as_expected(scene, author, editor, outsider):
    ids, _keys, book = scene
    browsers = {
        "anon": _browser(None),
        "other": _browser(outsider),
        "staff": _browser(UserFactory._meta.model.objects.get(username="root")),
        "editor": _browser(editor),
        "author": _browser(author),
    }
    observed, mismatches = {}, []
    for pattern in page_patterns():
        url = fill(pattern, ids)
        row = []
        for caller in PAGE_CALLERS:
            written = rows_written()
            response = browsers[caller].get(url)
            row.append(response.status_code)
            assert response.status_code < 500, (pattern, caller)
            if caller in {"other", "staff"}:
                assert_no_leak(response, book)
            assert rows_written() == written, (pattern, caller, "a page read wrote to the store")
        observed[pattern] = tuple(row)
        if not RECORD and PAGE_EXPECTED.get(pattern) != tuple(row):
            mismatches.append(f"{pattern}: expected {PAGE_EXPECTED.get(pattern)}, got {tuple(row)}")
    if RECORD:
        print("\nPAGE_EXPECTED = {")
        for key, row in observed.items():
            print(f'    "{key}": {row},')
        print("}")
    assert not mismatches, "\n".join(mismatches)


# Columns: anon, other, staff, editor, author. Every page that takes a POST, sent a form it accepts where
# possible; a refused person changes nothing.
PAGE_POSTS: dict[str, dict] = {
    "/keys/<uuid:key_id>/revoke/": {},
    "/books/<uuid:book_id>/discovery/start/": {},
    "/books/<uuid:book_id>/edit/": {"genre_pack": "mystery"},
    "/books/<uuid:book_id>/turns/": {"content": "A turn from the page."},
    "/books/<uuid:book_id>/observations/<uuid:observation_id>/": {"action": "confirm"},
    "/books/<uuid:book_id>/dossiers/new/": {"agent_role": "luna"},
    "/books/<uuid:book_id>/agents/start/": {"task": "thrusts"},
    "/books/<uuid:book_id>/agents/act/": {"on": "1"},
    "/books/<uuid:book_id>/loop/hand-off/": {},
    "/books/<uuid:book_id>/turns/<uuid:turn_id>/confirm/": {},
    "/books/<uuid:book_id>/research/<uuid:item_id>/decide/": {"verdict": "approve", "rationale": "A primary source."},
    # A private address: the author's request is refused by the address guard (422), nothing is fetched or written.
    "/books/<uuid:book_id>/research/from-url/": {"url": "http://10.0.0.1/", "claim": "Keepers logged it."},
    # Asking Luna queues her run (the address is hers to check, in the run: tests/test_luna_research_collect.py).
    "/books/<uuid:book_id>/research/collect/": {"url": "http://10.0.0.1/", "claim": "Keepers logged it."},
    # A private address: the author's webhook is refused by the address guard (422), nothing is written.
    "/books/<uuid:book_id>/webhook/": {"url": "http://10.0.0.1/hook"},
    "/books/<uuid:book_id>/people/<int:user_id>/remove/": {},
    # A candidate id the scene does not have: the author's pick is refused as not found, nothing changes.
    "/books/<uuid:book_id>/loop/nodes/<uuid:node_id>/pick/": {
        "candidate_id": "00000000-0000-0000-0000-000000000000",
        "rationale": "Not the others.",
    },
    "/books/<uuid:book_id>/loop/questions/<uuid:question_id>/answer/": {"resolution": "Answered on the page."},
    "/books/<uuid:book_id>/codex/claims/<uuid:claim_id>/supersede/": {"value": "the keeper", "rationale": "Mine."},
    "/books/<uuid:book_id>/codex/claims/<uuid:claim_id>/retract/": {"rationale": "Not canon after all."},
    "/books/<uuid:book_id>/codex/facts/": {
        "subject": "The keeper",
        "predicate": "is",
        "value": "tired",
        "rationale": "Mine.",
    },
    "/books/<uuid:book_id>/codex/entries/": {"name": "Hale", "kind": "person", "aliases": "the inspector"},
    "/books/<uuid:book_id>/reopen/": {"gate": "G2", "rationale": "The draft changed direction."},
    # A chapter that is no chapter: the author's share link is refused inline (422), nothing is written.
    "/books/<uuid:book_id>/bible/links/": {"chapter": "zero"},
    "/books/<uuid:book_id>/bible/links/<uuid:link_id>/revoke/": {},
    # A mode that is none: refused inline (422) for the book's people, nothing is written.
    "/notifications/books/<uuid:book_id>/": {"mode": "hourly"},
    "/series/<uuid:series_id>/bible/links/": {"chapter": "zero"},
    "/series/<uuid:series_id>/bible/links/<uuid:link_id>/revoke/": {},
    "/books/<uuid:book_id>/chapters/": {"title": "The Tide"},
    "/books/<uuid:book_id>/chapters/<int:number>/": {"text": "Mara rang the bell twice."},
    "/books/<uuid:book_id>/chapters/<int:number>/check/": {},
    "/books/<uuid:book_id>/chapters/<int:number>/findings/<uuid:finding_id>/settle/": {
        "resolution": "intentional",
        "rationale": "Hale is a passer-by.",
    },
    "/books/<uuid:book_id>/chapters/<int:number>/findings/<uuid:finding_id>/entry/": {},
}
PAGE_POST_EXPECTED: dict[str, tuple[int, ...]] = {
    "/keys/<uuid:key_id>/revoke/": (302, 404, 404, 404, 302),
    "/books/<uuid:book_id>/research/<uuid:item_id>/decide/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/research/from-url/": (302, 404, 404, 403, 422),
    "/books/<uuid:book_id>/research/collect/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/webhook/": (302, 404, 404, 403, 422),
    "/books/<uuid:book_id>/discovery/start/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/edit/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/turns/": (302, 404, 404, 302, 302),
    "/books/<uuid:book_id>/observations/<uuid:observation_id>/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/dossiers/new/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/agents/start/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/agents/act/": (302, 404, 404, 403, 302),
    # The scene's loop is at G0: the author's hand-off is refused (no jumping ahead) and nothing changes.
    "/books/<uuid:book_id>/loop/hand-off/": (302, 404, 404, 403, 409),
    "/books/<uuid:book_id>/turns/<uuid:turn_id>/confirm/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/people/<int:user_id>/remove/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/loop/nodes/<uuid:node_id>/pick/": (302, 404, 404, 403, 404),
    "/books/<uuid:book_id>/loop/questions/<uuid:question_id>/answer/": (302, 404, 404, 403, 302),
    # The scene's claim is only proposed: superseding and retracting are for approved canon, so the author gets a 409 and nothing
    # changes (tests/test_codex_supersede.py supersedes and retracts approved canon from these pages).
    "/books/<uuid:book_id>/codex/claims/<uuid:claim_id>/supersede/": (302, 404, 404, 403, 409),
    "/books/<uuid:book_id>/codex/claims/<uuid:claim_id>/retract/": (302, 404, 404, 403, 409),
    # The author states a fact herself: canon by her own verdict in the same act (tests/test_codex_state_fact.py).
    "/books/<uuid:book_id>/codex/facts/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/codex/entries/": (302, 404, 404, 403, 302),
    # Not handed off: the author's reopen is refused (409) and nothing changes (tests/test_discovery_reopen.py).
    "/books/<uuid:book_id>/reopen/": (302, 404, 404, 403, 409),
    "/books/<uuid:book_id>/bible/links/": (302, 404, 404, 403, 422),
    # The scene has no share link: the author's revoke of one is a 404 and nothing changes.
    "/books/<uuid:book_id>/bible/links/<uuid:link_id>/revoke/": (302, 404, 404, 403, 404),
    "/notifications/books/<uuid:book_id>/": (302, 404, 404, 422, 422),
    # The series' share links are its owner's: the editor of its book reads the series bible but makes none.
    "/series/<uuid:series_id>/bible/links/": (302, 404, 404, 403, 422),
    "/series/<uuid:series_id>/bible/links/<uuid:link_id>/revoke/": (302, 404, 404, 403, 404),
    "/books/<uuid:book_id>/chapters/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/chapters/<int:number>/": (302, 404, 404, 403, 302),
    # The editor may read the chapter but not queue Luna's check (discovery:write), as through the API.
    "/books/<uuid:book_id>/chapters/<int:number>/check/": (302, 404, 404, 403, 302),
    "/books/<uuid:book_id>/chapters/<int:number>/findings/<uuid:finding_id>/settle/": (302, 404, 404, 403, 302),
    # The scene's finding is settled by the row before, so the author's one click is a 409 and nothing changes.
    "/books/<uuid:book_id>/chapters/<int:number>/findings/<uuid:finding_id>/entry/": (302, 404, 404, 403, 409),
}


def test_every_page_form_answers_each_person_as_expected(scene, author, editor, outsider):
    ids, _keys, book = scene
    browsers = {
        "anon": _browser(None),
        "other": _browser(outsider),
        "staff": _browser(UserFactory._meta.model.objects.get(username="root")),
        "editor": _browser(editor),
        "author": _browser(author),
    }
    posted = [p for p in page_patterns() if p in PAGE_POSTS]
    # Logging out is a POST too; it only ends the poster's own session, so it is left out here.
    missing = [
        p for p in page_patterns() if PAGE_EXPECTED.get(p, (0,))[-1] == 405 and p not in PAGE_POSTS | {"/logout/": {}}
    ]
    assert missing == [], f"pages that take a POST with no entry in PAGE_POSTS: {missing}"
    observed, mismatches = {}, []
    for pattern in posted:
        url = fill(pattern, ids)
        row = []
        for caller in PAGE_CALLERS:
            written = rows_written()
            response = browsers[caller].post(url, PAGE_POSTS[pattern])
            row.append(response.status_code)
            assert response.status_code < 500, (pattern, caller)
            if caller in {"other", "staff"}:
                assert_no_leak(response, book)
            if response.status_code >= 400 or caller in {"anon", "other", "staff"}:
                assert rows_written() == written, (pattern, caller, response.status_code, "wrote to the store")
        observed[pattern] = tuple(row)
        if not RECORD and PAGE_POST_EXPECTED.get(pattern) != tuple(row):
            mismatches.append(f"{pattern}: expected {PAGE_POST_EXPECTED.get(pattern)}, got {tuple(row)}")
    if RECORD:
        print("\nPAGE_POST_EXPECTED = {")
        for key, row in observed.items():
            print(f'    "{key}": {row},')
        print("}")
    assert not mismatches, "\n".join(mismatches)


# --- Account actions by staff: nobody but the author sets her password -------------------------------
# Each action, sent by each person (browser sessions) at the author's account, which has a password; "own"
# rows act on the caller's own account instead. Columns: anon, other, staff (a superuser), editor, author.
# A cell is where the action ended: "login" (sent to the admin's login: not staff), "refused" (the admin's
# refusal message), or the final status. Whatever the cell, the author's password, its hash and her e-mail
# address are unchanged, and no response carries a link to set a password.
ACCOUNT_ACTIONS: dict[str, tuple[str, str, dict]] = {
    "the author's password form": ("GET", "/admin/auth/user/{author}/password/", {}),
    "set the author's password": (
        "POST",
        "/admin/auth/user/{author}/password/",
        {"usable_password": "true", "password1": "taken-over-77", "password2": "taken-over-77", "set-password": "1"},
    ),
    "disable the author's password": (
        "POST",
        "/admin/auth/user/{author}/password/",
        {"usable_password": "false", "unset-password": "1"},
    ),
    "a set-password invitation for the author": (
        "POST",
        "/admin/auth/user/",
        {"action": "invite_by_email", "_selected_action": "{author}"},
    ),
    "change the author's e-mail address": (
        "POST",
        "/admin/auth/user/{author}/change/",
        {
            "username": "{author_username}",
            "email": "root@staff.example",
            "is_active": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    ),
    "own password form": ("GET", "/admin/auth/user/{own}/password/", {}),
    # The only way to a new password for an account that has one: hers, by e-mail (the link goes to her address).
    "a password reset for the author's address": ("POST", "/password-reset/", {"email": "{author_email}"}),
}
ACCOUNT_EXPECTED: dict[str, tuple] = {
    "the author's password form": ("login", "login", "refused", "login", "login"),
    "set the author's password": ("login", "login", "refused", "login", "login"),
    "disable the author's password": ("login", "login", "refused", "login", "login"),
    "a set-password invitation for the author": ("login", "login", "refused", "login", "login"),
    "change the author's e-mail address": ("login", "login", 200, "login", "login"),
    "own password form": ("login", "login", 200, "login", "login"),
    "a password reset for the author's address": (200, 200, 200, 200, 200),
}


def _account_outcome(response):
    page = response.content.decode()
    if response.redirect_chain and response.redirect_chain[-1][0].startswith("/admin/login/"):
        return "login"
    refusals = ("Staff cannot set, reset or disable another person", "No link was made for", "No invitation was sent")
    if any(refusal in page for refusal in refusals):
        return "refused"
    return response.status_code


def test_account_actions_by_staff_answer_each_person_as_expected(scene, author, editor, outsider, mailoutbox):
    root = UserFactory._meta.model.objects.get(username="root")
    people = {"anon": None, "other": outsider, "staff": root, "editor": editor, "author": author}
    their_hash, their_email = author.password, author.email
    observed, mismatches = {}, []
    for action, (method, path, data) in ACCOUNT_ACTIONS.items():
        row = []
        for caller in PAGE_CALLERS:
            browser, person = _browser(people[caller]), people[caller]
            values = {
                "author": author.pk,
                "own": person.pk if person else author.pk,
                "author_username": author.username,
                "author_email": author.email,
            }
            url = path.format(**values)
            form = {name: value.format(**values) for name, value in data.items()}
            response = browser.get(url, follow=True) if method == "GET" else browser.post(url, form, follow=True)
            row.append(_account_outcome(response))
            assert response.status_code < 500, (action, caller)
            assert "/set-password/" not in response.content.decode(), (action, caller, "a link was made")
            author.refresh_from_db()
            assert (author.password, author.email) == (their_hash, their_email), (action, caller, "changed her")
        observed[action] = tuple(row)
        if not RECORD and ACCOUNT_EXPECTED.get(action) != tuple(row):
            mismatches.append(f"{action}: expected {ACCOUNT_EXPECTED.get(action)}, got {tuple(row)}")
    # The resets asked for went to her own address, never anyone else's; no set-password link was mailed.
    assert mailoutbox and all(message.to == [their_email] for message in mailoutbox)
    assert not any("/set-password/" in message.body for message in mailoutbox)
    if RECORD:
        print("\nACCOUNT_EXPECTED = {")
        for key, row in observed.items():
            print(f'    "{key}": {row},')
        print("}")
    assert not mismatches, "\n".join(mismatches)
