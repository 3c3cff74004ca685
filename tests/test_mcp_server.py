"""The MCP server's behaviour, through the SDK's client connected in-process (fast, rolled back):
the same rows and decision-log entries as the REST calls, input schemas from the REST schemas,
errors worded as the REST API words them, personal keys refused, resources read without writing."""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.loop.models import OptionCard
from discovery.models import ContextDossier, ScratchpadEntry, StoryCharter
from discovery.schemas import EntryIn
from novelgraph.core.duties import TOOLS_BY_NAME
from novelgraph.core.schemas import limit
from novelgraph.core.services import api_key_create

from .discovery_support import charter_body, start
from .factories import BookFactory, KnowledgeChunkFactory
from .mcp_support import call, mcp, outcome

pytestmark = pytest.mark.django_db

G0 = {
    "summary": "Ratify the premise.",
    "decisions_requested": ["Is this why the book exists?"],
    "reversibility_class": "reversible",
}
AUTOMATIC_G1 = "G1 passed automatically: no risk trigger fired"
G1 = {"summary": "The strategy.", "decisions_requested": ["Go on?"], "reversibility_class": "reversible"}


def _log(book) -> list[tuple]:
    return list(
        DecisionLogEntry.objects.filter(book=book)
        .order_by("sequence")
        .values_list("sequence", "gate", "decision", "subject_type", "ratified_by", "reversibility_class", "rationale")
    )


def _cards(book) -> list[tuple]:
    return list(
        OptionCard.objects.filter(book=book)
        .order_by("created_at")
        .values_list("kind", "gate", "status", "verdict", "raised_by", "summary", "decisions_requested")
    )


def test_sols_gate_requests_through_mcp_write_the_cards_and_log_entries_their_rest_calls_write(
    author, author_api, sol_api
):
    by_rest, by_mcp = BookFactory(owner=author), BookFactory(owner=author)
    for book in (by_rest, by_mcp):
        start(author_api, book)

    rest_g0 = sol_api.post(f"/books/{by_rest.pk}/loop/gates/G0/request", G0)
    status, mcp_g0 = outcome(call(sol_api.key, "loop_gate_request", {"book_id": str(by_mcp.pk), "gate": "G0", **G0}))
    assert (rest_g0.status_code, status) == (201, "ok") and mcp_g0["outcome"] == rest_g0.json()["outcome"]
    for approval_id in (rest_g0.json()["approval_id"], mcp_g0["approval_id"]):
        decided = author_api.post(f"/approvals/{approval_id}/verdict", {"verdict": "approve", "rationale": "Yes."})
        assert decided.status_code == 200, decided.content
    rest_g1 = sol_api.post(f"/books/{by_rest.pk}/loop/gates/G1/request", G1)
    status, mcp_g1 = outcome(call(sol_api.key, "loop_gate_request", {"book_id": str(by_mcp.pk), "gate": "G1", **G1}))

    assert (rest_g1.status_code, status) == (200, "ok")
    assert mcp_g1["outcome"] == rest_g1.json()["outcome"] == "passed"
    assert _cards(by_mcp) == _cards(by_rest)
    assert (
        _log(by_mcp)
        == _log(by_rest)
        == [
            (1, "G0", "approve", "loop-option-card", "author:ada", "reversible", "Yes."),
            (2, "G1", "approve", "loop-option-card", "controller:sol", "reversible", AUTOMATIC_G1),
        ]
    )
    assert mcp_g1["decision_sequence"] == 2
    assert decision_log_verify(by_mcp).ok and decision_log_verify(by_rest).ok


def test_a_charter_proposed_through_mcp_writes_the_charter_and_approval_its_rest_call_writes(
    author, author_api, terra_api
):
    by_rest, by_mcp = BookFactory(owner=author), BookFactory(owner=author)
    for book in (by_rest, by_mcp):
        start(author_api, book)

    rest = terra_api.post(f"/books/{by_rest.pk}/charters", charter_body())
    status, body = outcome(call(terra_api.key, "charter_propose", {"book_id": str(by_mcp.pk), **charter_body()}))

    assert (rest.status_code, status) == (201, "ok")
    assert body.keys() == rest.json().keys()

    def rows(book):
        charter = StoryCharter.objects.select_related("approval", "session").get(book=book)
        approval = charter.approval
        return (
            (charter.version, charter.status, charter.proposed_by, charter.content, charter.source_refs),
            (approval.kind, approval.status, approval.subject_type, approval.requested_by_role, approval.summary),
            charter.session.status,
        )

    assert rows(by_mcp) == rows(by_rest)
    assert rows(by_mcp)[1][:2] == ("story-charter", "pending")
    assert not DecisionLogEntry.objects.filter(book__in=[by_rest, by_mcp]).exists(), "proposing decides nothing"


def test_tool_inputs_are_the_rest_input_schemas_with_the_routes_path_parameters():
    schema = TOOLS_BY_NAME["scratchpad_append"].input_schema
    rest = EntryIn.model_json_schema()
    assert set(schema["properties"]) == set(rest["properties"]) | {"session_id"}
    assert set(schema["required"]) == {*rest["required"], "session_id"}
    assert schema["properties"]["content"]["maxLength"] == limit(ScratchpadEntry, "content")


def test_input_the_rest_api_refuses_is_a_tool_error_with_the_same_message_and_field(luna_api, author_api, book):
    session = start(author_api, book)
    too_long = "x" * (limit(ScratchpadEntry, "content") + 1)
    for body in (
        {"kind": "question", "content": too_long},
        {"kind": "question", "content": "The keeper\x00lies."},
        {"kind": "digest", "content": "A digest of nothing."},
        {"kind": "question", "content": "Why?", "source_refs": [{"type": "claim", "id": "no-such-claim"}]},
        {"kind": "question", "content": "Why?", "provenance": "author-stated"},
    ):
        rest = luna_api.post(f"/sessions/{session.pk}/scratchpad", body)
        status, error = outcome(call(luna_api.key, "scratchpad_append", {"session_id": str(session.pk), **body}))
        assert status == rest.status_code == 422, (body, rest.content)
        assert {k: error[k] for k in rest.json()} == rest.json()
    assert not ScratchpadEntry.objects.filter(session=session).exists()


def test_a_personal_key_is_refused_and_no_tool_decides(author, sol_api, book):
    personal = api_key_create(owner=author, role="author")[1]
    with pytest.raises(MCPError) as refused:
        mcp(personal, lambda c: c.list_tools())
    assert refused.value.data["code"] == "personal_key" and refused.value.data["status"] == 403
    status, body = outcome(call(personal, "library_search", {"q": "fair play"}))
    assert (status, body["code"]) == (403, "personal_key")

    for deciding in ("charter_resolve", "claim_promote", "research_admit", "approval_verdict"):
        with pytest.raises(MCPError, match="unknown tool"):
            call(sol_api.key, deciding, {})
    assert not Approval.objects.exclude(decided_at=None).exists()


def test_an_unknown_or_missing_key_is_refused_in_process(db):
    for key in (None, "ng_not-a-key"):
        status, body = outcome(call(key, "library_search", {"q": "fair play"}))
        assert (status, body["code"]) == (401, "not_authenticated")


def test_reading_resources_writes_nothing_and_a_chunk_reads_with_its_source(luna_api, author_api, book):
    start(author_api, book)
    chunk = KnowledgeChunkFactory(content="Plant the decisive clue early.")

    def read(uri):
        return mcp(luna_api.key, lambda c: c.read_resource(uri))

    read_chunk = json.loads(read(f"novelgraph://chunks/{chunk.pk}").contents[0].text)
    assert read_chunk["chunk"]["content"] == "Plant the decisive clue early."
    assert read_chunk["source"]["title"] == chunk.source.title
    with pytest.raises(MCPError) as missing:
        read(f"novelgraph://books/{book.pk}/dossier")
    assert "take one with the dossier_take tool" in missing.value.message
    assert not ContextDossier.objects.exists(), "a read creates nothing"
    for uri in (f"novelgraph://chunks/{book.pk}", "novelgraph://elsewhere", "https://example.org/"):
        with pytest.raises(MCPError) as missing:
            read(uri)
        assert missing.value.data["status"] == 404
