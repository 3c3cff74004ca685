"""The MCP specification's conventions, through the SDK's client in-process: tool annotations and
output schemas read off the declarations, structured content on every answer, resource templates
for the dossier, the codex as of a chapter, a handoff and a chunk, and one prompt per role that
hands an outside model its duties and the rules it works under."""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError

from discovery.models import Handoff
from novelgraph.core.duties import TOOLS_BY_NAME

from .mcp_support import build_mcp_scene, call, mcp, outcome

pytestmark = pytest.mark.django_db


def test_every_tool_lists_its_annotations_and_output_schema_and_a_page_is_a_page(sol_api, book):
    listed = mcp(sol_api.key, lambda c: c.list_tools()).tools
    for tool in listed:
        spec = TOOLS_BY_NAME[tool.name]
        hints = tool.annotations
        assert hints.read_only_hint is spec.read_only
        assert hints.destructive_hint is False
        assert hints.idempotent_hint is (spec.read_only or spec.idempotent)
        assert tool.output_schema == spec.output_schema and tool.output_schema["type"] == "object"
    paged = {t.name: t for t in listed}["loop_nodes"]
    assert {"items", "count", "limit", "offset"} <= set(paged.output_schema["properties"])
    assert {"limit", "offset", "book_id"} <= set(paged.input_schema["properties"])
    assert {t.name: t for t in listed}["discovery_start"].annotations.idempotent_hint is True
    assert {t.name: t for t in listed}["loop_review_record"].annotations.idempotent_hint is False


def test_a_read_and_a_propose_answer_with_structured_content_matching_their_output_schema(author, luna_api, book):
    ids = build_mcp_scene(author, book)
    read = call(luna_api.key, "loop_trace_nodes", {"book_id": ids["book_id"], "limit": 1})
    assert not read.is_error and read.structured_content["limit"] == 1
    assert read.structured_content["count"] == 7 and len(read.structured_content["items"]) == 1
    assert json.loads(read.content[0].text) == read.structured_content
    status, body = outcome(
        call(
            luna_api.key,
            "loop_question_raise",
            {"book_id": ids["book_id"], "question": "Who?", "target_discipline": "sol"},
        )
    )
    assert status == "ok" and body["raised_by"] == "luna"
    too_far = call(luna_api.key, "loop_nodes", {"book_id": ids["book_id"], "limit": 201})
    assert too_far.is_error and too_far.structured_content["field"] == "limit"


def test_resource_templates_name_the_dossier_the_codex_as_of_a_chapter_a_handoff_and_a_chunk(
    author, luna_api, sol_api, book
):
    ids = build_mcp_scene(author, book)
    templates = {t.uri_template for t in mcp(luna_api.key, lambda c: c.list_resource_templates()).resource_templates}
    assert {
        "novelgraph://books/{book_id}/dossier",
        "novelgraph://books/{book_id}/codex/{as_of_chapter}",
        "novelgraph://handoffs/{handoff_id}",
        "novelgraph://chunks/{chunk_id}",
    } <= templates

    def read(key, uri):
        return json.loads(mcp(key, lambda c: c.read_resource(uri)).contents[0].text)

    codex = read(luna_api.key, f"novelgraph://books/{book.pk}/codex/3")
    assert (codex["book_id"], codex["as_of_chapter"]) == (str(book.pk), 3)
    handoff = read(luna_api.key, f"novelgraph://handoffs/{ids['handoff_id']}")
    assert (handoff["id"], handoff["to_role"]) == (ids["handoff_id"], "luna")
    assert Handoff.objects.get(pk=ids["handoff_id"]).status == "open", "a read changes nothing"
    with pytest.raises(MCPError) as bad:
        read(luna_api.key, f"novelgraph://books/{book.pk}/codex/0")
    assert (bad.value.data["status"], bad.value.data["field"]) == (422, "as_of_chapter")


def test_each_role_is_offered_its_own_prompt_with_its_duties_and_rules(author, luna_api, sol_api, book):
    ids = build_mcp_scene(author, book)
    prompts = mcp(luna_api.key, lambda c: c.list_prompts()).prompts
    assert [p.name for p in prompts] == ["act_as_luna"]
    assert [(a.name, a.required) for a in prompts[0].arguments] == [("book_id", True), ("handoff_id", False)]
    got = mcp(
        luna_api.key,
        lambda c: c.get_prompt("act_as_luna", {"book_id": ids["book_id"], "handoff_id": ids["handoff_id"]}),
    )
    text = got.messages[0].content.text
    assert text.startswith("You are Luna")
    assert f"novelgraph://handoffs/{ids['handoff_id']}" in text and "handoff_return" in text
    assert "loop_review_record" in text and "handoff_create" not in text, "her duties, not Sol's"
    assert "only the author decides" in text
    sol_text = mcp(sol_api.key, lambda c: c.get_prompt("act_as_sol", {"book_id": ids["book_id"]})).messages[0]
    assert "handoff_create" in sol_text.content.text and "dossier_take" in sol_text.content.text
    with pytest.raises(MCPError) as other:
        mcp(luna_api.key, lambda c: c.get_prompt("act_as_sol", {"book_id": ids["book_id"]}))
    assert "act_as_luna" in other.value.message
