"""Issue 27, done when: a new book goes from G0 to hand-off with Sol, Terra and Luna acting ONLY through MCP.

Each agent is an outside client: the official SDK's client over streamable HTTP, against a live uvicorn
server (``novelgraph.asgi``), with a role key the author made on her keys page and scoped to this book.
The built-in agents are switched off for the book (its Agents panel setting) while the server's switch
is on, so nothing in-app acts. The author does only what her browser does (Django's test client posting
her pages' forms): create the book, make the keys, start, answer, confirm, decide with rationales.

At the end the log verifies, no agent run exists, and every row an agent role wrote (turns, observations,
scratchpad, thrusts, the charter, the claim, handoffs, trace nodes, reviews, the brief) is one a tool call
answered with: nothing an agent wrote came through another door.
"""

from __future__ import annotations

import re

import pytest
from asgiref.sync import SyncToAsync
from django.db import connections
from django.test import Client

from approvals.models import Approval
from approvals.selectors import decision_log_verify
from discovery.agents.models import AgentRun
from discovery.loop.models import (
    ArtifactStatus,
    BlackboardArtifact,
    LensReview,
    LoopMeta,
    OptionCard,
    TraceEdge,
    TraceNode,
)
from discovery.loop.selectors import trace_lint
from discovery.models import (
    Book,
    Chapter,
    DiscoverySession,
    Handoff,
    KnowledgeClaim,
    Observation,
    ScratchpadEntry,
    StoryCharter,
    ThrustCandidate,
    Turn,
)
from novelgraph.core.models import ApiKey

from .factories import UserFactory
from .mcp_support import ClientThread, LiveServer, http_client

pytestmark = [pytest.mark.agents_act]

ROLES = ("sol", "terra", "luna")


@pytest.fixture(scope="module")
def mcp_url(django_db_setup):
    server = LiveServer(fresh=True)
    try:
        yield f"{server.url}/mcp"
    finally:
        server.stop()
        # The server's MCP database work ran in asgiref's single thread executor: close its connections there,
        # or PostgreSQL refuses to drop the test database while that session is open.
        SyncToAsync.single_thread_executor.submit(connections.close_all).result()


class Browser:
    """The author in her browser: each act is one of her pages' forms, posted."""

    def __init__(self, user):
        self.client = Client()
        self.client.force_login(user)
        self.acts = 0

    def post(self, path: str, data: dict | None = None):
        response = self.client.post(path, data or {})
        assert response.status_code in (200, 302), (path, response.status_code, response.content[:2000])
        self.acts += 1
        return response

    def make_key(self, role: str, book) -> str:
        self.post("/keys/", {"name": f"{role.title()} in my own client", "role": role, "books": [str(book.pk)]})
        page = self.client.get("/keys/").content.decode()  # the page shows the new key once
        (raw,) = set(re.findall(r"ng_[A-Za-z0-9_-]{40,}", page))
        return raw

    def decide(self, approval: Approval, rationale: str, **choice) -> None:
        self.post(f"/review/{approval.pk}/", {"verdict": "approve", "rationale": rationale, **choice})
        approval.refresh_from_db()
        assert approval.status == "decided", approval.status


class Agents:
    """One SDK client per role over streamable HTTP; every call is kept, with what it answered."""

    def __init__(self, url: str, keys: dict[str, str]):
        self.clients = {role: ClientThread(lambda key=keys[role]: http_client(url, key)) for role in ROLES}
        for client in self.clients.values():
            client.connected()
        self.calls: list[tuple[str, str, dict]] = []

    def __call__(self, role: str, tool: str, **arguments) -> dict:
        result = self.clients[role].run(lambda c: c.call_tool(tool, arguments))
        assert not result.is_error, (role, tool, result.structured_content)
        self.calls.append((role, tool, result.structured_content))
        return result.structured_content

    def answered(self, *tools: str, key: str = "id") -> set[str]:
        """The ids the named tools answered with."""
        return {str(body[key]) for _role, tool, body in self.calls if tool in tools}

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


def ids(rows, field: str = "pk") -> set[str]:
    return {str(value) for value in rows.values_list(field, flat=True)}


def pending(book, kind: str, gate: str | None = None) -> Approval | None:
    found = Approval.objects.filter(book=book, status="pending", kind=kind)
    if gate:
        found = found.filter(gate=gate)
    return found.order_by("created_at").first()


ANSWERS = [
    "Unease about whom to trust. The protagonist is Mara Quell, who keeps the lighthouse at Saltmarsh.",
    "The harbour master wants the drowning closed as an accident, and the town is on his side.",
    "A fair puzzle with every clue on the page.",
]
# What Luna reads in each answer (key, value): Sol's next question follows from it.
EXTRACTED = [
    [("protagonist name", "Mara Quell"), ("place", "Saltmarsh"), ("reader aftertaste", "unease about whom to trust")],
    [("central conflict", "the harbour master wants the drowning closed as an accident")],
    [("reader promise", "a fair puzzle with every clue on the page")],
]
QUESTIONS = [
    "What stands in Mara's way?",
    "What should the reader be promised?",
]


def test_a_new_book_reaches_hand_off_with_sol_terra_and_luna_acting_only_through_mcp(transactional_db, mcp_url):
    user = UserFactory(username="mara-writer")
    author = Browser(user)

    # She creates the book, switches the built-in agents off for it (the server's switch stays on), makes a key
    # per role for her own client, and starts the discovery.
    author.post(
        "/books/new/",
        {
            "title": "The Lighthouse Keeper",
            "premise": "A lighthouse keeper finds a drowned man's letter that names her as the next to die.",
            "genre_pack": "mystery",
        },
    )
    book = Book.objects.get(owner=user)
    author.post(f"/books/{book.pk}/agents/act/", {"on": "0", "next": f"/books/{book.pk}/"})
    book.refresh_from_db()
    assert book.agents_act is False
    keys = {role: author.make_key(role, book) for role in ROLES}
    author.post(f"/books/{book.pk}/discovery/start/")
    session = DiscoverySession.objects.get(book=book)
    book_id, session_id = str(book.pk), str(session.pk)

    agents = Agents(mcp_url, keys)
    try:
        for role in ROLES:  # each reads before it writes
            dossier = agents(role, "dossier_take", book_id=book_id)
            assert dossier["agent_role"] == role

        # G0: Sol asks for it at once (the premise is the book's); she approves it from her inbox.
        card = agents(
            "sol",
            "loop_gate_request",
            book_id=book_id,
            gate="G0",
            summary="Why this book exists: a keeper proving a drowning was murder.",
            decisions_requested=["ratify the book's purpose"],
            recommended="approve",
            reversibility_class="reversible",
        )
        author.decide(Approval.objects.get(pk=card["approval_id"]), "This is why the book exists.")

        # The conversation: she answers Sol's question in a sentence; Luna extracts what she said; Sol notes it
        # and asks the next question, citing her turn; she confirms what Luna read in each of her turns.
        for number, answer in enumerate(ANSWERS):
            author.post(f"/books/{book_id}/turns/", {"content": answer})
            turn = Turn.objects.filter(session=session, role="author").order_by("-ordinal").first()
            for key, value in EXTRACTED[number]:
                agents(
                    "luna",
                    "observation_extract",
                    turn_id=str(turn.pk),
                    key=key,
                    value=value,
                    provenance="agent-inferred",
                    confidence=0.8,
                )
            agents(
                "sol",
                "scratchpad_append",
                session_id=session_id,
                kind="hypothesis",
                content=f"Her turn {turn.ordinal} settles: {', '.join(k for k, _ in EXTRACTED[number])}.",
                source_refs=[{"type": "turn", "id": str(turn.pk)}],
            )
            if number < len(QUESTIONS):
                agents(
                    "sol",
                    "question_set",
                    session_id=session_id,
                    question=QUESTIONS[number],
                    source_refs=[{"type": "turn", "id": str(turn.pk)}],
                )
                session.refresh_from_db()
                assert session.current_question == QUESTIONS[number]
            author.post(f"/books/{book_id}/turns/{turn.pk}/confirm/")
        observations = Observation.objects.filter(session=session)
        assert observations.count() == sum(len(found) for found in EXTRACTED)
        assert not observations.exclude(status="confirmed").exists(), list(observations.values("key", "status"))
        cited = [{"type": "observation", "id": str(o.pk)} for o in observations.order_by("created_at")]

        # G1 passes on its own; Terra proposes the core thrust and Sol puts it to her at G1.5.
        g1 = agents(
            "sol",
            "loop_gate_request",
            book_id=book_id,
            gate="G1",
            summary="The problem is framed.",
            decisions_requested=["frame the problem"],
            reversibility_class="reversible",
        )
        assert g1["outcome"] == "passed", g1
        thrust = agents(
            "terra",
            "thrust_propose",
            session_id=session_id,
            kind="core",
            title="The keeper's doubt",
            main_thrust="A keeper must prove a drowning was murder before the town buries the truth.",
            character_engine="Mara's need to be believed against her habit of keeping quiet.",
            central_conflict="The harbour master wants the drowning closed as an accident.",
            reader_promise=["a fair puzzle with every clue on the page"],
        )
        card = agents(
            "sol",
            "loop_gate_request",
            book_id=book_id,
            gate="G1.5",
            summary="One core thrust: the keeper's doubt.",
            decisions_requested=["choose the thrust"],
            recommended="approve",
            reversibility_class="reversible",
            thrust_id=thrust["id"],
        )
        g15 = Approval.objects.get(pk=card["approval_id"])
        assert OptionCard.objects.get(approval_id=g15.pk).payload["thrust"]["id"] == thrust["id"]
        author.decide(g15, "The core keeps the keeper at the centre.", thrust_id=thrust["id"])

        # Terra drafts the charter from the confirmed observations; she approves it.
        charter = agents(
            "terra",
            "charter_propose",
            book_id=book_id,
            main_thrust="A keeper must prove a drowning was murder before the town buries the truth.",
            reader_promise=["a fair puzzle with every clue on the page"],
            protagonist={"name": "Mara Quell", "want": "to be believed"},
            central_conflict="The harbour master wants the drowning closed as an accident.",
            source_refs=cited,
        )
        author.decide(Approval.objects.get(pk=charter["approval_id"]), "Mara carries it.")

        # Sol proposes canon from her confirmed words and asks for her verdict; she approves it.
        protagonist = observations.get(key="protagonist name")
        claim = agents(
            "sol",
            "claim_propose",
            scope="book",
            scope_id=book_id,
            subject="Mara Quell",
            predicate="is",
            value="the protagonist",
            provenance="agent-inferred",
            source_refs=[{"type": "observation", "id": str(protagonist.pk)}],
        )
        asked = agents("sol", "claim_request_approval", claim_id=claim["id"], book_id=book_id, note="She named her.")
        author.decide(Approval.objects.get(pk=asked["approval_id"]), "She is mine.")

        # G2: Sol hands Luna a bounded question and she returns it; Terra draws the trace from the premise to
        # Chapter 1 and writes the decision brief; each lens files its review; Sol closes the round and asks.
        handoff = agents(
            "sol",
            "handoff_create",
            book_id=book_id,
            to_role="luna",
            decision="Does the charter keep every clue on the page?",
            allowed_sources=cited[-1:],
        )
        agents(
            "luna",
            "handoff_return",
            handoff_id=handoff["id"],
            facts=[{"text": "The charter promises a fair puzzle.", "source_refs": cited[-1:]}],
            inferences=[{"text": "The letter is the first clue and must be shown in Chapter 1."}],
        )
        for node_id, kind in (("premise", "premise"), ("thrust", "story-question"), ("ch1", "chapter")):
            agents("terra", "loop_trace_node_add", book_id=book_id, node_id=node_id, kind=kind)
        for a, b in (("premise", "thrust"), ("thrust", "ch1")):
            agents("terra", "loop_trace_edge_add", book_id=book_id, from_id=a, to_id=b)
        agents(
            "terra",
            "loop_artifact_write",
            book_id=book_id,
            slug="decision-brief",
            type="decision-brief",
            content={
                "success_metrics": ["the reader can name the culprit by the last chapter from clues on the page"],
                "chapter_1": "Mara finds the drowned man's letter naming her.",
            },
        )
        for role, lens in (("terra", "canon-integrity"), ("luna", "reader-trust")):
            agents(
                role,
                "loop_review_record",
                book_id=book_id,
                lens=lens,
                gate="G2",
                findings=[{"text": "every clue is on the page", "resolution": "resolved", "reason": "checked"}],
            )
        agents("sol", "loop_round_advance", book_id=book_id)
        lint = agents("sol", "loop_lint", book_id=book_id, strict=True)
        assert lint["ok"], lint
        card = agents(
            "sol",
            "loop_gate_request",
            book_id=book_id,
            gate="G2",
            summary="The charter and the trace are ready.",
            decisions_requested=["ratify the charter"],
            recommended="approve",
            reversibility_class="reversible",
        )
        assert trace_lint(book, strict=True).ok
        author.decide(Approval.objects.get(pk=card["approval_id"]), "The charter governs the book.")

        # G3: Sol puts Terra's brief on the hand-off card; her verdict ratifies it and hands the book to drafting.
        card = agents(
            "sol",
            "loop_gate_request",
            book_id=book_id,
            gate="G3",
            summary="Hand off to drafting at Chapter 1.",
            decisions_requested=["hand off"],
            recommended="approve",
            reversibility_class="reversible",
            artifacts=["decision-brief"],
        )
        assert BlackboardArtifact.objects.get(book=book, slug="decision-brief").status == ArtifactStatus.PROPOSED
        author.decide(Approval.objects.get(pk=card["approval_id"], gate="G3"), "Ready to draft.")
        # What the agents read back through MCP: the loop handed off.
        assert agents("luna", "loop_read", book_id=book_id)["meta"]["status"] == "handed-off"
    finally:
        agents.close()

    # The hand-off, as the built-in flow ends.
    assert LoopMeta.objects.get(book=book).status == "handed-off"
    brief = BlackboardArtifact.objects.get(book=book, slug="decision-brief")
    assert brief.status == ArtifactStatus.RATIFIED and brief.produced_by == "terra"
    approved = StoryCharter.objects.get(book=book, status="approved")
    assert approved.proposed_by == "terra" and approved.content["protagonist"]["name"] == "Mara Quell"
    assert KnowledgeClaim.objects.get(pk=claim["id"]).status == "approved"
    assert Chapter.objects.get(book=book, number=1).spec == "Mara finds the drowned man's letter naming her."
    for lens, role in (("canon-integrity", "terra"), ("reader-trust", "luna")):
        assert LensReview.objects.get(book=book, gate="G2", lens__slug=lens).reviewer_role == role
    assert decision_log_verify(book).ok

    # Nothing in-app acted, and every row an agent role wrote is one a tool answered with.
    assert not AgentRun.objects.filter(book=book).exists()
    assert set(ApiKey.objects.filter(owner=user).values_list("role", flat=True)) == set(ROLES)
    written_by_agents = {
        "observations": (
            ids(Observation.objects.filter(session=session)),
            agents.answered("observation_extract"),
        ),
        "scratchpad": (
            ids(ScratchpadEntry.objects.filter(session=session)),
            agents.answered("scratchpad_append")
            | {str(e["id"]) for _r, t, body in agents.calls if t == "handoff_return" for e in body["result_entries"]},
        ),
        "agent turns": (
            ids(Turn.objects.filter(session=session).exclude(role="author")),
            set(),  # Sol's questions are the session's, not turns: no agent spoke a turn here
        ),
        "thrusts": (
            ids(ThrustCandidate.objects.filter(session__book=book)),
            agents.answered("thrust_propose"),
        ),
        "charters": (
            ids(StoryCharter.objects.filter(book=book)),
            agents.answered("charter_propose"),
        ),
        "claims": (
            ids(KnowledgeClaim.objects.filter(base__owner_id__in=[book_id, session_id])),
            agents.answered("claim_propose"),
        ),
        "handoffs": (
            ids(Handoff.objects.filter(book=book)),
            agents.answered("handoff_create"),
        ),
        "trace nodes": (
            set(TraceNode.objects.filter(book=book).values_list("node_id", flat=True)),
            agents.answered("loop_trace_node_add", key="node_id"),
        ),
        "trace edges": (
            ids(TraceEdge.objects.filter(book=book)),
            agents.answered("loop_trace_edge_add"),
        ),
        "reviews": (
            ids(LensReview.objects.filter(book=book)),
            agents.answered("loop_review_record"),
        ),
        "slots": (
            # (the backlog is the hand-off's own, written by the author's G3 verdict)
            set(BlackboardArtifact.objects.filter(book=book).exclude(slug="backlog").values_list("slug", flat=True)),
            agents.answered("loop_artifact_write", key="slug"),
        ),
    }
    for what, (stored, through_tools) in written_by_agents.items():
        assert stored == through_tools, f"{what}: stored {sorted(stored)}, written by tools {sorted(through_tools)}"
    print(f"\nauthor acts: {author.acts}; tool calls: {len(agents.calls)}")
