"""Export and import of a book's loop: the seed's layout, a lossless round trip, unknown versions skipped."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.test import Client

from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.loop.models import BlackboardArtifact, LensReview, LoopMeta, OpenQuestion, OptionCard
from discovery.loop.services.transfer import loop_state
from discovery.models import Chapter

from .factories import BookFactory
from .loop_scenes import (
    ask_gate,
    decide,
    start_discovery,
    started_book,  # noqa: F401 (the book, its discovery started)
    trace,
    url,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def rich(book, sol_api, luna_api, terra_api, author_api):
    author_api.get(url(book))
    root = sol_api.get(url(book, "/nodes")).json()["items"][0]
    node = sol_api.post(
        url(book, "/nodes"),
        {
            "parent_id": root["id"],
            "intent": "the sister",
            "assumption": "readers care",
            "kill_condition": "beta readers shrug",
            "activity": "read chapter 3 aloud",
        },
    ).json()
    a = terra_api.post(
        url(book, f"/nodes/{node['id']}/candidates"),
        {"altitude": "plotline", "mechanic": "quest", "shape": "s", "riskiest_assumption": "r"},
    ).json()
    terra_api.post(
        url(book, f"/nodes/{node['id']}/candidates"),
        {"altitude": "subplot", "mechanic": "romance engine", "shape": "s2", "riskiest_assumption": "r2"},
    )
    sol_api.post(url(book, f"/nodes/{node['id']}/select"), {"candidate_id": a["id"], "rationale": "stronger"})
    luna_api.post(
        url(book, "/artifacts"),
        {
            "slug": "decision-brief",
            "type": "decision-brief",
            "content": {"success_metrics": ["culprit deducible by chapter 20"]},
        },
    )
    luna_api.post(
        url(book, "/artifacts"),
        {
            "slug": "beat",
            "type": "scene-card",
            "parent": "decision-brief",
            "lens": "reader-trust",
            "content": {"é": "ünïcode"},
        },
    )
    luna_api.post(url(book, "/questions"), {"question": "Which tide?", "target_discipline": "research"})
    luna_api.post(
        url(book, "/reviews"),
        {
            "lens": "reader-trust",
            "gate": "G2",
            "findings": [{"text": "t", "resolution": "deferred", "reason": "later"}],
        },
    )
    trace(
        sol_api,
        book,
        [("premise", "premise"), ("sq", "story-question"), ("ch1", "chapter")],
        [("premise", "sq"), ("sq", "ch1")],
    )
    r = ask_gate(sol_api, book, "G0", artifacts=["decision-brief"])
    decide(author_api, book, r.json()["approval_id"], "approve-with-constraint", constraint="keep it to one city")
    return book


def _zip(response) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(response.content))


def _upload(api, book, data: bytes):
    return api.client.post(
        f"/api/v1{url(book, '/import')}", {"file": io.BytesIO(data)}, HTTP_AUTHORIZATION=f"Bearer {api.key}"
    )


def test_export_writes_the_seed_layout_and_committed_artifacts(rich, author_api):
    r = author_api.get(url(rich, "/export"))
    assert r.status_code == 200 and r["Content-Type"] == "application/zip"
    names = set(_zip(r).namelist())
    slug = rich.slug
    for name in ("blackboard", "open-questions", "traceability", "decision-log", "meta", "plan-tree"):
        assert f"{slug}/_state/{name}.json" in names
    assert f"{slug}/decision-brief.json" in names and f"{slug}/scope-boundary.json" in names
    meta = json.loads(_zip(r).read(f"{slug}/_state/meta.json"))
    assert meta["schema_version"] == "0.1" and meta["gate"] == "G0"
    log = json.loads(_zip(r).read(f"{slug}/_state/decision-log.json"))
    assert [e["decision"] for e in log["entries"]] == ["approve-with-constraint"]


def _edited(data: bytes, edit) -> bytes:
    """The zip with each state file passed through ``edit(name, doc)``."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in source.namelist():
            content = source.read(name)
            if "/_state/" in name:
                doc = json.loads(content)
                edit(name.rsplit("/", 1)[-1].removesuffix(".json"), doc)
                content = json.dumps(doc).encode()
            z.writestr(name, content)
    return out.getvalue()


@pytest.fixture
def fresh(author):
    """Another book of the author's whose discovery (so loop) has started and nothing more."""
    other = BookFactory(owner=author, title="Book two")
    start_discovery(other)
    return other


def test_the_author_imports_into_a_loop_not_started_everything_as_proposed(rich, fresh, author_api):
    data = author_api.get(url(rich, "/export")).content
    r = _upload(author_api, fresh, data)
    assert r.status_code == 200, r.json()
    body = r.json()
    assert body["imported"]["artifacts"] == 3 and body["imported"]["candidates"] == 2
    assert body["downgraded"] == ["slot scope-boundary: ratified -> proposed"]
    a, b = loop_state(rich), loop_state(fresh)
    assert [x["id"] for x in a["blackboard"]["artifacts"]] == [x["id"] for x in b["blackboard"]["artifacts"]]
    assert [x["content"] for x in a["blackboard"]["artifacts"]] == [x["content"] for x in b["blackboard"]["artifacts"]]
    assert {x["status"] for x in b["blackboard"]["artifacts"]} == {"proposed"}
    assert [n["intent"] for n in a["plan-tree"]["nodes"]] == [n["intent"] for n in b["plan-tree"]["nodes"]]
    assert a["traceability"]["nodes"] == b["traceability"]["nodes"]
    # No gate progress, no cards, no counters and no constraints come from a file.
    meta = LoopMeta.objects.get(book=fresh)
    assert (meta.gate, meta.status, meta.round, meta.constraints) == ("G0", "working", 0, [])
    assert not OptionCard.objects.filter(book=fresh).exists() and not LensReview.objects.filter(book=fresh).exists()
    # The import is the author's act, one row in the book's own log.
    row = DecisionLogEntry.objects.get(book=fresh)
    assert (row.subject_type, row.ratified_by, row.sequence) == ("loop-import", "author:ada", body["decision_sequence"])
    # Nothing was decided yet, so she may import again (it replaces what the first import proposed).
    again = _upload(author_api, fresh, data)
    assert again.status_code == 200 and again.json()["decision_sequence"] == row.sequence + 1
    assert BlackboardArtifact.objects.filter(book=fresh).count() == 3
    assert decision_log_verify(fresh).ok


def test_an_import_never_lands_on_a_loop_that_has_started(rich, author_api):
    before = loop_state(rich)
    data = author_api.get(url(rich, "/export")).content
    r = _upload(author_api, rich, data)
    assert r.status_code == 409 and r.json()["code"] == "loop_started"
    assert loop_state(rich) == before
    assert LoopMeta.objects.get(book=rich).constraints[0]["text"] == "keep it to one city"


def test_a_forged_export_jumps_no_gate_and_ratifies_nothing(rich, fresh, author_api, sol_api):
    """Issue 12, item 6: an export edited to G3 with a ratified decision brief and no constraints."""

    def forge(name, doc):
        if name == "meta":
            doc.update(gate="G3", status="converged", saturation=True, round=5, constraints=[])
            for card in doc["option_cards"]:
                card.update(status="decided", verdict="approve", gate="G2")
        if name == "blackboard":
            for a in doc["artifacts"]:
                if a["id"] == "decision-brief":
                    a["status"] = "ratified"
                    a["content"]["success_metrics"] = ["forged"]
                if a["id"] == "scope-boundary":
                    a["content"]["constraints"] = []
        if name == "open-questions":
            doc["questions"].append(
                {**doc["questions"][0], "id": "00000000-0000-4000-8000-000000000001", "kind": "value-conflict",
                 "status": "resolved", "resolution": "settled", "resolution_ref": "decision:1"}
            )  # fmt: skip

    data = _edited(author_api.get(url(rich, "/export")).content, forge)
    # Sol cannot import at all; the author cannot overwrite the started loop (its constraints stay).
    assert _upload(sol_api, fresh, data).status_code == 403
    assert _upload(sol_api, rich, data).status_code == 403
    assert _upload(author_api, rich, data).status_code == 409
    assert LoopMeta.objects.get(book=rich).constraints[0]["text"] == "keep it to one city"
    boundary = BlackboardArtifact.objects.get(book=rich, slug="scope-boundary")
    assert boundary.content["constraints"][0]["text"] == "keep it to one city" and boundary.status == "ratified"
    # Into the book not started, the author's import lands as proposed material at G0.
    r = _upload(author_api, fresh, data)
    assert r.status_code == 200, r.json()
    meta = LoopMeta.objects.get(book=fresh)
    assert (meta.gate, meta.round) == ("G0", 0) and meta.status != "handed-off"
    assert not BlackboardArtifact.objects.filter(book=fresh, status="ratified").exists()
    conflict = OpenQuestion.objects.get(book=fresh, kind="value-conflict")
    assert (conflict.status, conflict.resolved_by) == ("surfaced", "")
    for gate in ("G1", "G2", "G3"):
        assert ask_gate(sol_api, fresh, gate).json()["code"] == "not_current_gate"
    assert not Chapter.objects.filter(book=fresh).exists()
    assert not DecisionLogEntry.objects.filter(book=fresh, ratified_by__startswith="controller:").exists()


def test_an_imported_record_is_validated_like_any_write(fresh, rich, author_api):
    def bad(name, doc):
        if name == "traceability":
            doc["nodes"][0]["status"] = "glorious"

    data = _edited(author_api.get(url(rich, "/export")).content, bad)
    r = _upload(author_api, fresh, data)
    assert r.status_code == 422
    assert r.json()["field"] == "file:traceability.nodes[0].status"
    assert not DecisionLogEntry.objects.filter(book=fresh).exists()
    assert not BlackboardArtifact.objects.filter(book=fresh).exists()


def test_an_unknown_schema_version_is_reported_and_skipped(rich, fresh, author_api):
    def edit(name, doc):
        if name == "open-questions":
            doc["questions"][0]["schema_version"] = "9.9"
        if name == "traceability":
            doc["schema_version"] = "2.0"

    data = _edited(author_api.get(url(rich, "/export")).content, edit)
    r = _upload(author_api, fresh, data)
    assert r.status_code == 200, r.json()
    skipped = r.json()["skipped"]
    assert any(s["file"] == "open-questions" and s["schema_version"] == "9.9" for s in skipped)
    assert any(s["file"] == "traceability" and s["schema_version"] == "2.0" for s in skipped)
    assert not OpenQuestion.objects.filter(book=fresh).exists()


def test_import_is_the_authors_and_refuses_garbage(rich, fresh, terra_api, sol_api, author_api, editor_api):
    data = author_api.get(url(rich, "/export")).content
    for api in (terra_api, sol_api):
        assert _upload(api, fresh, data).status_code == 403
    assert _upload(editor_api, rich, data).status_code == 403  # the editor of the book decides nothing either
    r = _upload(author_api, fresh, b"not a zip")
    assert r.status_code == 422 and r.json()["field"] == "file"
    assert Client().get(f"/api/v1{url(rich, '/export')}").status_code == 401
    assert not DecisionLogEntry.objects.filter(book=fresh).exists()
