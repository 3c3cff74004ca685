"""Issue 28: the continuity check on the model provider finds contradictions by meaning. Luna's model is given the
chapter's text and the canon true in that chapter, and answers ``contradicts-canon`` findings (quote, offsets,
claim ids, message) that go through the same filing path as the rules'; the offline rules still run beside it.
A clean chapter gives nothing; a reply whose quote is not the text at its offsets fails the run and writes
nothing. Against the repo's stub model server, which reads the request it is sent as a model would."""

from __future__ import annotations

import pytest

from discovery.agents.models import AgentRun
from discovery.models import ContinuityFinding

from .agents_support import work_off_queue
from .canon_support import approved_claim, chapters_written, codex_entries
from .model_stub import ModelStub, context_of

pytestmark = pytest.mark.django_db

BASE = {"MAX_RETRIES": 0, "TIMEOUT": 30, "API_KEY": "stub-key"}

CHAPTERS = {
    1: "Mara Quell looked out over the harbour. Her gray eyes followed the gulls, and her black hair blew free.",
    2: "Mara turned her green eyes to the quay. The tide was out and the boats lay on the mud.",
    3: "Mara let her black hair down before the mirror. Inspector Hale knocked at the door.",
    4: "Mara brushed her white hair by the window. The winter had been long.",
}


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


@pytest.fixture
def canon(author_api, sol_api, book) -> dict[str, str]:
    """Mara's grey eyes all book long, her black hair until chapter 3 and white hair from chapter 4."""
    assert author_api.post(f"/books/{book.pk}/discovery").status_code in (200, 201)
    codex_entries(author_api, book, (("Mara Quell", "person", ["Mara"]),))
    claims = {
        label: approved_claim(author_api, sol_api, book, "Mara Quell", predicate, value, **story)
        for label, predicate, value, story in (
            ("eyes", "has eyes", "grey", {}),
            ("black", "has hair", "black", {"true_until_chapter": 3}),
            ("white", "has hair", "white", {"true_from_chapter": 4}),
        )
    }
    chapters_written(author_api, book, CHAPTERS)
    return claims


def check(api, book, number: int) -> AgentRun:
    queued = api.post(f"/books/{book.pk}/chapters/{number}/check")
    assert queued.status_code == 202, queued.content
    work_off_queue()
    return AgentRun.objects.get(pk=queued.json()["id"])


def test_the_model_finds_a_contradiction_by_meaning_and_the_rules_still_run(model_stub, author_api, book, canon):
    for number in CHAPTERS:
        run = check(author_api, book, number)
        assert run.status == "done" and run.provider == "openai-compatible", run.notes
    findings = author_api.get(f"/books/{book.pk}/continuity").json()["items"]
    got = {(f["chapter"], f["kind"], f["quote"]) for f in findings}
    assert got == {
        (2, "contradicts-canon", "Mara turned her green eyes to the quay."),
        (3, "not-in-canon", "Hale"),  # the offline rules, beside the model
    }
    meant = next(f for f in findings if f["kind"] == "contradicts-canon")
    text = author_api.get(f"/books/{book.pk}/chapters/2/text").json()["text"]
    assert text[meant["span"][0] : meant["span"][1]] == meant["quote"]
    assert meant["claim_ids"] == [canon["eyes"]] and "grey" in meant["message"] and "green" in meant["message"]
    # The model was given the chapter's text and the canon as of that chapter: black hair until 3, white from 4.
    sent = {
        context_of(r["body"]["messages"])["manuscript"]["chapter"]: context_of(r["body"]["messages"])["manuscript"]
        for r in model_stub.requests
    }
    assert sent[2]["text"] == CHAPTERS[2]
    assert {c["claim_id"] for c in sent[3]["canon"]} == {canon["eyes"], canon["black"]}
    assert {c["claim_id"] for c in sent[4]["canon"]} == {canon["eyes"], canon["white"]}
    # The clean chapters (1: gray is grey; 4: white hair is canon by then) give nothing.
    assert author_api.get(f"/books/{book.pk}/continuity", chapter=1).json()["items"] == []
    assert author_api.get(f"/books/{book.pk}/continuity", chapter=4).json()["items"] == []


def test_the_same_chapter_fixed_in_the_text_closes_the_models_finding(model_stub, author_api, book, canon):
    check(author_api, book, 2)
    fixed = "Mara turned her grey eyes to the quay. The tide was out."
    assert author_api.put(f"/books/{book.pk}/chapters/2/text", {"text": fixed}).status_code == 201
    assert check(author_api, book, 2).status == "done"
    assert [f["status"] for f in author_api.get(f"/books/{book.pk}/continuity", chapter=2).json()["items"]] == ["fixed"]


def test_a_misquoting_model_fails_the_run_and_writes_nothing(model_stub, author_api, book, canon):
    def misquote(context: dict) -> dict:
        text = context["manuscript"]["text"]
        claim = context["manuscript"]["canon"][0]
        return {
            "findings": [
                {
                    "kind": "contradicts-canon",
                    "key": f"meaning:{claim['claim_id']}",
                    "span_start": 0,
                    "span_end": 10,
                    "quote": text[2:12],
                    "claim_ids": [claim["claim_id"]],
                    "message": "Off by two.",
                }
            ]
        }

    model_stub.script["continuity"] = misquote
    run = check(author_api, book, 3)  # chapter 3 has a not-in-canon the rules would file
    assert run.status == "failed"
    assert "quote" in run.reason
    assert not ContinuityFinding.objects.filter(chapter__book=book).exists()


def test_a_reply_of_an_unknown_kind_fails_the_run_and_writes_nothing(model_stub, author_api, book, canon):
    model_stub.script["continuity"] = lambda context: {"findings": [{"kind": "vibes", "quote": "Mara"}]}
    run = check(author_api, book, 3)
    assert run.status == "failed" and "findings.0" in run.reason
    assert not ContinuityFinding.objects.filter(chapter__book=book).exists()
