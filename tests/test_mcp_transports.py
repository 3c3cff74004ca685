"""The MCP server through its two transports, driven by the SDK's own client.

- stdio: ``python manage.py mcp --key-env NOVELGRAPH_API_KEY`` as a subprocess, started the way a
  client configuration starts it;
- HTTP: uvicorn serving ``novelgraph.asgi.application`` on an ephemeral port of 127.0.0.1, the
  client sending ``Authorization: Bearer <key>`` to ``/mcp``.

The live server and the connected clients are shared by the whole module (starting a subprocess
costs seconds); each test builds its scene in the test database, committed (the server runs in
another process or thread) and flushed when the test ends.
"""

from __future__ import annotations

import json
import secrets
import tempfile

import httpx2
import pytest
from asgiref.sync import SyncToAsync
from django.db import connections
from django.test import Client
from mcp.shared.exceptions import MCPError

from discovery import services
from discovery.access import book_access
from discovery.models import Handoff, ScratchpadEntry
from discovery.schemas import ClaimIn, HandoffIn
from novelgraph.core.auth import principal_for_user
from novelgraph.core.duties import TOOLS_BY_NAME, tools_for
from novelgraph.core.models import ApiKey, hash_api_key
from novelgraph.core.services import api_key_revoke

from .factories import BookFactory, TurnFactory, UserFactory
from .mcp_support import ClientThread, LiveServer, http_client, stdio_client

# Every role: its dossier, the library, the book's search, the codex, the loop's reads and the lenses' duties.
EVERY_ROLE_TOOLS = {
    "dossier_take",
    "library_search",
    "scratchpad_append",
    "observation_extract",
    "book_search",
    "codex_read",
    "research_propose",
    "research_propose_from_url",
    "continuity_findings_file",
    "loop_candidate_add",
    "loop_question_raise",
    "loop_question_resolve",
    "loop_trace_node_add",
    "loop_trace_edge_add",
    "loop_trace_node_withdraw",
    "loop_trace_edge_withdraw",
    "loop_validation_add",
    "loop_validation_status",
    "loop_artifact_write",
    "loop_review_record",
    "loop_rerun_done",
    "loop_read",
    "loop_nodes",
    "loop_candidates",
    "loop_questions",
    "loop_trace_nodes",
    "loop_trace_edges",
    "loop_validation_plan",
    "loop_artifacts",
    "loop_reviews",
    "loop_lint",
    "loop_missing",
}
# Issue 27: a read tool for each GET route an agent may call (every role reads them on its own books).
READ_TOOLS = {
    "agent_run_read",
    "approval_list_items",
    "approval_read",
    "approval_superseded_versions",
    "approvals_list",
    "decision_log_read",
    "decision_log_verify",
    "agent_run_written",
    "agent_runs",
    "author_constraints",
    "book_chapters",
    "book_charters",
    "book_observations",
    "book_read",
    "book_scratchpad",
    "book_sessions",
    "book_thrusts",
    "book_turns",
    "books_list",
    "canon_list",
    "claim_conflicts",
    "claim_decisions",
    "claim_history",
    "claim_versions",
    "codex_chapters",
    "codex_claims",
    "codex_findings",
    "codex_withheld",
    "discovery_read",
    "dossier_read",
    "dossiers_list",
    "handoff_read",
    "handoff_result_entries",
    "knowledge_bases",
    "library_chunks",
    "library_source",
    "library_sources",
    "loop_cards",
    "loop_cascade_affected",
    "loop_cascade_preview",
    "loop_cascade_stale",
    "loop_cascade_stale_artifacts",
    "loop_constraints",
    "loop_lint_findings",
    "loop_rerun_artifacts",
    "loop_reruns",
    "observation_read",
    "observation_revisions",
    "research_list",
    "session_observations",
    "session_questions",
    "session_scratchpad",
    "session_thrusts",
    "session_turns",
    "whoami",
    # The manuscript's reads (issue 28).
    "codex_entries_read",
    "chapter_text_read",
    "chapter_revisions_read",
    "chapter_compare",
    "continuity_findings_read",
    "reader_promises_read",
    # The story bible as of a chapter (issue 29).
    "bible_read",
}
EVERY_ROLE_TOOLS |= READ_TOOLS
EXPECTED_TOOLS = {
    "luna": EVERY_ROLE_TOOLS | {"handoff_return"},
    # The series bible reads series material (series:read): never Luna's.
    "terra": EVERY_ROLE_TOOLS | {"handoff_return", "thrust_propose", "charter_propose", "series_bible_read"},
    "sol": EVERY_ROLE_TOOLS
    | {
        "series_bible_read",
        "codex_entry_propose",
        "thrust_propose",
        "charter_propose",
        "claim_propose",
        "claim_request_approval",
        "claim_story_set",
        "question_set",
        "question_close",
        "handoff_create",
        "discovery_start",
        "turn_add",
        "agent_run_queue",
        "loop_gate_request",
        "loop_round_advance",
        "loop_cost_spend",
        "loop_node_add",
        "loop_node_update",
        "loop_candidate_select",
        "loop_question_route",
        "loop_question_surface",
        "loop_trace_settings",
        "chapter_check",
        "research_collect",
    },
}
ROLES = ("luna", "terra", "sol")


def _canon(author, book, scope: str, scope_id: str, subject: str) -> str:
    """An approved claim, proposed and promoted by the author through the services."""
    person = principal_for_user(author)
    access, base = services.claim_target(person, scope, scope_id)
    claim = services.claim_propose(
        access=access,
        base=base,
        payload=ClaimIn(
            scope=scope, scope_id=scope_id, subject=subject, predicate="is", value="canon", provenance="author-stated"
        ),
    )
    services.claim_decide(access=book_access(person, book), claim_id=claim.pk, approve=True, rationale="Canon.")
    return str(claim.pk)


# The clients of a transport stay connected for the whole module, with these keys; every test is
# transactional (its rows are committed, so the server's other process or thread sees them, then
# flushed) and puts the key rows back with the same secrets: each request resolves its key afresh.
SECRETS = {who: f"ng_mcp-{who}-{secrets.token_urlsafe(12)}" for who in (*ROLES, "doomed", "revoked", "personal")}
KEY_ROLES = {**{role: role for role in ROLES}, "doomed": "luna", "revoked": "luna", "personal": "author"}


def ensure_keys() -> dict[str, str]:
    """The author and her keys, with the module's secrets (``revoked`` is revoked)."""
    author = UserFactory(username="ada")
    for who, raw in SECRETS.items():
        key, _ = ApiKey.objects.get_or_create(
            key_hash=hash_api_key(raw), defaults={"owner": author, "role": KEY_ROLES[who], "prefix": raw[:10]}
        )
        if who == "revoked":
            api_key_revoke(key=key)
    return dict(SECRETS)


@pytest.fixture(scope="module")
def live_server_url(django_db_setup):
    server = LiveServer()
    try:
        yield f"{server.url}/mcp"
    finally:
        server.stop()
        # The server's MCP database work ran in asgiref's single thread executor (thread-sensitive calls made
        # outside any request's context): close that thread's connections there, or PostgreSQL refuses to drop
        # the test database while its session is open.
        SyncToAsync.single_thread_executor.submit(connections.close_all).result()


@pytest.fixture(scope="module", params=["stdio", "http"])
def clients(request, django_db_setup, django_db_blocker, live_server_url):
    """A connected client per role (and one whose key a test revokes), over one transport."""
    # Every client connects before any test runs: the stdio command checks its key as it starts, and a
    # transactional test's flush (its teardown) must not find a command still starting (it would exit).
    # A client starts connecting as it is made, and the HTTP server resolves its key in this process:
    # the database stays open to it from before the first client is made until the last has connected.
    with django_db_blocker.unblock():
        keys = ensure_keys()
        if request.param == "stdio":
            made = {who: ClientThread(lambda key=keys[who]: stdio_client(key)) for who in (*ROLES, "doomed")}
        else:
            made = {
                who: ClientThread(lambda key=keys[who]: http_client(live_server_url, key)) for who in (*ROLES, "doomed")
            }
        for who in (*ROLES, "doomed"):
            made[who].connected()
    made["transport"] = request.param
    try:
        yield made
    finally:
        for who in (*ROLES, "doomed"):
            made[who].close()


@pytest.fixture
def world(transactional_db, live_server_url) -> dict:
    keys = ensure_keys()
    author = UserFactory(username="ada")
    book = BookFactory(owner=author, title="The Tide Clock")
    foreign_book = BookFactory(title="Someone else's book")
    session, _ = services.discovery_start(access=book_access(principal_for_user(author), book))
    turn = TurnFactory(session=session, ordinal=1, content="The keeper lies about the lamp.")
    return {
        "author": author,
        "book": book,
        "book_id": str(book.pk),
        "foreign_book_id": str(foreign_book.pk),
        "session_id": str(session.pk),
        "turn_id": str(turn.pk),
        "series_claim": _canon(author, book, "series", str(book.series_id), "The drowned city"),
        "book_claim": _canon(author, book, "book", str(book.pk), "Mara"),
        "keys": keys,
        "url": live_server_url,
    }


def tool(clients, who: str, name: str, arguments: dict):
    result = clients[who].run(lambda c: c.call_tool(name, arguments))
    return result.is_error, result.structured_content


def read(clients, who: str, uri: str) -> dict:
    result = clients[who].run(lambda c: c.read_resource(uri))
    return json.loads(result.contents[0].text)


# --- Each role's tools are exactly its capabilities --------------------------------------------------


def test_each_roles_tool_list_is_exactly_what_its_capabilities_allow(clients, world):
    for role in ROLES:
        listed = clients[role].run(lambda c: c.list_tools()).tools
        assert {t.name for t in listed} == EXPECTED_TOOLS[role] == {t.name for t in tools_for(role)}, role
        assert all(t.input_schema["type"] == "object" for t in listed)
        # The spec's conventions: every tool has an output schema and annotations read off its declaration.
        for tool in listed:
            spec = TOOLS_BY_NAME[tool.name]
            assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
            hints = tool.annotations
            assert (hints.read_only_hint, hints.destructive_hint) == (spec.read_only, False), tool.name
            assert hints.idempotent_hint == (spec.read_only or spec.idempotent), tool.name
    # Answering a loop question (loop_question_resolve) is a lens's duty; nothing else here decides.
    assert not any(name.endswith(("promote", "admit", "verdict")) for name in EXPECTED_TOOLS["sol"])


# --- Resources are filtered as the REST API filters them ---------------------------------------------


def test_lunas_dossier_resource_carries_no_series_canon_while_sols_does(clients, world):
    uri = f"novelgraph://books/{world['book_id']}/dossier"
    for role in ("luna", "sol"):
        is_error, taken = tool(clients, role, "dossier_take", {"book_id": world["book_id"]})
        assert not is_error, taken
        latest = read(clients, role, uri)
        assert latest["id"] == taken["id"] and latest["agent_role"] == role

    luna, sol = read(clients, "luna", uri)["content"], read(clients, "sol", uri)["content"]
    assert {c["id"] for c in luna["claims"]} == {world["book_claim"]}
    assert "series" not in {b["scope"] for b in luna["knowledge_bases"]}
    assert luna["withheld"] == ["series canon (luna lacks series:read)"]
    assert {c["id"] for c in sol["claims"]} == {world["book_claim"], world["series_claim"]}
    assert sol["withheld"] == []


def test_resources_list_the_keys_books_and_read_the_current_question(clients, world):
    listed = {r.uri for r in clients["luna"].run(lambda c: c.list_resources()).resources}
    assert f"novelgraph://books/{world['book_id']}/question" in listed
    assert not any(world["foreign_book_id"] in uri for uri in listed)
    question = read(clients, "luna", f"novelgraph://books/{world['book_id']}/question")
    assert question["session_id"] == world["session_id"]
    assert question["current_question"]


# --- A tool call writes what its REST call writes ----------------------------------------------------


def test_luna_takes_a_handoff_and_writes_the_rows_the_rest_call_writes(clients, world):
    decision = f"Which places recur? ({clients['transport']})"
    # The result cites this turn, so the handoff allows it (a result cites only what its handoff allowed).
    allowed = [{"type": "turn", "id": world["turn_id"]}]
    is_error, created = tool(
        clients,
        "sol",
        "handoff_create",
        {"book_id": world["book_id"], "to_role": "luna", "decision": decision, "allowed_sources": allowed},
    )
    assert not is_error, created
    twin = services.handoff_create(
        access=book_access(principal_for_user(world["author"]), world["book"]),
        payload=HandoffIn(to_role="luna", decision=decision, allowed_sources=allowed),
    )
    waiting = read(clients, "luna", f"novelgraph://books/{world['book_id']}/handoffs")["handoffs"]
    assert created["id"] in {h["id"] for h in waiting}
    assert all(h["to_role"] == "luna" and h["status"] == "open" for h in waiting)

    result = {
        "facts": [{"text": "The lighthouse recurs.", "source_refs": [{"type": "turn", "id": world["turn_id"]}]}],
        "questions": [{"text": "Is the harbour the same one?", "confidence": 0.4}],
    }
    is_error, returned = tool(clients, "luna", "handoff_return", {"handoff_id": created["id"], **result})
    rest = Client().post(
        f"/api/v1/handoffs/{twin.pk}/result",
        json.dumps(result),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {world['keys']['luna']}",
    )

    assert not is_error and rest.status_code == 200, (returned, rest.content)
    columns = ("agent_role", "kind", "content", "confidence", "source_refs", "provenance")
    by_mcp = list(ScratchpadEntry.objects.filter(handoff_id=created["id"]).order_by("sequence").values(*columns))
    by_rest = list(ScratchpadEntry.objects.filter(handoff_id=twin.pk).order_by("sequence").values(*columns))
    assert by_mcp == by_rest == [
        {**dict.fromkeys(columns), "agent_role": "luna", "kind": "observation", "content": "The lighthouse recurs.",
         "source_refs": [{"type": "turn", "id": world["turn_id"]}]},
        {**dict.fromkeys(columns), "agent_role": "luna", "kind": "question", "content": "Is the harbour the same one?",
         "confidence": 0.4, "source_refs": []},
    ]  # fmt: skip
    assert Handoff.objects.get(pk=created["id"]).status == Handoff.objects.get(pk=twin.pk).status == "returned"
    assert [e["content"] for e in returned["result_entries"]] == [e["content"] for e in rest.json()["result_entries"]]

    is_error, again = tool(clients, "luna", "handoff_return", {"handoff_id": created["id"], **result})
    assert is_error and again == {**rest_again(world, twin.pk, result), "status": 409}


def rest_again(world, handoff_id, result) -> dict:
    again = Client().post(
        f"/api/v1/handoffs/{handoff_id}/result",
        json.dumps(result),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {world['keys']['luna']}",
    )
    assert again.status_code == 409
    return again.json()


# --- Refusals ----------------------------------------------------------------------------------------


def test_a_foreign_book_is_not_found_for_tools_and_resources(clients, world):
    is_error, body = tool(clients, "luna", "dossier_take", {"book_id": world["foreign_book_id"]})
    assert is_error and body == {"detail": "book not found", "code": "not_found", "status": 404}
    with pytest.raises(MCPError) as refused:
        read(clients, "luna", f"novelgraph://books/{world['foreign_book_id']}/question")
    assert refused.value.message == "book not found" and refused.value.data["status"] == 404


def test_a_key_revoked_while_connected_is_refused_from_its_next_request(clients, world):
    assert not tool(clients, "doomed", "library_search", {"q": "fair play"})[0]
    api_key_revoke(key=ApiKey.objects.get(key_hash=hash_api_key(world["keys"]["doomed"])))
    if clients["transport"] == "stdio":
        is_error, body = tool(clients, "doomed", "library_search", {"q": "fair play"})
        assert is_error and body["status"] == 401 and body["code"] == "not_authenticated"
    else:
        # The SDK client reports the HTTP refusal without its body; the body is the REST API's 401.
        with pytest.raises(MCPError, match="Server returned an error response"):
            tool(clients, "doomed", "library_search", {"q": "fair play"})
        refused = httpx2.post(
            world["url"],
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Authorization": f"Bearer {world['keys']['doomed']}"},
            timeout=60,
        )
        assert (refused.status_code, refused.json()["code"]) == (401, "not_authenticated")


def test_over_stdio_a_bad_a_revoked_and_a_personal_key_stop_the_command(world):
    for key, said in (
        ("ng_not-a-key", "neither unknown nor revoked"),
        (world["keys"]["revoked"], "neither unknown nor revoked"),
        (world["keys"]["personal"], "this is a personal key"),
    ):
        with tempfile.TemporaryFile("w+") as errlog:
            client = ClientThread(lambda key=key, errlog=errlog: stdio_client(key, errlog))
            with pytest.raises(BaseException):  # noqa: B017  (the process exits before the handshake)
                client.connected()
            client.close()
            errlog.seek(0)
            assert said in errlog.read()


def test_over_http_a_missing_a_bad_a_revoked_and_a_personal_key_are_refused(world):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    cases = [
        (None, 401, "not_authenticated"),
        ("ng_not-a-key", 401, "not_authenticated"),
        (world["keys"]["revoked"], 401, "not_authenticated"),
        (world["keys"]["personal"], 403, "personal_key"),
    ]
    for key, status, code in cases:
        headers = {"Accept": "application/json, text/event-stream"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        response = httpx2.post(world["url"], json=body, headers=headers, timeout=60)
        assert (response.status_code, response.json()["code"]) == (status, code), response.text
        assert "Content-Security-Policy" in response.headers
        client = ClientThread(lambda key=key: http_client(world["url"], key))
        with pytest.raises(BaseException):  # noqa: B017  (the SDK raises the HTTP refusal in a group)
            client.connected()
        client.close()
    assert httpx2.post(f"{world['url']}/", json=body, headers={"Authorization": "Bearer x"}).status_code == 401


def test_over_http_a_foreign_origin_is_refused_and_no_origin_or_the_sites_own_is_served(world, settings):
    """DNS rebinding: a page on another site that reaches /mcp through a rebound name sends its own Origin."""
    settings.NOVELGRAPH_MCP_ALLOWED_ORIGINS = ["https://agents.example.com"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    own = world["url"].removesuffix("/mcp")  # http://127.0.0.1:<port>, the Host the client sends

    def post(**extra: str) -> httpx2.Response:
        headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {world['keys']['luna']}"}
        return httpx2.post(world["url"], json=body, headers={**headers, **extra}, timeout=60)

    for origin in ("https://evil.example", "http://127.0.0.1.evil.example", "null", "http://127.0.0.1:1"):
        refused = post(Origin=origin)
        assert refused.status_code == 403, (origin, refused.text)
        assert refused.json() == {
            "detail": "foreign Origin header: not this site's origin nor in NOVELGRAPH_MCP_ALLOWED_ORIGINS",
            "code": "forbidden",
            "field": "Origin",
        }
        assert "Content-Security-Policy" in refused.headers
    for allowed in ({}, {"Origin": own}, {"Origin": "https://agents.example.com"}):
        served = post(**allowed)
        assert served.status_code == 200, (allowed, served.text)
        assert {t["name"] for t in served.json()["result"]["tools"]} == EXPECTED_TOOLS["luna"]
    # A foreign Host was refused already, whatever the Origin.
    assert post(Host="evil.example", Origin="http://evil.example").status_code == 400
