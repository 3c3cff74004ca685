"""The MCP twin of the REST authorisation matrix: every tool, called by every agent caller.

Callers, in this order (refused ones first, so the permitted ones act on an untouched scene):

    foreign (Sol of another author), scoped (Sol limited to another of the author's books),
    luna, terra, sol

Each cell is the expected outcome: ``OK`` (and then the row the call wrote is checked: who wrote
it, what it says) or the status of the refusal. Every call is also made through the matching REST
route, inside a savepoint that is rolled back, and the two must agree: a success where REST
succeeds, and otherwise the same status with the same message, code and field. A tool offered to a
role is one its capabilities allow; a tool not offered is refused by its service, naming the
capability, exactly as the REST route refuses it.
"""

from __future__ import annotations

import json
import re

import pytest
from django.db import transaction
from django.test import Client

from approvals.models import Approval
from approvals.services import approval_decide
from discovery.access import book_access, capabilities_of
from discovery.agents.models import AgentRun
from discovery.loop.models import (
    BlackboardArtifact,
    Candidate,
    LensRerun,
    LensReview,
    LoopMeta,
    OpenQuestion,
    OptionCard,
    PlanNode,
    TraceEdge,
    TraceNode,
    ValidationPlanItem,
)
from discovery.models import (
    CodexEntry,
    ContextDossier,
    ContinuityFinding,
    DiscoverySession,
    Handoff,
    KnowledgeBase,
    KnowledgeClaim,
    KnowledgeLink,
    Observation,
    ScratchpadEntry,
    SessionQuestion,
    StoryCharter,
    ThrustCandidate,
    Turn,
)
from discovery.services import claim_request_approval
from library.models import KnowledgeSource, ResearchItem
from novelgraph.core.auth import principal_for_key, principal_for_user
from novelgraph.core.duties import TOOLS_BY_NAME, tools
from novelgraph.core.services import api_key_create

from .discovery_support import charter_body, thrust_body
from .factories import AgentRunFactory, ContextDossierFactory, KnowledgeClaimFactory, ObservationFactory
from .mcp_support import agent_keys, build_mcp_scene, call, outcome, tool_names

pytestmark = pytest.mark.django_db

CALLERS = ["foreign", "scoped", "luna", "terra", "sol"]
OK = "ok"
LOOP_CONTROLLER = (404, 404, 403, 403, OK)
EVERY_ROLE = (404, 404, OK, OK, OK)  # the lenses' duties and the reads: each role, on its own book
SOL_ONLY = (404, 404, 403, 403, OK)

MCP_EXPECTED: dict[str, tuple] = {
    "dossier_take": (404, 404, OK, OK, OK),
    "library_search": (OK, OK, OK, OK, OK),
    "scratchpad_append": (404, 404, OK, OK, OK),
    "handoff_return": (404, 404, OK, 403, 403),
    "thrust_propose": (404, 404, 403, OK, OK),
    "charter_propose": (404, 404, 403, OK, OK),
    "claim_propose": (404, 404, 403, 403, OK),
    "claim_request_approval": (404, 404, 403, 403, OK),
    "question_set": (404, 404, 403, 403, OK),
    "question_close": (404, 404, 403, 403, OK),
    "handoff_create": (404, 404, 403, 403, OK),
    "loop_gate_request": LOOP_CONTROLLER,
    "loop_round_advance": LOOP_CONTROLLER,
    "loop_cost_spend": LOOP_CONTROLLER,
    "loop_node_add": LOOP_CONTROLLER,
    "loop_node_update": LOOP_CONTROLLER,
    "loop_candidate_select": LOOP_CONTROLLER,
    "loop_question_route": LOOP_CONTROLLER,
    "loop_question_surface": LOOP_CONTROLLER,
    "loop_trace_settings": LOOP_CONTROLLER,
    "discovery_start": SOL_ONLY,
    "turn_add": SOL_ONLY,
    "observation_extract": EVERY_ROLE,
    "claim_story_set": SOL_ONLY,
    "agent_run_queue": SOL_ONLY,
    "book_search": EVERY_ROLE,
    "codex_read": EVERY_ROLE,
    "codex_entries_read": EVERY_ROLE,
    "codex_entry_propose": SOL_ONLY,  # proposed, for the author's verdict (tests/test_codex_entry_proposals.py)
    "bible_read": EVERY_ROLE,
    "series_bible_read": (404, 404, 403, OK, OK),  # series material: Luna lacks series:read
    "chapter_text_read": EVERY_ROLE,
    "chapter_revisions_read": EVERY_ROLE,
    "chapter_compare": EVERY_ROLE,
    "continuity_findings_read": EVERY_ROLE,
    "reader_promises_read": EVERY_ROLE,
    # Luna's check files its findings; no tool writes the text or settles a finding (the author's).
    "continuity_findings_file": (404, 404, OK, 403, 403),
    "chapter_check": SOL_ONLY,
    "research_collect": SOL_ONLY,
    "research_propose": EVERY_ROLE,
    "research_propose_from_url": EVERY_ROLE,
    "loop_candidate_add": EVERY_ROLE,
    "loop_question_raise": EVERY_ROLE,
    "loop_question_resolve": EVERY_ROLE,
    "loop_trace_node_add": EVERY_ROLE,
    "loop_trace_edge_add": EVERY_ROLE,
    "loop_trace_node_withdraw": EVERY_ROLE,
    "loop_trace_edge_withdraw": EVERY_ROLE,
    "loop_validation_add": EVERY_ROLE,
    # The validation plan moves by the validation lens (Luna), Sol or the author: never Terra.
    "loop_validation_status": (404, 404, OK, 403, OK),
    "loop_artifact_write": EVERY_ROLE,
    # Each required review is filed by the role the roster names for its lens: Sol files none.
    "loop_review_record": (404, 404, OK, OK, 403),
    "loop_rerun_done": EVERY_ROLE,
    "loop_read": EVERY_ROLE,
    "loop_nodes": EVERY_ROLE,
    "loop_candidates": EVERY_ROLE,
    "loop_questions": EVERY_ROLE,
    "loop_trace_nodes": EVERY_ROLE,
    "loop_trace_edges": EVERY_ROLE,
    "loop_validation_plan": EVERY_ROLE,
    "loop_artifacts": EVERY_ROLE,
    "loop_reviews": EVERY_ROLE,
    "loop_lint": EVERY_ROLE,
    "loop_missing": EVERY_ROLE,
    # Issue 27: the reads of every agent-readable GET route (each answers what its route answers, writes nothing).
    **{name: EVERY_ROLE for name in (
        "book_read", "book_chapters", "discovery_read", "book_sessions", "book_turns", "book_thrusts",
        "book_scratchpad", "book_observations", "book_charters", "canon_list", "author_constraints",
        "knowledge_bases", "session_turns", "session_observations", "session_thrusts", "session_scratchpad",
        "session_questions", "observation_read", "observation_revisions", "claim_conflicts", "dossiers_list",
        "dossier_read", "codex_chapters", "codex_claims", "codex_withheld", "codex_findings", "claim_history",
        "claim_versions", "claim_decisions", "handoff_read", "handoff_result_entries", "loop_lint_findings",
        "loop_cascade_preview", "loop_cascade_affected", "loop_cascade_stale", "loop_cascade_stale_artifacts",
        "loop_reruns", "loop_rerun_artifacts", "loop_constraints", "loop_cards", "agent_runs", "agent_run_read",
        "agent_run_written", "research_list",
        # The approvals' and the log's reads, withheld for the caller's role as their routes withhold them.
        "approvals_list", "approval_read", "approval_list_items", "approval_superseded_versions",
        "decision_log_read", "decision_log_verify",
    )},
    # Who the key is and its books; the curated library (no book): every key reads them.
    **{name: (OK, OK, OK, OK, OK) for name in ("whoami", "books_list", "library_sources", "library_source",
                                               "library_chunks")},
}  # fmt: skip
READS = {name for name in MCP_EXPECTED if TOOLS_BY_NAME[name].read_only} - {
    "library_search", "book_search", "codex_read", "loop_read", "loop_nodes", "loop_candidates", "loop_questions",
    "loop_trace_nodes", "loop_trace_edges", "loop_validation_plan", "loop_artifacts", "loop_reviews", "loop_lint",
}  # fmt: skip
LENS_OF = {"luna": "reader-trust", "terra": "canon-integrity", "sol": "reader-trust"}


def read_arguments(tool: str, ids: dict, caller: str) -> dict:
    """A read's arguments: its route's path parameters from the scene (a dossier or run of the caller's role)."""
    path = TOOLS_BY_NAME[tool].path
    given = {"dossier_id": ids[f"dossier_{caller}"], "run_id": ids[f"run_{caller}"], "rerun_id": ids["rerun_luna"]}
    given["number"] = 1  # the scene's chapter
    args = {name: given.get(name, ids.get(name)) for name in path}
    if tool.startswith("loop_cascade"):
        args["node"] = "t-luna"  # a trace node of the scene
    if tool == "chapter_compare":
        args |= {"older": 1, "newer": 1}  # the scene's chapter 1 has one revision
    if tool == "bible_read":
        args["chapter"] = 1  # the bible is always as of the chapter a reader has reached
    if tool == "series_bible_read":
        args |= {"book": ids["book_id"], "chapter": 1}  # as of the scene's book, chapter 1
    if tool == "approvals_list":
        args["book_id"] = ids["book_id"]  # the scene's book (another key's books are refused, as REST refuses them)
    return args


def read_scene(author, book, ids: dict) -> dict:
    """What the reads name beyond the scene: an observation, a dossier and a run per role, a library source."""
    turn = Turn.objects.get(pk=ids["turn_id"])
    extra = {
        "observation_id": str(ObservationFactory(turn=turn, value="the lamp", status="working").pk),
        "source_id": str(KnowledgeSource.objects.order_by("title").first().pk),
    }
    for role, task in (("luna", "contradictions"), ("terra", "thrusts"), ("sol", "next-question")):
        extra[f"dossier_{role}"] = str(ContextDossierFactory(book=book, agent_role=role).pk)
        extra[f"run_{role}"] = str(AgentRunFactory(book=book, role=role, task=task).pk)
    # Two decided promotions: a book claim's (the approval the approval reads name) and a series claim's, which
    # Luna reads only as withheld (in the approvals' list and in the log), through the tool as through REST.
    sol = book_access(principal_for_key(api_key_create(owner=author, role="sol")[1]), book)
    as_author = book_access(principal_for_user(author), book)
    series, _ = KnowledgeBase.objects.get_or_create(scope="series", owner_id=str(book.series_id))
    KnowledgeLink.objects.get_or_create(book=book, base=series, relation="series-canon")
    book_base = KnowledgeBase.objects.get(scope="book", owner_id=str(book.pk))
    for base, subject in ((series, "Ines"), (book_base, "The lamp")):
        claim = KnowledgeClaimFactory(base=base, subject=subject, predicate="is", value=f"{subject}'s secret")
        approval = claim_request_approval(access=sol, claim_id=claim.pk)
        approval_decide(access=as_author, approval_id=approval.pk, verdict="approve", rationale="It holds.")
    extra |= {"approval_id": str(approval.pk), "name": "contradictions"}
    return {**ids, **extra}


ROW_MODELS = (ContextDossier, ScratchpadEntry, Handoff, ThrustCandidate, StoryCharter, KnowledgeClaim, Observation,
              Turn, SessionQuestion, OpenQuestion, TraceNode, TraceEdge, BlackboardArtifact, LensReview, Approval,
              AgentRun, ResearchItem, PlanNode, Candidate, ValidationPlanItem, OptionCard, LensRerun)  # fmt: skip


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in ROW_MODELS}


def arguments(tool: str, ids: dict, caller: str) -> dict:
    """A valid call of ``tool`` on the scene's book (distinct text per caller, to tell rows apart)."""
    if tool in READS:
        return read_arguments(tool, ids, caller)
    book, session = ids["book_id"], ids["session_id"]
    return {
        "dossier_take": {"book_id": book},
        "library_search": {"q": "fair play", "limit": 3},
        "scratchpad_append": {"session_id": session, "kind": "question", "content": f"Whom does {caller} doubt?"},
        "handoff_return": {"handoff_id": ids["handoff_id"], "facts": [{"text": f"{caller}: the lamp was lit."}]},
        "thrust_propose": {"session_id": session, **thrust_body(title=f"{caller}'s thrust")},
        "charter_propose": {"book_id": book, **charter_body(main_thrust=f"{caller}: a keeper proves a murder.")},
        "claim_propose": {
            "scope": "book",
            "scope_id": book,
            "subject": "Mara",
            "predicate": f"distrusts ({caller})",
            "value": "the harbour master",
            "provenance": "agent-proposed",
        },
        "claim_request_approval": {"claim_id": ids["claim_id"], "book_id": book, "note": f"from {caller}"},
        "question_set": {
            "session_id": session,
            "question": f"{caller}: who should the reader distrust first?",
            "source_refs": [{"type": "turn", "id": ids["turn_id"]}],
        },
        "question_close": {"session_id": session},
        "handoff_create": {"book_id": book, "to_role": "luna", "decision": f"{caller}: which places recur?"},
        "loop_gate_request": {
            "book_id": book,
            "gate": "G0",
            "summary": "Ratify the premise.",
            "decisions_requested": ["Is this why the book exists?"],
            "reversibility_class": "reversible",
        },
        "loop_round_advance": {"book_id": book},
        "loop_cost_spend": {"book_id": book, "amount": 1.5, "lens": "sol"},
        "loop_node_add": {"book_id": book, "parent_id": ids["node_id"], "intent": f"{caller}: the keeper's alibi"},
        "loop_node_update": {"book_id": book, "node_id": ids["node_id"], "intent": f"{caller}: a drowning"},
        "loop_candidate_select": {
            "book_id": book,
            "node_id": ids["node_id"],
            "candidate_id": ids["candidate_id"],
            "rationale": "The strongest engine.",
        },
        "loop_question_route": {
            "book_id": book,
            "question_id": ids["question_id"],
            "target_discipline": "explore-options",
        },
        "loop_question_surface": {"book_id": book, "question_id": ids["question_id"]},
        "loop_trace_settings": {"book_id": book, "leaf_kind": "scene"},
        "discovery_start": {"book_id": book},
        "turn_add": {
            "session_id": session,
            "role": "sol",
            "content": f"{caller}: the lamp was lit at nine.",
            "observations": [
                {"key": "lamp", "value": f"{caller}: the lamp burned at nine", "provenance": "agent-inferred"}
            ],
        },
        "observation_extract": {
            "turn_id": ids["turn_id"],
            "key": "place",
            "value": f"{caller}: the harbour of Vell",
            "provenance": "agent-inferred",
        },
        "claim_story_set": {"claim_id": ids["claim_id"], "book_id": book, "true_from_chapter": 2, "known_by": "reader"},
        "agent_run_queue": {"book_id": book, "task": "next-question"},
        "book_search": {"book_id": book, "q": "lamp"},
        "codex_read": {"book_id": book, "as_of_chapter": 1},
        "codex_entries_read": {"book_id": book},
        "codex_entry_propose": {"book_id": book, "name": f"Hale {caller}", "kind": "person", "aliases": []},
        "chapter_text_read": {"book_id": book, "number": 1},
        "continuity_findings_read": {"book_id": book, "chapter": 1},
        "reader_promises_read": {"book_id": book, "chapter": 1},
        "continuity_findings_file": {
            "book_id": book,
            "number": 1,
            "revision": 1,
            "findings": [
                {
                    "kind": "not-in-canon",
                    "key": "name:bell",
                    "span_start": 14,
                    "span_end": 18,
                    "quote": "bell",
                    "message": f"{caller}: a name no entry knows.",
                }
            ],
        },
        "chapter_check": {"book_id": book, "number": 1},
        "research_collect": {
            "book_id": book,
            "url": f"{ids.get('site', 'http://example.invalid')}/page",
            "claim": f"{caller}: keepers logged every lighting.",
        },
        "research_propose": {
            "book_id": book,
            "url": "https://example.org/lighthouses",
            "title": f"{caller}: lighthouse keeping",
            "claim": "Keepers logged every lighting.",
            "citation": "Example, Lighthouses (1901)",
        },
        "research_propose_from_url": {
            "book_id": book,
            "url": f"{ids.get('site', 'http://example.invalid')}/page",
            "claim": f"{caller}: keepers logged every lighting.",
        },
        "loop_candidate_add": {
            "book_id": book,
            "node_id": ids["node_id"],
            "altitude": "book",
            "mechanic": f"{caller} engine",
            "shape": "s",
            "riskiest_assumption": "r",
        },
        "loop_question_raise": {
            "book_id": book,
            "question": f"{caller}: who saw the boat?",
            "target_discipline": "sol",
        },
        "loop_question_resolve": {
            "book_id": book,
            "question_id": ids[f"question_{caller}"],
            "resolution": f"{caller}: the keeper's log settles it.",
            "cites": f"question:{ids['question_id']}",
        },
        "loop_trace_node_add": {"book_id": book, "node_id": f"scene-{caller}", "kind": "scene", "produced_by": caller},
        "loop_trace_edge_add": {"book_id": book, "from_id": f"t-{caller}", "to_id": "premise"},
        "loop_trace_node_withdraw": {"book_id": book, "trace_node": f"w-{caller}", "reason": f"{caller} rethought"},
        "loop_trace_edge_withdraw": {"book_id": book, "from_id": f"t-{caller}", "to_id": "premise-w", "reason": "r"},
        "loop_validation_add": {
            "book_id": book,
            "assumption": f"{caller}: the reader trusts the keeper",
            "kill_condition": "k",
            "activity": "a",
        },
        "loop_validation_status": {
            "book_id": book,
            "item_id": ids[f"item_{caller}"],
            "validation_status": "validating",
        },
        "loop_artifact_write": {
            "book_id": book,
            "slug": f"notes-{caller}",
            "type": "notes",
            "content": {"text": f"{caller}'s notes"},
        },
        "loop_review_record": {"book_id": book, "lens": LENS_OF[caller], "gate": "G2", "summary": f"{caller} read it"},
        "loop_rerun_done": {"book_id": book, "rerun_id": ids.get(f"rerun_{caller}")},
        "loop_read": {"book_id": book},
        "loop_nodes": {"book_id": book},
        "loop_candidates": {"book_id": book, "node_id": ids["node_id"]},
        "loop_questions": {"book_id": book, "limit": 2, "offset": 1},
        "loop_trace_nodes": {"book_id": book},
        "loop_trace_edges": {"book_id": book},
        "loop_validation_plan": {"book_id": book},
        "loop_artifacts": {"book_id": book},
        "loop_reviews": {"book_id": book},
        "loop_lint": {"book_id": book, "strict": True},
        "loop_missing": {"book_id": book},
    }[tool]


def written(tool: str, body: dict, role: str, ids: dict) -> None:
    """What a successful call left in the database, asserted (not only that it 'worked')."""
    book = ids["book_id"]
    if tool == "dossier_take":
        dossier = ContextDossier.objects.get(pk=body["id"])
        assert (str(dossier.book_id), dossier.agent_role) == (book, role)
        assert body["content"]["capabilities"] == sorted(c.value for c in capabilities_of(role))
    elif tool == "library_search":
        # A hit holds the word in its text or is filed under it (the curated shelves' topics: "fair play").
        assert body["results"] and all(
            "fair" in (r["content"] + " ".join(r.get("topics") or [])).lower() for r in body["results"]
        )
    elif tool == "scratchpad_append":
        entry = ScratchpadEntry.objects.get(pk=body["id"])
        assert (entry.agent_role, entry.content, str(entry.session_id)) == (
            role,
            f"Whom does {role} doubt?",
            ids["session_id"],
        )
    elif tool == "handoff_return":
        handoff = Handoff.objects.get(pk=ids["handoff_id"])
        assert handoff.status == "returned"
        assert [(e.agent_role, e.kind, e.content) for e in handoff.result_entries.all()] == [
            (role, "observation", f"{role}: the lamp was lit.")
        ]
    elif tool == "thrust_propose":
        thrust = ThrustCandidate.objects.get(pk=body["id"])
        assert (thrust.proposed_by, thrust.status, thrust.title) == (role, "proposed", f"{role}'s thrust")
    elif tool == "charter_propose":
        charter = StoryCharter.objects.select_related("approval").get(pk=body["id"])
        assert (charter.proposed_by, charter.status, charter.approval.status) == (role, "proposed", "pending")
        assert charter.approval.requested_by_role == role
    elif tool == "claim_propose":
        claim = KnowledgeClaim.objects.get(pk=body["id"])
        assert (claim.proposed_by, claim.status, claim.predicate) == (role, "proposed", f"distrusts ({role})")
    elif tool == "claim_request_approval":
        approval = Approval.objects.get(pk=body["approval_id"])
        assert (approval.kind, approval.status, approval.requested_by_role) == ("canon-promotion", "pending", role)
        assert approval.subject_id == ids["claim_id"]
        assert KnowledgeClaim.objects.get(pk=ids["claim_id"]).status == "proposed", "requesting decides nothing"
    elif tool == "question_set":
        asked = SessionQuestion.objects.get(pk=body["id"])
        assert asked.asked_by == role
        assert DiscoverySession.objects.get(pk=ids["session_id"]).current_question == asked.question
    elif tool == "question_close":
        assert body["closed"] is True
        assert DiscoverySession.objects.get(pk=ids["session_id"]).current_question == ""
    elif tool == "handoff_create":
        handoff = Handoff.objects.select_related("dossier").get(pk=body["id"])
        assert (handoff.from_role, handoff.to_role, handoff.status) == (role, "luna", "open")
        assert handoff.dossier.agent_role == "luna"
    elif tool == "loop_gate_request":
        card = OptionCard.objects.get(pk=body["card"]["id"])
        assert (body["outcome"], card.gate, card.status, card.raised_by) == ("awaiting-human", "G0", "pending", role)
        assert LoopMeta.objects.get(book_id=book).gate == "G0", "asking moves no gate"
    elif tool == "loop_round_advance":
        assert body["round"] == LoopMeta.objects.get(book_id=book).round == 1
    elif tool == "loop_cost_spend":
        assert body["cost_spent"] == LoopMeta.objects.get(book_id=book).cost_spent == 1.5
    elif tool == "loop_node_add":
        node = PlanNode.objects.get(pk=body["id"])
        assert (str(node.parent_id), node.intent) == (ids["node_id"], f"{role}: the keeper's alibi")
    elif tool == "loop_node_update":
        assert PlanNode.objects.get(pk=ids["node_id"]).intent == f"{role}: a drowning"
    elif tool == "loop_candidate_select":
        assert body["selected"] is True
        assert Candidate.objects.get(pk=ids["candidate_id"]).status == "selected"
    elif tool == "loop_question_route":
        question = OpenQuestion.objects.get(pk=ids["question_id"])
        assert (question.status, question.target_discipline) == ("routed", "explore-options")
    elif tool == "loop_question_surface":
        assert OpenQuestion.objects.get(pk=ids["question_id"]).status == "surfaced"
    elif tool == "loop_trace_settings":
        assert body["leaf_kind"] == LoopMeta.objects.get(book_id=book).leaf_kind == "scene"
    elif tool == "discovery_start":
        assert str(body["session_id"]) == ids["session_id"], "resumed, not started twice"
        assert DiscoverySession.objects.filter(book_id=book).count() == 1
    elif tool == "turn_add":
        turn = Turn.objects.get(pk=body["id"])
        assert (turn.role, turn.content) == ("sol", f"{role}: the lamp was lit at nine.")
        assert [o.value for o in turn.observations.all()] == [f"{role}: the lamp burned at nine"]
    elif tool == "observation_extract":
        observation = Observation.objects.get(pk=body["id"])
        assert (str(observation.turn_id), observation.status, observation.value) == (
            ids["turn_id"],
            "working",
            f"{role}: the harbour of Vell",
        )
    elif tool == "claim_story_set":
        claim = KnowledgeClaim.objects.get(pk=ids["claim_id"])
        assert (claim.status, claim.true_from_chapter) == ("proposed", 2)
    elif tool == "agent_run_queue":
        run = AgentRun.objects.get(pk=body["id"])
        assert (str(run.book_id), run.task, run.role, run.status) == (book, "next-question", "sol", "queued")
    elif tool == "book_search":
        assert {"mode", "results", "withheld"} <= set(body)
    elif tool == "codex_read":
        assert (body["book_id"], body["as_of_chapter"]) == (book, 1)
    elif tool == "bible_read":
        assert (body["book_id"], body["chapter"]) == (book, 1) and "left_out_words" in body
    elif tool == "series_bible_read":
        assert (body["book_id"], body["chapter"], body["position"]) == (book, 1, 1)
        assert [s["book_id"] for s in body["sections"]] == [book] and "left_out_words" in body
    elif tool == "codex_entries_read":
        assert [e["name"] for e in body["items"]] == ["Mara"]
    elif tool == "codex_entry_propose":
        entry = CodexEntry.objects.get(pk=body["id"])
        assert (entry.name, entry.status, entry.created_by) == (f"Hale {role}", "proposed", "sol")
    elif tool == "chapter_text_read":
        assert (body["chapter"], body["revision"], body["text"]) == (1, 1, "Mara rang the bell.")
    elif tool == "continuity_findings_read":
        assert body["items"] == [] and body["count"] == 0
    elif tool == "reader_promises_read":
        assert (body["chapter"], body["chapters_with_text"]) == (1, [1])
    elif tool == "continuity_findings_file":
        finding = ContinuityFinding.objects.get(pk=body["filed"][0]["id"])
        assert (finding.kind, finding.quote, finding.status) == ("not-in-canon", "bell", "open")
    elif tool == "chapter_check":
        run = AgentRun.objects.get(pk=body["id"])
        assert (run.task, run.role, run.status, run.input) == (
            "continuity",
            "luna",
            "queued",
            {"chapter": 1, "revision": 1},
        )
    elif tool == "research_collect":
        run = AgentRun.objects.get(pk=body["id"])
        assert (run.task, run.role, run.status) == ("research-url", "luna", "queued")
        assert run.input["claim"] == f"{role}: keepers logged every lighting."
    elif tool == "research_propose":
        item = ResearchItem.objects.get(pk=body["id"])
        assert (item.proposed_by, item.status, item.title) == (role, "pending", f"{role}: lighthouse keeping")
    elif tool == "research_propose_from_url":
        item = ResearchItem.objects.get(pk=body["id"])
        claim = f"{role}: keepers logged every lighting."
        assert (item.proposed_by, item.status, item.claim) == (role, "pending", claim)
        assert item.title == "The Lamp Keepers of Vell" and item.source_sha256
    elif tool == "loop_candidate_add":
        candidate = Candidate.objects.get(pk=body["id"])
        assert (str(candidate.node_id), candidate.proposed_by, candidate.mechanic) == (
            ids["node_id"],
            role,
            f"{role} engine",
        )
        assert candidate.status == "proposed"
    elif tool == "loop_question_raise":
        asked = OpenQuestion.objects.get(pk=body["id"])
        assert (asked.raised_by, asked.question, asked.status) == (role, f"{role}: who saw the boat?", "open")
    elif tool == "loop_question_resolve":
        answered = OpenQuestion.objects.get(pk=ids[f"question_{role}"])
        assert (answered.status, answered.resolved_by) == ("resolved", role)
    elif tool == "loop_trace_node_add":
        node = TraceNode.objects.get(book_id=book, node_id=f"scene-{role}")
        assert (node.kind, node.status) == ("scene", "active")
    elif tool == "loop_trace_edge_add":
        assert TraceEdge.objects.get(book_id=book, from_id=f"t-{role}", to_id="premise").active
    elif tool == "loop_trace_node_withdraw":
        node = TraceNode.objects.get(book_id=book, node_id=f"w-{role}")
        assert (node.status, node.status_reason) == ("abandoned", f"withdrawn by {role}: {role} rethought")
    elif tool == "loop_trace_edge_withdraw":
        edge = TraceEdge.objects.get(book_id=book, from_id=f"t-{role}", to_id="premise-w")
        assert not edge.active and edge.inactive_reason.startswith(f"withdrawn by {role}")
    elif tool == "loop_validation_add":
        item = ValidationPlanItem.objects.get(pk=body["id"])
        assert (item.assumption, item.validation_status) == (f"{role}: the reader trusts the keeper", "hypothesis")
    elif tool == "loop_validation_status":
        assert ValidationPlanItem.objects.get(pk=ids[f"item_{role}"]).validation_status == "validating"
    elif tool == "loop_artifact_write":
        slot = BlackboardArtifact.objects.get(book_id=book, slug=f"notes-{role}")
        assert (slot.status, slot.produced_by, slot.content) == ("proposed", role, {"text": f"{role}'s notes"})
    elif tool == "loop_review_record":
        review = LensReview.objects.get(pk=body["id"])
        assert (review.lens_id, review.gate, review.reviewer_role, review.summary) == (
            LENS_OF[role],
            "G2",
            role,
            f"{role} read it",
        )
    elif tool == "loop_rerun_done":
        assert LensRerun.objects.get(pk=ids[f"rerun_{role}"]).status == "done"
    elif tool == "loop_read":
        assert (body["book_id"], body["meta"]["gate"]) == (book, LoopMeta.objects.get(book_id=book).gate)
    elif tool in {"loop_nodes", "loop_candidates", "loop_questions", "loop_trace_nodes", "loop_trace_edges"}:
        assert body["items"] and body["count"] >= len(body["items"])
        if tool == "loop_questions":
            assert (body["limit"], body["offset"], body["count"]) == (
                2,
                1,
                OpenQuestion.objects.filter(book_id=book).count(),
            )
            assert len(body["items"]) == 2
    elif tool in {"loop_validation_plan", "loop_artifacts", "loop_reviews"}:
        assert body["count"] == len(body["items"]) and body["offset"] == 0
    elif tool == "loop_lint":
        assert body["strict"] is True and not body["ok"], "the scene's orphan trace nodes fail a strict lint"
        assert body["counts"] and len(body["findings"]) <= 50
    elif tool == "loop_missing":
        assert body["started"] is True and body["gate"] == LoopMeta.objects.get(book_id=book).gate
        assert body["missing"] and all(item["what"] and item["reason"] for item in body["missing"])
    elif tool in {"approvals_list", "decision_log_read"}:
        # The series promotion is withheld from Luna (she lacks series:read), and only from her.
        key = "summary" if tool == "approvals_list" else "rationale"
        hidden = [item for item in body["items"] if item[key].startswith("withheld: series canon")]
        assert len(hidden) == (1 if role == "luna" else 0) and body["count"] == 2, (tool, role, body)
        assert ("Ines's secret" in json.dumps(body)) == (role != "luna")
    elif tool == "approval_read":
        assert (body["id"], body["status"], body["log_entry"]["decision"]) == (ids["approval_id"], "decided", "approve")
    elif tool == "decision_log_verify":
        assert body["ok"] is True and body["entries"] == 2, body
    elif tool in READS:
        pass  # checked against its REST route's body, and that it wrote nothing (the test below)
    else:  # pragma: no cover - a new tool needs its check here
        raise AssertionError(f"no check for {tool}")


def rest_twin(tool: str, key: str, args: dict, role: str):
    """The same call through the REST route, rolled back; returns the response. (The dossier route's
    body names the role, which the tool takes from the key.)"""
    method, path = TOOLS_BY_NAME[tool].route.split(" ", 1)
    names = re.findall(r"{(\w+)}", path)
    url = "/api/v1" + re.sub(r"{(\w+)}", lambda m: str(args[m.group(1)]), path)
    body = {k: v for k, v in args.items() if k not in names}
    if tool == "dossier_take":
        body["agent_role"] = role
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    with transaction.atomic():
        if method == "GET":
            response = Client().get(url, body, **headers)
        else:
            response = Client().generic(method, url, json.dumps(body), content_type="application/json", **headers)
        transaction.set_rollback(True)
    return response


STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(Z|[+-]\d\d:\d\d)")


def same_stamps(value):
    """The value with each timestamp to the millisecond (the REST encoder writes milliseconds, the tools
    pydantic's microseconds: the same instant)."""
    if isinstance(value, dict):
        return {k: same_stamps(v) for k, v in value.items()}
    if isinstance(value, list):
        return [same_stamps(v) for v in value]
    if isinstance(value, str) and (match := STAMP.fullmatch(value)):
        zone = "Z" if match.group(3) in ("Z", "+00:00") else match.group(3)
        return f"{match.group(1)}.{(match.group(2) or '').ljust(3, '0')[:3]}{zone}"
    return value


def assert_same_as_rest(tool: str, body: dict, rest: dict, caller: str) -> None:
    """A read answers what its REST route answers: the same object, or the same page (items and count)."""
    body, rest = same_stamps(body), same_stamps(rest)
    if TOOLS_BY_NAME[tool].many:
        assert (body["items"], body["count"]) == (rest["items"], rest["count"]), (tool, caller)
    else:
        assert body == rest, (tool, caller)


def test_every_tool_has_a_row_and_no_tool_decides():
    assert set(MCP_EXPECTED) == {tool.name for tool in tools()}
    # Answering a loop question is a lens's duty (the kinds the author settles are refused by the service).
    deciding = [t for t in tools() if t.route.endswith(("/resolve", "/promote", "/reject", "/admit", "/verdict"))]
    assert [t.name for t in deciding] == ["loop_question_resolve"]


@pytest.mark.parametrize("tool", [tool.name for tool in tools()])
def test_every_tool_answers_each_agent_caller_as_expected_and_as_its_rest_route(tool, author, book, research_site):
    ids = build_mcp_scene(author, book, reruns=tool == "loop_rerun_done" or tool in READS)
    if tool in READS:
        ids = read_scene(author, book, ids)
    ids["site"] = research_site.base
    keys = agent_keys(author, book)
    observed = []
    for caller in CALLERS:
        role = "sol" if caller in {"foreign", "scoped"} else caller
        args = arguments(tool, ids, caller if caller in {"luna", "terra", "sol"} else role)
        rest = rest_twin(tool, keys[caller], args, role)
        before = row_counts()
        status, body = outcome(call(keys[caller], tool, args))
        observed.append(status)
        assert (tool in tool_names(keys[caller])) == TOOLS_BY_NAME[tool].offered_to(role)
        if tool in READS:
            assert row_counts() == before, f"{tool} wrote rows"
        if status == OK:
            assert rest.status_code in (200, 201, 202), (tool, caller, rest.content)
            written(tool, body, role, ids)
            if tool in READS:
                assert_same_as_rest(tool, body, rest.json(), caller)
        else:
            assert rest.status_code == status, (tool, caller, rest.content, body)
            rest_body = rest.json()
            assert {k: body.get(k) for k in ("detail", "code", "field")} == {
                k: rest_body.get(k) for k in ("detail", "code", "field")
            }, (tool, caller)
            if status == 403:
                assert re.search(
                    r"\b(lacks [a-z]+:[a-z]+|only \w+ returns this handoff|is filed by \w+, not \w+)", body["detail"]
                ), body
            if caller in {"luna", "terra", "sol"} and not TOOLS_BY_NAME[tool].offered_to(role):
                assert status == 403, f"{tool} is refused to {role} by its service, naming the capability"
    assert tuple(observed) == MCP_EXPECTED[tool], f"{tool}: expected {MCP_EXPECTED[tool]}, got {tuple(observed)}"


# --- What a tool's arguments may say about who made a record (issue 24) ----------------------------
# The rows above send a plain call; these send what an impostor would. No tool adds a traceability node, a turn
# or a validation-plan status, so those cannot be forged here at all (the last test holds that); what can be said
# is refused as the REST route refuses it. Columns as MCP_EXPECTED.

SIGNED_INPUT: dict[str, tuple[str, dict, tuple]] = {
    # A plan node's validation status is the controller's (Sol's) to move: Terra and Luna are refused.
    "loop_node_update validation_status validating": (
        "loop_node_update", {"validation_status": "validating"}, LOOP_CONTROLLER,
    ),
    # Only the author states facts as herself: no agent labels its words author-stated.
    "claim_propose provenance author-stated": (
        "claim_propose", {"provenance": "author-stated"}, (404, 404, 403, 403, 422),
    ),
    "scratchpad_append provenance author-stated": (
        "scratchpad_append", {"provenance": "author-stated"}, (404, 404, 422, 422, 422),
    ),
}  # fmt: skip


@pytest.mark.parametrize("row", list(SIGNED_INPUT))
def test_what_a_tools_arguments_say_about_their_maker_is_refused_as_its_rest_route_refuses_it(row, author, book):
    tool, extra, expected = SIGNED_INPUT[row]
    ids = build_mcp_scene(author, book)
    keys = agent_keys(author, book)
    observed = []
    for caller in CALLERS:
        role = "sol" if caller in {"foreign", "scoped"} else caller
        args = {**arguments(tool, ids, role), **extra}
        if tool == "loop_node_update":
            args.pop("intent")
        rest = rest_twin(tool, keys[caller], args, role)
        status, body = outcome(call(keys[caller], tool, args))
        observed.append(status)
        if status == OK:
            assert rest.status_code == 200, (row, caller, rest.content)
        else:
            assert rest.status_code == status, (row, caller, rest.content, body)
            assert {k: body.get(k) for k in ("detail", "code", "field")} == {
                k: rest.json().get(k) for k in ("detail", "code", "field")
            }, (row, caller)
            if status == 422:
                assert body["field"] == "provenance" and "only the author" in body["detail"], body
    assert tuple(observed) == expected, f"{row}: expected {expected}, got {tuple(observed)}"
    assert not KnowledgeClaim.objects.filter(provenance="author-stated").exists()
    assert not ScratchpadEntry.objects.filter(provenance="author-stated").exists()
    if tool == "loop_node_update":
        assert PlanNode.objects.get(pk=ids["node_id"]).validation_status == "validating"  # Sol's move only


def test_no_tool_takes_a_makers_name_or_a_decided_observation():
    """Who made a record comes from the key: no tool's arguments name a producer, and none can bring an
    observation in other than working."""
    for tool in tools():
        text = json.dumps(tool.input_schema)
        # A trace node's ``produced_by`` only chooses among the caller's own names (its role, its lenses): the
        # service refuses any other (tests/test_canon_signatures.py, through REST and through this tool).
        assert '"produced_by"' not in text or tool.name == "loop_trace_node_add", tool.name
        # (a read may filter by status: ``book_observations``' ``status=confirmed`` brings nothing in)
        assert tool.read_only or ('"confirmed"' not in text and '"retired"' not in text), tool.name
