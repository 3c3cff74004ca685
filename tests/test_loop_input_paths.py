"""One rule for the loop's input, whichever way it comes in (issue 14): the author's form on the loop page
and an imported loop file are refused exactly as the API refuses the same value, naming the same field
with the same reason, because every path goes through the same input schema. Nothing is recorded."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.utils.html import escape

from approvals.models import DecisionLogEntry
from discovery.loop.models import Candidate, LoopMeta, OpenQuestion, OptionCard, PlanNode
from novelgraph.core.schemas import limit

from .factories import BookFactory
from .loop_scenes import (
    decide,
    start_discovery,
    started_book,  # noqa: F401 (the book, its discovery started)
    trace,
    url,
)

pytestmark = pytest.mark.django_db

OVER_LONG = "x" * (limit(Candidate, "mechanic") + 1)
BLANK = "   "


@pytest.fixture
def node_with_candidates(book, sol_api, terra_api):
    """A plan node with two proposed candidates, written through the API."""
    root = PlanNode.objects.get(book=book, is_root=True)
    node = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "the sister"}).json()
    for mechanic in ("quest", "romance engine"):
        r = terra_api.post(
            url(book, f"/nodes/{node['id']}/candidates"),
            {"altitude": "plotline", "mechanic": mechanic, "shape": "s", "riskiest_assumption": "r"},
        )
        assert r.status_code == 201, r.json()
    return node["id"], str(Candidate.objects.filter(node_id=node["id"]).order_by("created_at").first().pk)


def _alert(html: str) -> str:
    start = html.index('role="alert">') + len('role="alert">')
    return html[start : html.index("</p>", start)]


@pytest.mark.parametrize("rationale", ["x" * (limit(Candidate, "rationale") + 1), BLANK], ids=["over-long", "blank"])
def test_the_pick_form_refuses_a_rationale_as_the_api_does(
    book, author_browser, author_api, node_with_candidates, rationale
):
    node_id, candidate_id = node_with_candidates
    api = author_api.post(url(book, f"/nodes/{node_id}/select"), {"candidate_id": candidate_id, "rationale": rationale})
    assert api.status_code == 422 and api.json()["field"] == "rationale"

    form = author_browser.post(
        f"/books/{book.pk}/loop/nodes/{node_id}/pick/", {"candidate_id": candidate_id, "rationale": rationale}
    )
    assert form.status_code == 422
    assert _alert(form.content.decode()) == escape(api.json()["detail"])
    assert not Candidate.objects.filter(node_id=node_id).exclude(status="proposed").exists()


def test_the_answer_form_refuses_an_over_long_answer_as_the_api_does(book, author_browser, author_api, luna_api):
    asked = luna_api.post(url(book, "/questions"), {"question": "Which tide?", "target_discipline": "author"})
    question_id = asked.json()["id"]
    answer = "x" * (limit(OpenQuestion, "resolution") + 1)
    api = author_api.post(
        url(book, f"/questions/{question_id}/resolve"), {"resolution": answer, "cites": f"question:{question_id}"}
    )
    assert api.status_code == 422 and api.json()["field"] == "resolution"

    form = author_browser.post(f"/books/{book.pk}/loop/questions/{question_id}/answer/", {"resolution": answer})
    assert form.status_code == 422
    assert _alert(form.content.decode()) == escape(api.json()["detail"])
    assert OpenQuestion.objects.get(pk=question_id).status == "open"


# --- The import ------------------------------------------------------------------------------------------


@pytest.fixture
def exported(book, node_with_candidates, sol_api, luna_api, author_api) -> bytes:
    luna_api.post(url(book, "/questions"), {"question": "Which tide?", "target_discipline": "research"})
    trace(sol_api, book, [("premise", "premise"), ("ch1", "chapter")], [("premise", "ch1")])
    r = author_api.get(url(book, "/export"))
    assert r.status_code == 200
    return r.content


def _edited(data: bytes, state: str, edit) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in source.namelist():
            content = source.read(name)
            if name.endswith(f"/_state/{state}.json"):
                doc = json.loads(content)
                edit(doc)
                content = json.dumps(doc).encode()
            z.writestr(name, content)
    return out.getvalue()


def _first_candidate(doc: dict) -> dict:
    return next(n for n in doc["nodes"] if n["candidates"])["candidates"][0]


# (the state file, where its record is, the record's edit, the API write of the same value)
IMPORTS = [
    pytest.param(
        "plan-tree",
        "plan-tree.candidates[0]",
        lambda doc: _first_candidate(doc).update(mechanic=OVER_LONG),
        lambda book, node_id, agents: agents["terra"].post(
            url(book, f"/nodes/{node_id}/candidates"),
            {"altitude": "plotline", "mechanic": OVER_LONG, "shape": "s", "riskiest_assumption": "r"},
        ),
        id="over-long",
    ),
    pytest.param(
        "open-questions",
        "open-questions.questions[0]",
        lambda doc: doc["questions"][0].update(question=BLANK),
        lambda book, node_id, agents: agents["luna"].post(
            url(book, "/questions"), {"question": BLANK, "target_discipline": "research"}
        ),
        id="blank",
    ),
    pytest.param(
        "traceability",
        "traceability.nodes[0]",
        lambda doc: doc["nodes"][0].update(backed_by="carrier-pigeon"),
        lambda book, node_id, agents: agents["sol"].post(
            url(book, "/trace/nodes"), {"node_id": "stray", "kind": "clue", "backed_by": "carrier-pigeon"}
        ),
        id="bad-choice",
    ),
    pytest.param(
        "traceability",
        "traceability.nodes[0]",
        lambda doc: doc["nodes"][0].update(kind="Not A Slug"),
        lambda book, node_id, agents: agents["sol"].post(
            url(book, "/trace/nodes"), {"node_id": "stray", "kind": "Not A Slug"}
        ),
        id="bad-format",
    ),
]


@pytest.fixture
def agents(sol_api, terra_api, luna_api) -> dict:
    return {"sol": sol_api, "terra": terra_api, "luna": luna_api}


@pytest.mark.parametrize(("state", "where", "edit", "write"), IMPORTS)
def test_an_imported_record_is_refused_as_the_api_refuses_the_same_value(
    book, exported, node_with_candidates, agents, author, author_api, state, where, edit, write
):
    api = write(book, node_with_candidates[0], agents)
    assert api.status_code == 422, api.json()
    fresh = BookFactory(owner=author, title="Book two")
    start_discovery(fresh)

    r = author_api.client.post(
        f"/api/v1{url(fresh, '/import')}",
        {"file": io.BytesIO(_edited(exported, state, edit))},
        HTTP_AUTHORIZATION=f"Bearer {author_api.key}",
    )
    assert r.status_code == 422
    assert r.json()["field"] == f"file:{where}.{api.json()['field']}"
    assert r.json()["detail"] == f"{where}.{api.json()['detail']}"
    assert not DecisionLogEntry.objects.filter(book=fresh).exists()
    assert not OpenQuestion.objects.filter(book=fresh).exists()


# --- A bound: granted by an extend verdict, or set by an imported meta file ---------------------------------


def _stalled_at_the_round_cap(book, sol_api) -> OptionCard:
    LoopMeta.objects.filter(book=book).update(round_cap=2)
    for _ in range(2):
        assert sol_api.post(url(book, "/rounds"), {}).status_code == 200
    return OptionCard.objects.get(book=book, kind="bound", status="pending")


def _reason(body: dict) -> str:
    """A refusal's reason without the field it names (``constraint.round_cap: <reason>``)."""
    return body["detail"].split(": ", 1)[1]


@pytest.mark.parametrize(
    ("bound", "value", "reason"),
    [
        ("round_cap", 5000, "Input should be less than or equal to 1000"),
        ("max_breadth", 0, "Input should be greater than or equal to 1"),
        ("concentration", 1.5, "Input should be less than or equal to 1"),
        ("cost_budget", 2_000_000_000, "Input should be less than or equal to 1000000000"),
    ],
)
def test_a_bound_out_of_its_range_is_refused_alike_when_granted_and_when_imported(
    book, sol_api, author, author_api, author_browser, bound, value, reason
):
    card = _stalled_at_the_round_cap(book, sol_api)
    before = LoopMeta.objects.filter(book=book).values(bound, "status").get()
    granted = decide(author_api, book, str(card.approval_id), "extend", constraint=f"{bound}={value}")
    assert granted.status_code == 422, granted.json()
    assert granted.json()["field"] == f"constraint.{bound}"
    assert _reason(granted.json()) == reason
    # The generic verdict route reaches the same service, and the same schema.
    generic = author_api.post(
        f"/approvals/{card.approval_id}/verdict",
        {"verdict": "extend", "rationale": "More room.", "constraint": f"{bound}={value}"},
    )
    assert generic.status_code == 422
    assert (generic.json()["field"], _reason(generic.json())) == (f"constraint.{bound}", reason)
    form = author_browser.post(
        f"/review/{card.approval_id}/",
        {"verdict": "extend", "rationale": "More room.", "constraint": f"{bound}={value}"},
    )
    assert form.status_code == 422
    assert escape(granted.json()["detail"]) in form.content.decode()
    marked = 'aria-describedby="constraint-help decision-error" aria-invalid="true"'
    assert marked in form.content.decode(), "the constraint box is marked as the one to mend"
    assert LoopMeta.objects.filter(book=book).values(bound, "status").get() == before
    assert OptionCard.objects.get(pk=card.pk).status == "pending"

    exported = author_api.get(url(book, "/export"))
    assert exported.status_code == 200
    fresh = BookFactory(owner=author, title="Book two")
    start_discovery(fresh)
    kept = LoopMeta.objects.filter(book=fresh).values(bound).get()
    r = author_api.client.post(
        f"/api/v1{url(fresh, '/import')}",
        {"file": io.BytesIO(_edited(exported.content, "meta", lambda doc: doc.update({bound: value})))},
        HTTP_AUTHORIZATION=f"Bearer {author_api.key}",
    )
    assert r.status_code == 422
    assert r.json()["field"] == f"file:meta.{bound}"
    assert _reason(r.json()) == reason
    assert LoopMeta.objects.filter(book=fresh).values(bound).get() == kept
    assert not DecisionLogEntry.objects.filter(book=fresh).exists()


def test_a_bound_in_its_range_is_granted_and_imported(book, sol_api, author, author_api):
    card = _stalled_at_the_round_cap(book, sol_api)
    granted = decide(author_api, book, str(card.approval_id), "extend", constraint="round_cap=1000 concentration=1")
    assert granted.status_code == 200, granted.json()
    assert granted.json()["detail"]["effect"]["granted"] == {"round_cap": 1000, "concentration": 1.0}

    exported = author_api.get(url(book, "/export"))
    fresh = BookFactory(owner=author, title="Book two")
    start_discovery(fresh)
    r = author_api.client.post(
        f"/api/v1{url(fresh, '/import')}",
        {"file": io.BytesIO(_edited(exported.content, "meta", lambda doc: doc.update(max_depth=1000)))},
        HTTP_AUTHORIZATION=f"Bearer {author_api.key}",
    )
    assert r.status_code == 200, r.json()
    meta = LoopMeta.objects.get(book=fresh)
    assert (meta.round_cap, meta.concentration, meta.max_depth) == (1000, 1.0, 1000)
