"""The loop's input schemas carry the limits of the model fields (issue 14): one over the column is a 422
naming the field, the column's own length is accepted, and an enumeration is the model's TextChoices."""

from __future__ import annotations

import pytest

from discovery.loop.models import Altitude, BlackboardArtifact, Candidate, Lifecycle, PlanNode
from discovery.loop.schemas import ArtifactIn, CandidateIn, NodeIn, NodePatch
from novelgraph.core.schemas import limit

from .loop_scenes import (
    started_book,  # noqa: F401 (the book, its discovery started)
    url,
)

pytestmark = pytest.mark.django_db


def _root(book, api):
    api.get(url(book))
    return PlanNode.objects.get(book=book, is_root=True)


@pytest.mark.parametrize(
    ("schema", "field", "model", "column"),
    [
        (NodeIn, "intent", PlanNode, "intent"),
        (NodeIn, "assumption", PlanNode, "assumption"),
        (CandidateIn, "mechanic", Candidate, "mechanic"),
        (ArtifactIn, "slug", BlackboardArtifact, "slug"),
        (ArtifactIn, "path", BlackboardArtifact, "path"),
    ],
)
def test_the_published_limit_is_the_model_columns(schema, field, model, column):
    prop = schema.model_json_schema()["properties"][field]
    lengths = [prop.get("maxLength")] + [o.get("maxLength") for o in prop.get("anyOf", [])]
    assert limit(model, column) in lengths


def test_an_intent_one_over_the_column_is_a_422_naming_it_and_the_column_length_is_accepted(book, sol_api):
    root = _root(book, sol_api)
    n = limit(PlanNode, "intent")
    r = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "x" * (n + 1)})
    assert r.status_code == 422 and r.json()["field"] == "intent"
    r = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "x" * n})
    assert r.status_code == 201, r.json()
    assert len(PlanNode.objects.get(pk=r.json()["id"]).intent) == n


def test_an_altitude_outside_the_choices_is_refused_by_the_schema(book, sol_api):
    root = _root(book, sol_api)
    r = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "the lock", "altitude": "galaxy"})
    assert r.status_code == 422 and r.json()["field"] == "altitude"
    assert not PlanNode.objects.filter(book=book, intent="the lock").exists()
    r = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "the lock", "altitude": "subplot"})
    assert r.status_code == 201 and r.json()["altitude"] == Altitude.SUBPLOT


def test_a_lifecycle_longer_than_its_column_was_once_let_through_and_is_now_a_422(book, sol_api):
    # The hand-written limit was 20 against a 12-character column; the choices now decide.
    assert set(NodePatch.model_json_schema()["$defs"]["Lifecycle"]["enum"]) == set(Lifecycle.values)
    root = _root(book, sol_api)
    node = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "the lock"}).json()
    r = sol_api.patch(url(book, f"/nodes/{node['id']}"), {"lifecycle": "x" * 15})
    assert r.status_code == 422 and r.json()["field"] == "lifecycle"
