"""Export and import of a book's loop: the seed's layout, a lossless round trip, unknown versions skipped."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.test import Client

from discovery.loop.models import OpenQuestion
from discovery.loop.services.transfer import loop_state

from .factories import BookFactory
from .loop_scenes import ask_gate, decide, trace, url

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
    terra_api.post(
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
    # Only ratified artifacts are committed: the proposed brief stays in the blackboard's state.
    assert f"{slug}/scope-boundary.json" in names and f"{slug}/decision-brief.json" not in names
    blackboard = json.loads(_zip(r).read(f"{slug}/_state/blackboard.json"))
    brief = next(a for a in blackboard["artifacts"] if a["id"] == "decision-brief")
    assert brief["status"] == "proposed"
    meta = json.loads(_zip(r).read(f"{slug}/_state/meta.json"))
    assert meta["schema_version"] == "0.1" and meta["gate"] == "G0"
    log = json.loads(_zip(r).read(f"{slug}/_state/decision-log.json"))
    assert [e["decision"] for e in log["entries"]] == ["approve-with-constraint"]


def test_import_round_trips_without_loss(rich, author_api, sol_api):
    before = loop_state(rich)
    data = author_api.get(url(rich, "/export")).content
    r = _upload(sol_api, rich, data)
    assert r.status_code == 200, r.json()
    assert r.json()["skipped"] == []
    assert loop_state(rich) == before
    assert author_api.get(url(rich, "/export")).content == data


def test_import_into_another_book_keeps_everything_but_the_ids_it_must_change(rich, author, author_api, sol_api):
    other = BookFactory(owner=author, title="Book two")
    data = author_api.get(url(rich, "/export")).content
    r = _upload(sol_api, other, data)
    assert r.status_code == 200, r.json()
    assert r.json()["imported"]["artifacts"] == 3 and r.json()["imported"]["candidates"] == 2
    a, b = loop_state(rich), loop_state(other)
    assert [x["id"] for x in a["blackboard"]["artifacts"]] == [x["id"] for x in b["blackboard"]["artifacts"]]
    assert [n["intent"] for n in a["plan-tree"]["nodes"]] == [n["intent"] for n in b["plan-tree"]["nodes"]]
    assert a["traceability"]["nodes"] == b["traceability"]["nodes"]
    assert {k: v for k, v in a["meta"].items() if k != "option_cards"} == {
        k: v for k, v in b["meta"].items() if k != "option_cards"
    }


def test_an_unknown_schema_version_is_reported_and_skipped(rich, author_api, sol_api):
    source = _zip(author_api.get(url(rich, "/export")))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in source.namelist():
            content = source.read(name)
            if name.endswith("_state/open-questions.json"):
                doc = json.loads(content)
                doc["questions"][0]["schema_version"] = "9.9"
                content = json.dumps(doc).encode()
            if name.endswith("_state/traceability.json"):
                doc = json.loads(content)
                doc["schema_version"] = "2.0"
                content = json.dumps(doc).encode()
            z.writestr(name, content)
    r = _upload(sol_api, rich, out.getvalue())
    assert r.status_code == 200, r.json()
    skipped = r.json()["skipped"]
    assert any(s["file"] == "open-questions" and s["schema_version"] == "9.9" for s in skipped)
    assert any(s["file"] == "traceability" and s["schema_version"] == "2.0" for s in skipped)
    assert not OpenQuestion.objects.filter(book=rich).exists()


def test_import_is_for_the_controller_and_refuses_garbage(rich, terra_api, sol_api, author_api):
    data = author_api.get(url(rich, "/export")).content
    assert _upload(terra_api, rich, data).status_code == 403
    r = _upload(sol_api, rich, b"not a zip")
    assert r.status_code == 422 and r.json()["field"] == "file"
    assert Client().get(f"/api/v1{url(rich, '/export')}").status_code == 401
