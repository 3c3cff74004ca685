"""The openai-compatible provider, against a chat-completions stub on 127.0.0.1 (ephemeral port).

It takes the same flow as the offline provider; a reply that is malformed, oversized, does not
validate, or asks for what the role may not do writes nothing and records a failed run."""

from __future__ import annotations

import json

import pytest

from discovery.agents.models import AgentRun
from discovery.loop.models import LoopMeta
from discovery.models import ScratchpadEntry, ThrustCandidate

from .agents_support import discover_a_new_book, run_of, start_run, work_off_queue
from .model_stub import ModelStub
from .test_agents_flow import assert_each_run_stayed_inside_its_role, assert_the_discovery_reached_a_proposed_charter

pytestmark = pytest.mark.django_db


@pytest.fixture
def model_stub(settings):
    stub = ModelStub().start()
    settings.NOVELGRAPH_AGENTS = {
        **settings.NOVELGRAPH_AGENTS,
        "PROVIDER": "openai-compatible",
        "BASE_URL": stub.base_url,
        "MODEL": "stub-model",
        "API_KEY": "stub-key",
        "MAX_RETRIES": 0,
        "TIMEOUT": 30,
    }
    yield stub
    stub.stop()


@pytest.fixture
def started(author_api, book):
    return author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]


def test_the_model_provider_takes_the_same_flow_as_the_offline_one(model_stub, author_api, book):
    scene = discover_a_new_book(author_api, book)

    assert_the_discovery_reached_a_proposed_charter(book, scene, provider="openai-compatible", model="stub-model")
    assert_each_run_stayed_inside_its_role(book, scene)
    runs = AgentRun.objects.filter(book=book)
    assert all(run.tokens > 0 for run in runs)
    assert len(model_stub.requests) == runs.count()


def test_the_model_is_sent_its_role_the_plan_schema_and_the_roles_dossier(model_stub, author_api, book, started):
    run = run_of(start_run(author_api, book, "guidance", topic="pacing of the reveal"))
    work_off_queue()

    body = model_stub.requests[0]["body"]
    assert body["model"] == "stub-model" and body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert "You are Luna" in system["content"] and '"observations"' in system["content"]
    sent = json.loads(user["content"].split("\n", 1)[1].rsplit("\n", 1)[0])
    run.refresh_from_db()
    assert sent["dossier"] == run.dossier.content
    assert "series canon (luna lacks series:read)" in sent["dossier"]["withheld"]
    assert sent["handoff"]["decision"] == "Look in the library for guidance on pacing of the reveal"
    assert run.status == "done" and run.tokens > 0


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("malformed", "openai-compatible provider: the model's reply is not JSON"),
        ("oversized", "openai-compatible provider: the model's reply is 300"),
        ("error", "openai-compatible provider: the model server answered 500"),
        ("invalid", "refused (thrusts.0.kind): the reply does not validate: thrusts.0.kind:"),
    ],
)
def test_a_bad_reply_writes_nothing_and_records_a_failed_run(model_stub, author_api, book, started, mode, reason):
    model_stub.mode = mode
    entries_before = ScratchpadEntry.objects.count()

    run = run_of(start_run(author_api, book, "thrusts"))
    work_off_queue()

    run.refresh_from_db()
    assert run.status == "failed" and run.reason.startswith(reason), run.reason
    assert run.finished_at is not None and run.dossier is not None
    assert not ThrustCandidate.objects.exists() and ScratchpadEntry.objects.count() == entries_before
    assert not run.outputs.exists()
    # A failed run still costs what it spent, against the loop's budget.
    assert LoopMeta.objects.get(book=book).cost_spent == pytest.approx(run.cost) and run.cost >= 1


def test_a_fenced_json_reply_is_read(model_stub, author_api, book, started):
    model_stub.mode = "fenced"

    run = run_of(start_run(author_api, book, "thrusts"))
    work_off_queue()

    run.refresh_from_db()
    assert run.status == "done" and ThrustCandidate.objects.count() == 3


def test_a_model_that_makes_luna_cite_series_canon_is_refused_by_the_same_check(model_stub, author_api, book, started):
    claim = author_api.post(
        "/claims",
        {
            "scope": "series",
            "scope_id": str(book.series_id),
            "subject": "Mara",
            "predicate": "eye colour",
            "value": "green",
            "provenance": "author-stated",
        },
    ).json()
    model_stub.override = {
        "contradictions": [
            {
                "kind": "contradiction",
                "content": "Series canon says green.",
                # Two sides (a contradiction names both); the first is series canon Luna may not read.
                "source_refs": [{"type": "claim", "id": claim["id"]}, {"type": "turn", "id": claim["base_id"]}],
            }
        ]
    }

    run = run_of(start_run(author_api, book, "contradictions"))
    work_off_queue()

    run.refresh_from_db()
    assert run.status == "failed"
    assert (
        run.reason
        == f"refused (source_refs[0]): source_refs[0]: no claim {claim['id']} in this book that luna may read"
    )
    assert not ScratchpadEntry.objects.filter(kind="contradiction").exists()


def test_a_model_run_needs_the_provider_configured(author_api, book, started, settings):
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "BASE_URL": "", "MODEL": ""}

    response = author_api.post(f"/books/{book.pk}/agent-runs", {"task": "thrusts", "provider": "openai-compatible"})

    assert response.status_code == 422 and response.json()["field"] == "provider"
    assert not AgentRun.objects.exists()


@pytest.mark.parametrize(
    ("total_tokens", "said"),
    [
        (-5_000_000, "-5000000"),
        (10**15, "1000000000000000"),
        (12.5, "12.5"),
        ("many", "'many'"),
    ],
)
def test_a_reply_reporting_impossible_usage_is_refused_and_the_run_still_pays_its_fixed_cost(
    model_stub, author_api, book, started, settings, total_tokens, said
):
    """A model server cannot make a run free: negative, absurd or non-integer usage fails the run with a
    note, charges the fixed cost, and leaves nothing ``running``."""
    model_stub.usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": total_tokens}

    run = run_of(start_run(author_api, book, "thrusts"))
    work_off_queue()

    run.refresh_from_db()
    assert run.status == "failed", (run.status, run.reason)
    assert run.reason == (
        f"openai-compatible provider: the model server reported an impossible token usage ({said}); "
        "the reply was refused"
    )
    assert run.tokens == 0 and run.cost == pytest.approx(settings.NOVELGRAPH_AGENTS["RUN_COST"])
    assert LoopMeta.objects.get(book=book).cost_spent == pytest.approx(run.cost)
    assert not ThrustCandidate.objects.exists() and not run.outputs.exists()
