"""Text that is not valid Unicode is refused by name at the one input rule, on every path in (issue 30, item 2).

A JSON escape such as ``"\\ud800"`` decodes to a lone UTF-16 surrogate: not Unicode text, and neither database can
store it (SQLite stored it and then failed every read; PostgreSQL failed the write). ``text_fault`` refuses it (and
NUL) for the API's parser, the MCP tools, forms and imports (``parse_input``) and the agents' replies; Unicode's
non-characters (U+FFFE, U+FFFF, U+FDD0...) are valid scalar values, allowed and stored.
"""

from __future__ import annotations

import io
import zipfile

import pytest
from django.test import Client

from discovery.agents.services import validated_plan
from discovery.loop.models import BlackboardArtifact
from discovery.models import KnowledgeClaim, ScratchpadEntry
from discovery.schemas import ClaimSupersedeForm
from novelgraph.api import api
from novelgraph.core.errors import Invalid
from novelgraph.core.schemas import parse_form, text_fault

from . import test_authorization_matrix as matrix
from .dbstate import rows_written
from .discovery_support import charter_body, start
from .factories import BookFactory
from .mcp_support import call, outcome
from .test_authorization_matrix import scene  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db

LONE = ["\ud800", "a\udbffb", "\udc00", "x\udfff"]
# Fields whose value is any JSON (claims' and supersedes' value, artifacts' content, charter fields); any field's
# first string gets the nested form too.
JSON_VALUED = {"value", "content", "protagonist", "premise", "stakes", "theme", "success_metrics"}


def _leaves(value, path=""):
    """Every string in a body, with its path as the API names fields."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}.{index}" if path else str(index))


def _replaced(value, path: str, new, at=""):
    if at == path:
        return new
    if isinstance(value, dict):
        return {k: _replaced(v, path, new, f"{at}.{k}" if at else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, path, new, f"{at}.{i}" if at else str(i)) for i, v in enumerate(value)]
    return value


def test_every_text_and_json_valued_field_of_every_api_operation_answers_422_naming_it(scene):  # noqa: F811
    matrix.SCHEMA = api.get_openapi_schema()
    ids, keys, _book = scene
    Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {keys['author']}")  # a key's first use is recorded
    written = rows_written()
    checked = 0
    for method, path, operation in matrix.api_operations():
        body = matrix.body_for(operation, ids)
        if body is None:
            continue
        for n, leaf in enumerate(_leaves(body)):
            # As text, and (for a JSON-valued field: a claim's value, a charter field, an artifact's content) as a
            # nested value: the error names where the surrogate is.
            variants = [(f"lamp{LONE[n % 4]}room", leaf)]
            if n == 0 or leaf.split(".")[0] in JSON_VALUED:
                variants.append(({"said": ["ok", LONE[n % 4]]}, f"{leaf}.said.1"))
            for new, field in variants:
                response = matrix.call_api(keys, "author", method, matrix.fill(path, ids), _replaced(body, leaf, new))
                assert response.status_code == 422, (method, path, leaf, response.content[:300])
                error = response.json()
                assert error["field"] == field, (method, path, error)
                assert "lone surrogate" in error["detail"] and error["detail"].startswith(f"{field}: "), error
                checked += 1
    assert checked >= 100, checked
    assert rows_written() == written, "nothing refused was written"


def test_a_key_of_a_json_object_is_checked_too(author_api, sol_api, book):
    start(author_api, book)
    response = sol_api.post(
        f"/books/{book.pk}/loop/artifacts", {"slug": "lamp", "type": "note", "content": {"te\udc00xt": "lamp"}}
    )
    assert response.status_code == 422 and response.json()["field"] == "content", response.content
    assert not BlackboardArtifact.objects.filter(book=book).exists()


@pytest.mark.parametrize(
    "text",
    ["\ufffe", "\uffff", "\ufdd0", "\U0010fffe", "\u2028", "\ufeffBOM", "e\u0301\u0301", "\u202egnp.exe", "\U0001f600"],
)
def test_non_characters_and_other_valid_edge_cases_are_accepted_and_stored_as_sent(luna_api, author_api, book, text):
    session = start(author_api, book)
    response = luna_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": f"Why {text}?"})
    assert response.status_code == 201, response.content
    assert ScratchpadEntry.objects.get(pk=response.json()["id"]).content == f"Why {text}?"
    assert text_fault(text) is None


def test_mcp_tools_refuse_it_with_the_rest_routes_message_and_field(sol_api, luna_api, author_api, book):
    session = start(author_api, book)
    cases = [
        (
            luna_api,
            "scratchpad_append",
            f"/sessions/{session.pk}/scratchpad",
            {"session_id": str(session.pk)},
            {"kind": "question", "content": "The keeper\ud800lies."},
        ),
        (
            sol_api,
            "charter_propose",
            f"/books/{book.pk}/charters",
            {"book_id": str(book.pk)},
            charter_body(protagonist={"name": "Mara\udc00"}),
        ),
        (
            sol_api,
            "claim_propose",
            "/claims",
            {},
            {
                "scope": "book",
                "scope_id": str(book.pk),
                "subject": "The keeper",
                "predicate": "says",
                "value": {"words": ["lamp", "\udbff"]},
                "provenance": "agent-inferred",
            },
        ),
    ]
    for api_client, tool, route, path_args, body in cases:
        rest = api_client.post(route, body)
        status, error = outcome(call(api_client.key, tool, {**path_args, **body}))
        assert status == rest.status_code == 422, (tool, rest.content)
        assert {k: error[k] for k in rest.json()} == rest.json()
        assert "lone surrogate" in error["detail"]
    assert not KnowledgeClaim.objects.exists() and not ScratchpadEntry.objects.filter(session=session).exists()


def test_form_data_goes_through_the_same_rule(author_browser, author):
    # The one parser of browser forms names the field; a browser itself cannot send a lone surrogate (UTF-8 has
    # none: Django decodes the bytes a client might try, ED A0 80, as U+FFFD), shown on the keys page.
    with pytest.raises(Invalid) as refused:
        parse_form(ClaimSupersedeForm, {"value": "The lamp\ud800", "rationale": "Because."})
    assert refused.value.field == "value" and "lone surrogate" in str(refused.value)
    response = author_browser.post(
        "/keys/", "name=lamp%ED%A0%80&role=luna", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 302
    assert author.api_keys.get().name == "lamp\ufffd\ufffd\ufffd"


def test_an_imported_loop_file_names_the_field_that_holds_it(author_api, sol_api, book):
    start(author_api, book)
    made = sol_api.post(f"/books/{book.pk}/loop/artifacts", {"slug": "lamp", "type": "note", "content": {"t": "x"}})
    assert made.status_code == 201, made.content
    exported = zipfile.ZipFile(io.BytesIO(author_api.get(f"/books/{book.pk}/loop/export").content))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name in exported.namelist():
            data = exported.read(name)
            if name.endswith("_state/blackboard.json"):
                data = data.decode().replace('"t": "x"', '"t": "x\\ud800"').encode()
                assert b"\\ud800" in data
            archive.writestr(name, data)
    other_book = BookFactory(owner=book.owner, title="The author's second book")
    start(author_api, other_book)
    response = author_api.client.post(
        f"/api/v1/books/{other_book.pk}/loop/import",
        {"file": io.BytesIO(out.getvalue())},
        HTTP_AUTHORIZATION=f"Bearer {author_api.key}",
    )
    assert response.status_code == 422, response.content
    assert response.json()["field"].startswith("file:") and response.json()["field"].endswith("content.t")
    assert not BlackboardArtifact.objects.filter(book=other_book).exists()


def test_an_agents_reply_with_it_is_refused_naming_the_field():
    with pytest.raises(Invalid) as refused:
        validated_plan("next-question", {"question": {"question": "What does the keeper\udc00 hide?"}})
    assert refused.value.field == "question.question" and "lone surrogate" in str(refused.value)
