"""Who signs what (issue 24, families 1, 5 and 6): a record says who made it, and the caller cannot say otherwise.

- An observation always enters as ``working``; only the author's act confirms, corrects or retires it, and
  that act leaves a revision. Only the author's own turns label an observation ``author-stated``.
- A traceability node is signed by its caller (its role, or a lens the roster names for that role), never
  by a name in the body; a lens withdraws only its own nodes.
- The validation plan moves only by the validation lens, Sol or the author.

Each test drives the route the hole came through and then checks the database.
"""

from __future__ import annotations

import pytest

from discovery.loop.models import TraceNode, ValidationPlanItem
from discovery.models import Observation, ObservationRevision

from .discovery_support import start
from .loop_scenes import url
from .mcp_support import agent_keys, call, outcome

pytestmark = pytest.mark.django_db


# --- 1. Observations enter working; author-stated is the author's alone -------------------------------


def _turn(api, session, role: str, **observation) -> object:
    return api.post(
        f"/sessions/{session.pk}/turns",
        {"role": role, "content": "Who wrote the letter?", "observations": [
            {"key": "forger", "value": "Ines", "provenance": "agent-inferred", **observation}]},
    )  # fmt: skip


@pytest.mark.parametrize("caller", ["author", "editor", "sol"])
@pytest.mark.parametrize("status", ["confirmed", "retired"])
def test_no_turn_brings_an_observation_in_already_decided(request, caller, status, book, author_api):
    session = start(author_api, book)
    api = request.getfixturevalue(f"{caller}_api")

    refused = _turn(api, session, caller, status=status)

    assert refused.status_code == 422, refused.content
    assert refused.json()["field"] == "observations.0.status"
    assert "Input should be 'working'" in refused.json()["detail"]
    assert not Observation.objects.exists()
    # Without a status (or with the one it always has) it enters working, with no revision.
    assert _turn(api, session, caller, status="working").status_code == 201
    assert _turn(api, session, caller).status_code == 201
    assert set(Observation.objects.values_list("status", flat=True)) == {"working"}
    assert not ObservationRevision.objects.exists()


def test_only_the_authors_act_confirms_an_observation_and_it_leaves_a_revision(book, author_api, sol_api):
    session = start(author_api, book)
    assert _turn(sol_api, session, "sol").status_code == 201
    observation = Observation.objects.get()
    assert sol_api.post(f"/observations/{observation.pk}/resolve", {"action": "confirm"}).status_code == 403

    confirmed = author_api.post(f"/observations/{observation.pk}/resolve", {"action": "confirm"})

    assert confirmed.status_code == 200, confirmed.content
    observation.refresh_from_db()
    assert observation.status == "confirmed"
    revision = ObservationRevision.objects.get(observation=observation)
    assert (revision.previous_status, revision.status, revision.decided_by.username) == ("working", "confirmed", "ada")


@pytest.mark.parametrize("caller", ["editor", "sol"])
def test_only_the_authors_own_turns_label_an_observation_author_stated(request, caller, book, author_api):
    session = start(author_api, book)
    api = request.getfixturevalue(f"{caller}_api")

    refused = _turn(api, session, caller, provenance="author-stated")

    assert refused.status_code == 422 and refused.json()["field"] == "observations[0].provenance", refused.content
    assert "only the author" in refused.json()["detail"]
    assert not Observation.objects.exists()
    mine = _turn(author_api, session, "author", provenance="author-stated")
    assert mine.status_code == 201, mine.content
    assert list(Observation.objects.values_list("provenance", "status")) == [("author-stated", "working")]


# --- 5. A traceability node is signed by its caller ----------------------------------------------------


@pytest.mark.parametrize("name", ["terra", "author", "sol", "canon-integrity", "explore-options"])
def test_luna_cannot_sign_a_trace_node_with_another_name(name, book, author_api, luna_api, terra_api):
    start(author_api, book)

    forged = luna_api.post(url(book, "/trace/nodes"), {"node_id": "ch1", "kind": "chapter", "produced_by": name})

    assert forged.status_code == 403, forged.content
    assert forged.json()["field"] == "produced_by" and forged.json()["code"] == "not_your_name"
    assert list(TraceNode.objects.values_list("node_id", flat=True)) == ["premise"], "only the loop's own root"
    # Nor can Terra then withdraw it as hers: there is nothing signed in her name.
    assert terra_api.post(url(book, "/trace/nodes/ch1/withdraw"), {}).status_code == 404


def test_a_trace_node_is_signed_by_its_caller_and_withdrawn_only_by_it(book, author_api, luna_api, terra_api):
    start(author_api, book)
    # Unnamed, a node is the caller's; named, it is one of the caller's own lenses.
    assert luna_api.post(url(book, "/trace/nodes"), {"node_id": "l-a", "kind": "chapter"}).status_code == 201
    signed = luna_api.post(
        url(book, "/trace/nodes"), {"node_id": "l-b", "kind": "chapter", "produced_by": "reader-trust"}
    )
    assert signed.status_code == 201 and signed.json()["produced_by"] == "reader-trust"
    assert terra_api.post(url(book, "/trace/nodes"), {"node_id": "t-a", "kind": "arc"}).status_code == 201
    # A slot of another lens's does not lend its name to the node that cites it.
    slot = {"slug": "clue-plan", "type": "scene-card", "lens": "canon-integrity", "content": {}}
    assert terra_api.post(url(book, "/artifacts"), slot).status_code == 201
    backed = luna_api.post(url(book, "/trace/nodes"), {"node_id": "l-c", "kind": "clue", "artifact": "clue-plan"})
    assert backed.status_code == 201 and backed.json()["produced_by"] == "luna"
    assert dict(TraceNode.objects.values_list("node_id", "produced_by")) == {
        "premise": "",  # the root the loop drew when it started: nobody's until a lens draws it
        "l-a": "luna",
        "l-b": "reader-trust",
        "t-a": "terra",
        "l-c": "luna",
    }

    for node in ("l-a", "l-b", "l-c"):
        refused = terra_api.post(url(book, f"/trace/nodes/{node}/withdraw"), {})
        assert refused.status_code == 403 and refused.json()["code"] == "not_owner", refused.content
    assert luna_api.post(url(book, "/trace/nodes/t-a/withdraw"), {}).status_code == 403
    assert set(TraceNode.objects.values_list("status", flat=True)) == {"active"}
    assert luna_api.post(url(book, "/trace/nodes/l-c/withdraw"), {}).status_code == 200
    assert terra_api.post(url(book, "/trace/nodes/t-a/withdraw"), {}).status_code == 200


# --- 6. The validation plan moves by the validation lens, Sol or the author ----------------------------


@pytest.mark.parametrize("status", ["validating", "refuted"])
def test_terra_cannot_move_the_validation_plan(status, book, author_api, terra_api, luna_api, sol_api):
    start(author_api, book)
    made = terra_api.post(
        url(book, "/validation"),
        {"assumption": "Readers trust Mara.", "kill_condition": "Three readers doubt her.", "activity": "A reading."},
    )
    assert made.status_code == 201, made.content
    item = made.json()["id"]

    refused = terra_api.post(url(book, f"/validation/{item}/status"), {"validation_status": status})

    assert refused.status_code == 403, refused.content
    assert refused.json()["code"] == "missing_capability"
    assert "validation lens, Sol or the author" in refused.json()["detail"]
    assert ValidationPlanItem.objects.get(pk=item).validation_status == "hypothesis"
    # The validation lens (Luna, as the roster names it), Sol and the author move it.
    assert (
        luna_api.post(url(book, f"/validation/{item}/status"), {"validation_status": "validating"}).status_code == 200
    )
    assert (
        terra_api.post(url(book, f"/validation/{item}/status"), {"validation_status": "validated"}).status_code == 403
    )
    assert sol_api.post(url(book, f"/validation/{item}/status"), {"validation_status": "validated"}).status_code == 200
    assert ValidationPlanItem.objects.get(pk=item).validation_status == "validated"


# --- The same rules through the MCP server, where each of these duties has its tool ---------------------


def test_through_mcp_a_turn_brings_no_decided_observation_and_no_author_stated_label(author, book, author_api):
    session = start(author_api, book)
    sol = agent_keys(author, book)["sol"]

    def turn(**observation):
        arguments = {
            "session_id": str(session.pk),
            "role": "sol",
            "content": "Who wrote the letter?",
            "observations": [{"key": "forger", "value": "Ines", "provenance": "agent-inferred", **observation}],
        }
        return outcome(call(sol, "turn_add", arguments))

    status, body = turn(status="confirmed")
    assert (status, body["field"]) == (422, "observations.0.status"), body
    status, body = turn(provenance="author-stated")
    assert status == 422 and "only the author" in body["detail"], body
    assert not Observation.objects.exists()
    assert turn()[0] == "ok"
    assert list(Observation.objects.values_list("status", "provenance")) == [("working", "agent-inferred")]


def test_through_mcp_a_trace_node_is_signed_by_its_caller(author, book, author_api):
    start(author_api, book)
    luna = agent_keys(author, book)["luna"]

    status, body = outcome(
        call(luna, "loop_trace_node_add", {"book_id": str(book.pk), "node_id": "ch1", "kind": "chapter",
                                           "produced_by": "canon-integrity"})
    )  # fmt: skip

    assert (status, body["code"], body["field"]) == (403, "not_your_name", "produced_by"), body
    assert not TraceNode.objects.filter(node_id="ch1").exists()
    unnamed = {"book_id": str(book.pk), "node_id": "ch1", "kind": "chapter"}
    status, body = outcome(call(luna, "loop_trace_node_add", unnamed))
    assert status == "ok" and body["produced_by"] == "luna", body


def test_through_mcp_terra_cannot_move_the_validation_plan(author, book, author_api, terra_api):
    start(author_api, book)
    keys = agent_keys(author, book)
    made = terra_api.post(
        url(book, "/validation"),
        {"assumption": "Readers trust Mara.", "kill_condition": "Three readers doubt her.", "activity": "A reading."},
    )
    item = made.json()["id"]
    move = {"book_id": str(book.pk), "item_id": item, "validation_status": "validated"}

    status, body = outcome(call(keys["terra"], "loop_validation_status", move))

    assert (status, body["code"]) == (403, "missing_capability"), body
    assert ValidationPlanItem.objects.get(pk=item).validation_status == "hypothesis"
    assert outcome(call(keys["luna"], "loop_validation_status", {**move, "validation_status": "validating"}))[0] == "ok"
    assert ValidationPlanItem.objects.get(pk=item).validation_status == "validating"
