"""The model provider, task by task, against the chat-completions stub: each task's model is sent the JSON
schema of its plan (built from the API's own input schemas), and a scripted reply is applied through the same
services as the API; a small model's almost-JSON is read where a repair is safe and refused where it is not
(the run fails with the reason, nothing is written, and no request answers 500); each role has its own model,
server and cost per token, recorded on its runs."""

from __future__ import annotations

import json

import pytest

from discovery.agents.models import AgentRun, AgentTask
from discovery.agents.providers import OFFLINE_MODEL
from discovery.agents.providers.openai_compatible import TASK_BRIEF, messages_for, plan_schema
from discovery.agents.schemas import PLANS
from discovery.loop.models import BlackboardArtifact, LensReview, LoopMeta, TraceEdge, TraceNode
from discovery.models import Observation, ScratchpadEntry, ThrustCandidate, Turn

from .agents_support import discover_a_new_book, run_of, start_run, work_off_queue
from .discovery_support import start
from .loop_scenes import a_governing_charter, reach_g2
from .model_stub import ModelStub, context_of

pytestmark = pytest.mark.django_db

BASE = {"MAX_RETRIES": 0, "TIMEOUT": 30, "API_KEY": "stub-key"}


@pytest.fixture
def model_stub(settings):
    stub = ModelStub().start()
    settings.NOVELGRAPH_AGENTS = {
        **settings.NOVELGRAPH_AGENTS,
        **BASE,
        "PROVIDER": "openai-compatible",
        "BASE_URL": stub.base_url,
        "MODEL": "stub-model",
        "ROLES": {},
    }
    yield stub
    stub.stop()


def run_task(author_api, book, task: str) -> AgentRun:
    run = run_of(start_run(author_api, book, task))
    work_off_queue()
    run.refresh_from_db()
    return run


def sent_schema(stub: ModelStub, task: str) -> dict:
    """The JSON schema the model was given for ``task`` (the system message's last line)."""
    body = next(r["body"] for r in stub.requests if context_of(r["body"]["messages"])["task"] == task)
    return json.loads(body["messages"][0]["content"].split("valid against this JSON schema:\n", 1)[1].split("\n")[0])


# --- Every task has its brief and its schema, built from the API's input schemas -------------------------


@pytest.mark.parametrize("task", list(AgentTask.values))
def test_every_task_is_briefed_with_the_json_schema_of_its_plan(task):
    assert task in TASK_BRIEF and task in PLANS
    schema = plan_schema(task)
    assert schema == PLANS[task].model_json_schema()
    system, _user = messages_for(task, "sol", schema, {"task": task})
    assert TASK_BRIEF[task] in system["content"] and json.dumps(schema, separators=(",", ":")) in system["content"]


@pytest.mark.parametrize(
    ("task", "input_schema"),
    [
        ("extract", "ObservationIn"),
        ("canon-review", "ReviewIn"),
        ("trust-review", "ReviewIn"),
        ("brief", "ArtifactIn"),
    ],
)
def test_the_new_tasks_schemas_carry_the_apis_input_schemas(task, input_schema):
    from discovery import schemas as discovery_schemas
    from discovery.loop import schemas as loop_schemas

    defs = plan_schema(task)["$defs"]
    api_schema = getattr(loop_schemas, input_schema, None) or getattr(discovery_schemas, input_schema)
    # The plan's field is the API's schema (or extends it): every property the API validates is in it.
    own = next(d for name, d in defs.items() if name.startswith(input_schema) or name == "ExtractedObservation")
    assert set(api_schema.model_json_schema()["properties"]) <= set(own["properties"])


# --- A scripted reply per task, applied through the same services ------------------------------------------


def test_extract_a_scripted_reply_becomes_working_observations_citing_the_turn(model_stub, author_api, book):
    session = start(author_api, book)
    said = author_api.post(
        f"/sessions/{session.pk}/turns", {"role": "author", "content": "Mara Quell keeps the light at Saltmarsh."}
    )
    assert said.status_code == 201
    model_stub.script["extract"] = lambda ctx: {
        "observations": [
            {"turn_id": t["id"], "key": "protagonist name", "value": "Mara Quell", "confidence": 0.8}
            for t in ctx["turns"]
            if t["role"] == "author"
        ],
        "notes": ["One name, from the author's turn."],
    }

    run = run_task(author_api, book, "extract")

    assert run.status == "done", run.reason
    (observation,) = Observation.objects.filter(session=session)
    turn = Turn.objects.get(session=session, role="author")
    assert (observation.key, observation.value, observation.turn_id) == ("protagonist name", "Mara Quell", turn.pk)
    assert observation.status == "working" and observation.provenance == "agent-inferred"
    assert [(o.type, o.object_id) for o in run.outputs.all()] == [("observation", str(observation.pk))]
    assert "One name, from the author's turn." in run.notes
    assert "turn_id" in json.dumps(sent_schema(model_stub, "extract"))


def test_extract_a_reply_citing_no_turn_of_the_book_is_refused_and_writes_nothing(model_stub, author_api, book):
    session = start(author_api, book)
    author_api.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "Mara keeps the light."})
    model_stub.script["extract"] = lambda ctx: {
        "observations": [
            {"turn_id": t["id"], "key": "protagonist name", "value": "Mara"}
            for t in ctx["turns"]
            if t["role"] == "author"
        ]
        + [{"turn_id": "00000000-0000-4000-8000-000000000000", "key": "place", "value": "Saltmarsh"}]
    }

    run = run_task(author_api, book, "extract")

    assert run.status == "failed" and run.reason == "refused (observations[1].turn_id): not a turn this run was handed"
    assert not Observation.objects.filter(session=session).exists(), "the first observation is not half-applied"


def test_extract_an_author_stated_observation_is_refused_by_the_plan(model_stub, author_api, book):
    session = start(author_api, book)
    author_api.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "Mara keeps the light."})
    model_stub.script["extract"] = lambda ctx: {
        "observations": [
            {
                "turn_id": ctx["turns"][-1]["id"],
                "key": "protagonist name",
                "value": "Mara",
                "provenance": "author-stated",
            }
        ]
    }

    run = run_task(author_api, book, "extract")

    assert run.status == "failed" and "never author-stated" in run.reason
    assert not Observation.objects.filter(session=session).exists()


@pytest.fixture
def at_g2(author_api, sol_api, book):
    start(author_api, book)
    reach_g2(sol_api, author_api, book)
    a_governing_charter(book)
    return book


def review_reply(lens: str):
    def reply(ctx: dict) -> dict:
        return {
            "review": {
                "lens": lens,
                "gate": "G2",
                "summary": f"Charter v{ctx['charter']['version']} read by the stub model.",
                "findings": [
                    {"text": "The stub model's finding.", "resolution": "resolved", "reason": "Checked."},
                    {"text": "A promise waits for the ending.", "resolution": "deferred", "reason": "Drafting."},
                ],
            },
            "notes": [f"Reviewed {lens}."],
        }

    return reply


@pytest.mark.parametrize(
    ("task", "lens", "role"), [("canon-review", "canon-integrity", "terra"), ("trust-review", "reader-trust", "luna")]
)
def test_a_g2_review_a_scripted_reply_is_filed_through_the_review_service(
    model_stub, author_api, at_g2, task, lens, role
):
    model_stub.script[task] = review_reply(lens)

    run = run_task(author_api, at_g2, task)

    assert run.status == "done", run.reason
    review = LensReview.objects.get(book=at_g2, gate="G2", lens__slug=lens)
    assert review.reviewer_role == role and run.role == role
    assert [f["text"] for f in review.findings] == ["The stub model's finding.", "A promise waits for the ending."]
    assert [(o.type, o.object_id) for o in run.outputs.all()] == [("review", str(review.pk))]
    assert "ReviewIn" in json.dumps(sent_schema(model_stub, task))


def test_a_review_filed_under_the_other_lens_is_refused(model_stub, author_api, at_g2):
    model_stub.script["canon-review"] = review_reply("reader-trust")

    run = run_task(author_api, at_g2, "canon-review")

    assert run.status == "failed" and run.reason == (
        "refused (review.lens): the canon-review task files the canon-integrity review"
    )
    assert not LensReview.objects.filter(book=at_g2).exists()


def brief_reply(ctx: dict) -> dict:
    return {
        "brief": {
            "slug": "decision-brief",
            "type": "decision-brief",
            "status": "proposed",
            "lens": "explore-options",
            "content": {
                "charter": {"id": ctx["charter"]["id"], "version": ctx["charter"]["version"]},
                "success_metrics": ["The reader can name the culprit by chapter twelve."],
                "chapters": [{"number": 1, "title": "The Letter", "spec": "Mara finds the letter."}],
                "chapter_1": "Mara finds the letter.",
            },
        },
        "nodes": [
            {"node_id": "premise", "kind": "premise", "label": "The premise", "produced_by": "explore-options"},
            {"node_id": "sq", "kind": "story-question", "label": "Who wrote it?", "produced_by": "explore-options"},
            {
                "node_id": "chapter-1-spec",
                "kind": "chapter-spec",
                "label": "Chapter 1's spec",
                "produced_by": "explore-options",
                "artifact": "decision-brief",
            },
        ],
        "edges": [{"from_id": "premise", "to_id": "sq"}, {"from_id": "sq", "to_id": "chapter-1-spec"}],
        "notes": ["A brief from the stub model."],
    }


def test_brief_a_scripted_reply_is_proposed_on_the_blackboard_with_its_traceability(model_stub, author_api, at_g2):
    model_stub.script["brief"] = brief_reply

    run = run_task(author_api, at_g2, "brief")

    assert run.status == "done", run.reason
    brief = BlackboardArtifact.objects.get(book=at_g2, slug="decision-brief")
    assert brief.status == "proposed" and brief.content["chapters"][0]["title"] == "The Letter"
    assert set(TraceNode.objects.filter(book=at_g2).values_list("node_id", flat=True)) >= {"premise", "sq"}
    assert TraceEdge.objects.filter(book=at_g2, from_id="sq", to_id="chapter-1-spec", active=True).exists()
    kinds = [o.type for o in run.outputs.all()]
    # The premise root exists from the loop's start (the brief takes it as its own); the brief draws the rest.
    assert kinds[0] == "artifact" and kinds.count("trace") == 2
    assert "ArtifactIn" in json.dumps(sent_schema(model_stub, "brief"))


def test_brief_of_another_type_is_refused_and_draws_no_trace(model_stub, author_api, at_g2):
    def reply(ctx):
        plan = brief_reply(ctx)
        plan["brief"]["type"] = "scope-boundary"
        return plan

    model_stub.script["brief"] = reply

    run = run_task(author_api, at_g2, "brief")

    assert run.status == "failed" and "brief.type must be decision-brief" in run.reason
    assert not BlackboardArtifact.objects.filter(book=at_g2, slug="decision-brief").exists()
    # Only the premise root the loop started with: the refused brief drew nothing.
    assert list(TraceNode.objects.filter(book=at_g2).values_list("node_id", flat=True)) == ["premise"]


# --- A small model's almost-JSON: repaired where safe, refused where not ------------------------------------


def thrusts_plan(ctx: dict) -> dict:
    return {
        "thrusts": [
            {
                "kind": "core",
                "title": "The keeper's proof",
                "main_thrust": "She must prove the drowning was murder.",
                "character_engine": "Mara wants to be believed.",
                "central_conflict": "the harbour master against the keeper",
                "reader_promise": ["a fair puzzle"],
            }
        ]
    }


REPAIRED = {
    "fence": (lambda plan: f"```json\n{plan}\n```", ["a code fence removed"]),
    "prose around": (
        lambda plan: f"Sure! Here is the plan you asked for:\n{plan}\nLet me know if you want {{more}}.",
        ["the prose around the object removed"],
    ),
    "trailing commas": (lambda plan: plan[:-3] + "},],}", ["2 trailing commas removed"]),
    "all three": (
        lambda plan: "Here it is.\n```json\n" + plan[:-1] + ",}\n```\nDone.",
        ["a code fence removed", "the prose around the object removed", "1 trailing comma removed"],
    ),
}


@pytest.mark.parametrize("kind", list(REPAIRED))
def test_almost_json_that_is_safe_to_repair_is_read_and_the_run_says_so(model_stub, author_api, book, kind):
    start(author_api, book)
    mangle, repairs = REPAIRED[kind]
    model_stub.script["thrusts"] = lambda ctx: mangle(json.dumps(thrusts_plan(ctx)))

    run = run_task(author_api, book, "thrusts")

    assert run.status == "done", run.reason
    assert list(ThrustCandidate.objects.values_list("title", flat=True)) == ["The keeper's proof"]
    assert f"The model's reply was repaired before it was read: {'; '.join(repairs)}." in run.notes


REFUSED = {
    "two objects": (
        lambda plan: f"{plan}\nOr, if you prefer:\n{plan}",
        "the model's reply holds 2 JSON objects; which one is the answer cannot be told, so none was read",
    ),
    "cut off": (
        lambda plan: plan[: len(plan) // 2],
        "the model's reply is not JSON (its object is not finished: the reply was cut off)",
    ),
    "single quotes": (
        lambda plan: plan.replace('"', "'"),
        "the model's reply is not JSON (Expecting property name enclosed in double quotes at character 1)",
    ),
    "a comment": (
        lambda plan: plan[:1] + " // the thrusts\n" + plan[1:],
        "the model's reply is not JSON (Expecting property name enclosed in double quotes at character 2)",
    ),
    "python literals": (
        lambda plan: plan[:-1] + ', "done": True}',
        "the model's reply is not JSON (Expecting value at character",
    ),
    "not an object": (lambda plan: f"[{plan}]", "the model's reply is JSON but not an object"),
}


@pytest.mark.parametrize("kind", list(REFUSED))
def test_almost_json_that_is_not_safe_to_repair_fails_the_run_cleanly(
    model_stub, author_api, author_browser, book, kind
):
    start(author_api, book)
    mangle, reason = REFUSED[kind]
    model_stub.script["thrusts"] = lambda ctx: mangle(json.dumps(thrusts_plan(ctx)))
    entries = ScratchpadEntry.objects.count()

    queued = start_run(author_api, book, "thrusts")
    work_off_queue()

    shown = author_api.get(f"/agent-runs/{queued['id']}")
    assert shown.status_code == 200, "no 500: the run is there to read"
    run = run_of(queued)
    run.refresh_from_db()
    assert run.status == "failed" and run.reason.startswith(f"openai-compatible provider: {reason}"), run.reason
    assert run.notes == ["Nothing was written."] and not run.outputs.exists()
    assert not ThrustCandidate.objects.exists() and ScratchpadEntry.objects.count() == entries
    assert shown.json()["status"] == "failed" and shown.json()["reason"] == run.reason
    assert run.tokens > 0 and LoopMeta.objects.get(book=book).cost_spent == pytest.approx(run.cost)
    page = author_browser.get(f"/books/{book.pk}/agents/")
    assert page.status_code == 200, "the Agents page shows the failed run"


# --- A model per role -------------------------------------------------------------------------------------


@pytest.fixture
def two_models(settings):
    """A strong hosted model for Sol and Terra, a small local one for Luna: two servers, two prices."""
    strong, small = ModelStub().start(), ModelStub().start()
    settings.NOVELGRAPH_AGENTS = {
        **settings.NOVELGRAPH_AGENTS,
        **BASE,
        "PROVIDER": "openai-compatible",
        "BASE_URL": strong.base_url,
        "MODEL": "strong-hosted",
        "COST_PER_1K_TOKENS": 2.0,
        "RUN_COST": 1.0,
        "ROLES": {
            "sol": {},
            "terra": {},
            "luna": {"BASE_URL": small.base_url, "MODEL": "small-local", "COST_PER_1K_TOKENS": 0.0, "RUN_COST": 0.5},
        },
    }
    yield strong, small
    strong.stop()
    small.stop()


def test_each_role_runs_on_its_own_model_at_its_own_cost_and_each_run_records_it(two_models, author_api, book):
    strong, small = two_models
    start(author_api, book)

    terra = run_task(author_api, book, "thrusts")
    queued = start_run(author_api, book, "guidance", topic="pacing of the reveal")
    work_off_queue()
    luna = run_of(queued)
    luna.refresh_from_db()

    assert terra.status == "done" and luna.status == "done", (terra.reason, luna.reason)
    assert (terra.role, terra.model) == ("terra", "strong-hosted")
    assert (luna.role, luna.model) == ("luna", "small-local")
    assert [m for _, m in strong.answered] == ["strong-hosted"] and [m for _, m in small.answered] == ["small-local"]
    assert terra.tokens > 0 and terra.cost == pytest.approx(round(1.0 + terra.tokens / 1000 * 2.0, 4))
    assert luna.tokens > 0 and luna.cost == pytest.approx(0.5), "Luna's local model costs nothing per token"
    listed = {r["id"]: r for r in author_api.get(f"/books/{book.pk}/agent-runs").json()["items"]}
    assert (listed[str(luna.pk)]["model"], listed[str(luna.pk)]["cost"]) == ("small-local", pytest.approx(0.5))
    assert listed[str(terra.pk)]["model"] == "strong-hosted"


def test_work_sol_hands_on_runs_on_the_model_of_the_role_it_is_handed_to(two_models, author_api, book):
    strong, small = two_models
    discover_a_new_book(author_api, book)

    runs = AgentRun.objects.filter(book=book)
    assert set(runs.filter(role="sol").values_list("model", flat=True)) == {"strong-hosted"}
    children = runs.filter(parent__role="sol")
    assert {"luna", "terra"} <= set(children.values_list("role", flat=True)), list(runs.values_list("task", "status"))
    for child in children:
        assert child.provider == "openai-compatible"
        assert child.model == ("small-local" if child.role == "luna" else "strong-hosted"), child.role
    luna_tasks = {"guidance", "contradictions", "extract", "trust-review"}
    assert small.answered and {task for task, _ in small.answered} <= luna_tasks
    assert strong.answered and not {task for task, _ in strong.answered} & luna_tasks


def test_a_role_can_run_on_the_rules_while_the_others_use_a_model(two_models, author_api, book, settings):
    settings.NOVELGRAPH_AGENTS["ROLES"]["luna"] = {"PROVIDER": "offline"}
    start(author_api, book)

    queued = start_run(author_api, book, "guidance", topic="pacing")
    work_off_queue()

    luna = run_of(queued)
    luna.refresh_from_db()
    assert (luna.provider, luna.model, luna.status) == ("offline", OFFLINE_MODEL, "done")
    assert not two_models[1].requests


def test_a_roles_model_needs_its_server(author_api, book, settings):
    settings.NOVELGRAPH_AGENTS = {
        **settings.NOVELGRAPH_AGENTS,
        "PROVIDER": "offline",
        "BASE_URL": "",
        "MODEL": "",
        "ROLES": {"luna": {"PROVIDER": "openai-compatible", "MODEL": "small-local"}},
    }
    start(author_api, book)

    refused = author_api.post(f"/books/{book.pk}/agent-runs", {"task": "guidance", "topic": "pacing"})

    assert refused.status_code == 422 and refused.json()["field"] == "provider"
    assert "NOVELGRAPH_AGENT_LUNA_BASE_URL" in refused.json()["detail"]
    assert not AgentRun.objects.exists()


def test_the_settings_read_each_roles_model_from_the_environment(monkeypatch):
    from novelgraph.settings import _agent_role_settings

    monkeypatch.setenv("NOVELGRAPH_AGENT_LUNA_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("NOVELGRAPH_AGENT_LUNA_MODEL", "qwen2.5:7b-instruct")
    monkeypatch.setenv("NOVELGRAPH_AGENT_LUNA_COST_PER_1K_TOKENS", "0")
    monkeypatch.setenv("NOVELGRAPH_AGENT_LUNA_TIMEOUT", "300")

    assert _agent_role_settings("luna") == {
        "BASE_URL": "http://127.0.0.1:11434/v1",
        "MODEL": "qwen2.5:7b-instruct",
        "COST_PER_1K_TOKENS": 0.0,
        "TIMEOUT": 300.0,
    }
    assert _agent_role_settings("sol") == {}
