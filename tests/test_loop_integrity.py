"""The loop's share of issue 12 (canon integrity) and issue 13 (reads never write).

Every test drives the route an agent key (or the author) would use, then checks the database: no gate
moved and nothing was ratified without the author's verdict; what the author ratified or recorded stays.
"""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps as django_apps

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.access import Cap, capabilities_of
from discovery.loop.models import BlackboardArtifact, LoopMeta, OpenQuestion, PlanNode, RosterEntry
from discovery.models import DiscoverySession

from .dbstate import rows_written
from .factories import BookFactory
from .loop_scenes import ask_gate, decide, pass_gate, reach_g2, saturate, started_book, trace, url  # noqa: F401

pytestmark = pytest.mark.django_db


def _conflict(api, book, text="Mara's mercy against the town's justice: which does the book side with?"):
    r = api.post(url(book, "/questions"), {"question": text, "target_discipline": "sol", "kind": "value-conflict"})
    assert r.status_code == 201, r.json()
    return r.json()["id"]


def _slot(api, book, slug, content, type_=None):
    r = api.post(url(book, "/artifacts"), {"slug": slug, "type": type_ or slug, "content": content})
    assert r.status_code == 201, r.json()
    return r.json()


# --- Item 3: a value conflict is the author's to settle -------------------------------------------------


def test_no_lens_and_not_sol_settles_a_value_conflict(book, luna_api, sol_api, terra_api):
    qid = _conflict(luna_api, book)
    body = {"resolution": "Mercy wins.", "cites": f"question:{qid}"}
    for api in (luna_api, terra_api, sol_api):
        r = api.post(url(book, f"/questions/{qid}/resolve"), body)
        assert r.status_code == 403, r.json()
        assert "decision:make" in r.json()["detail"]
    # Nor can it be routed away from her.
    r = sol_api.post(url(book, f"/questions/{qid}/route"), {"target_discipline": "reader-trust"})
    assert r.status_code == 422 and r.json()["field"] == "target_discipline"
    q = OpenQuestion.objects.get(pk=qid)
    assert (q.status, q.resolved_by) == ("open", "")
    assert not DecisionLogEntry.objects.filter(book=book).exists()


def test_an_unsettled_value_conflict_stops_the_automatic_g1(book, luna_api, sol_api, author_api):
    pass_gate(sol_api, author_api, book, "G0")
    qid = _conflict(luna_api, book)
    # Luna raised it and tries to settle it herself (issue 12's path to an automatic G1): refused.
    r = luna_api.post(url(book, f"/questions/{qid}/resolve"), {"resolution": "Mercy.", "cites": f"question:{qid}"})
    assert r.status_code == 403
    r = ask_gate(sol_api, book, "G1")
    assert r.status_code == 201, r.json()  # a card for the author, not a pass
    assert any("value conflict" in t for t in r.json()["card"]["risk_triggers"])
    assert LoopMeta.objects.get(book=book).gate == "G1"
    assert not DecisionLogEntry.objects.filter(book=book, ratified_by="controller:sol").exists()


def test_a_surfaced_value_conflict_blocks_g2_until_the_author_settles_it(
    book, luna_api, terra_api, sol_api, author_api
):
    qid = _conflict(luna_api, book)
    assert sol_api.post(url(book, f"/questions/{qid}/surface")).status_code == 200
    reach_g2(sol_api, author_api, book)  # G1 waited for the author (the conflict is a risk trigger)
    saturate(sol_api, luna_api, terra_api, book)
    r = ask_gate(sol_api, book, "G2")
    assert r.status_code == 409
    assert any("value-conflict" in reason and "author" in reason for reason in r.json()["reasons"])
    # The author settles it: her resolution is a decision-log row of hers.
    r = author_api.post(
        url(book, f"/questions/{qid}/resolve"), {"resolution": "Mercy, at a price.", "cites": f"question:{qid}"}
    )
    assert r.status_code == 200, r.json()
    assert r.json()["resolved_by"] == "author:ada"
    row = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert (row.subject_type, row.subject_id, row.ratified_by) == ("loop-question", qid, "author:ada")
    assert ask_gate(sol_api, book, "G2").status_code == 201
    assert decision_log_verify(book).ok


# --- Item 4: the approval covers the impact the author was shown ------------------------------------------


def test_an_edge_added_after_the_preview_lapses_the_approval_and_a_new_preview_is_shown(book, sol_api, author_api):
    trace(
        sol_api,
        book,
        [("premise", "premise"), ("sq", "story-question"), ("ch1", "chapter"), ("ch2", "chapter")],
        [("premise", "sq"), ("sq", "ch1"), ("premise", "ch2")],
    )
    r = ask_gate(sol_api, book, "G0", trace_seed="sq")
    assert r.status_code == 201, r.json()
    first = r.json()["approval_id"]
    shown = author_api.get(f"/approvals/{first}").json()["impact"]
    assert [a["node_id"] for a in shown["affected"]] == ["ch1"]
    # A lens adds an edge: a redirect would now also reach ch2, which the author was not shown.
    assert sol_api.post(url(book, "/trace/edges"), {"from_id": "sq", "to_id": "ch2"}).status_code == 201
    # Through the general approvals route, too, the verdict is refused: nothing decided, nothing logged.
    r = author_api.post(f"/approvals/{first}/verdict", {"verdict": "redirect", "rationale": "r", "constraint": "c"})
    assert r.status_code == 409 and r.json()["code"] == "superseded"
    assert Approval.objects.get(pk=first).status == "superseded"
    assert not DecisionLogEntry.objects.filter(book=book).exists()
    # Through the loop's route the author is handed the fresh card with the impact as it is now.
    second_card = sol_api.post(url(book, "/trace/nodes"), {"node_id": "note", "kind": "note"})
    assert second_card.status_code == 201  # any loop write re-presents the lapsed card
    pending = author_api.get(url(book)).json()["pending_card"]
    assert pending["approval_id"] != first
    second = pending["approval_id"]
    fresh = author_api.get(f"/approvals/{second}").json()["impact"]
    assert sorted(a["node_id"] for a in fresh["affected"]) == ["ch1", "ch2"]
    d = decide(author_api, book, second, "redirect", constraint="keep the harbour")
    assert d.status_code == 200, d.json()
    cascade = d.json()["detail"]["effect"]["cascade"]  # applied, or surfaced past the breaker: the same reach
    assert sorted(cascade.get("stale") or cascade["affected"]) == ["ch1", "ch2"]
    assert decision_log_verify(book).ok


def test_the_loop_verdict_route_answers_a_lapse_with_the_new_card_and_its_preview(book, sol_api, author_api):
    trace(sol_api, book, [("premise", "premise"), ("sq", "story-question"), ("ch1", "chapter")], [("premise", "sq")])
    first = ask_gate(sol_api, book, "G0", trace_seed="premise").json()["approval_id"]
    assert sol_api.post(url(book, "/trace/edges"), {"from_id": "sq", "to_id": "ch1"}).status_code == 201
    r = decide(author_api, book, first, "approve")
    assert r.status_code == 409 and r.json()["code"] == "superseded"
    assert r.json()["approval_id"] not in (None, first)
    assert [a["node_id"] for a in r.json()["impact"]["affected"]] == ["sq", "ch1"]
    assert LoopMeta.objects.get(book=book).gate == "G0"
    assert decide(author_api, book, r.json()["approval_id"], "approve").status_code == 200
    assert LoopMeta.objects.get(book=book).gate == "G1"


# --- Item 5: a ratified version stays current until the author ratifies a successor ---------------------


def test_a_lens_proposes_beside_a_ratified_slot_and_never_replaces_it(book, sol_api, luna_api, author_api):
    _slot(sol_api, book, "story-bet", {"bet": "a fair-play mystery in a tidal town"})
    r = ask_gate(sol_api, book, "G0", artifacts=["story-bet"])
    assert decide(author_api, book, r.json()["approval_id"], "approve").status_code == 200
    written = _slot(luna_api, book, "story-bet", {"bet": "a romance instead"})
    assert written["status"] == "ratified" and written["version"] == 1
    assert written["content"] == {"bet": "a fair-play mystery in a tidal town"}
    assert (written["successor"]["version"], written["successor"]["status"]) == (2, "proposed")
    assert written["successor"]["content"] == {"bet": "a romance instead"}
    listed = {a["slug"]: a for a in author_api.get(url(book, "/artifacts")).json()["items"]}
    assert listed["story-bet"]["content"]["bet"] == "a fair-play mystery in a tidal town"
    # Only the author's verdict at a gate makes the successor current.
    pass_gate(sol_api, author_api, book, "G1")
    r = ask_gate(sol_api, book, "G1.5", artifacts=["story-bet"])
    shown = author_api.get(f"/approvals/{r.json()['approval_id']}").json()["proposal"]["slots"]
    assert shown[0]["content"]["bet"] == "a fair-play mystery in a tidal town"
    assert shown[0]["successor"]["content"] == {"bet": "a romance instead"}  # she sees what approve makes current
    assert decide(author_api, book, r.json()["approval_id"], "approve").status_code == 200
    slot = BlackboardArtifact.objects.get(book=book, slug="story-bet")
    assert (slot.status, slot.version, slot.content, slot.successor) == (
        "ratified",
        2,
        {"bet": "a romance instead"},
        {},
    )


def test_a_successor_written_after_the_card_lapses_the_card(book, sol_api, luna_api, author_api):
    _slot(sol_api, book, "story-bet", {"bet": "v1"})
    r = ask_gate(sol_api, book, "G0", artifacts=["story-bet"])
    assert decide(author_api, book, r.json()["approval_id"], "approve").status_code == 200
    pass_gate(sol_api, author_api, book, "G1")
    card = ask_gate(sol_api, book, "G1.5", artifacts=["story-bet"]).json()["approval_id"]
    _slot(luna_api, book, "story-bet", {"bet": "slipped in after the card"})
    r = decide(author_api, book, card, "approve")
    assert r.status_code == 409 and r.json()["code"] == "superseded"
    assert BlackboardArtifact.objects.get(book=book, slug="story-bet").content == {"bet": "v1"}


def test_no_one_but_the_author_empties_her_constraints(book, sol_api, luna_api, terra_api, author_api):
    _slot(sol_api, book, "scope-boundary", {"note": "one town"})
    r = ask_gate(sol_api, book, "G0", artifacts=["scope-boundary"])
    d = decide(author_api, book, r.json()["approval_id"], "approve-with-constraint", constraint="one city only")
    assert d.status_code == 200, d.json()
    for api in (luna_api, terra_api, sol_api):
        _slot(api, book, "scope-boundary", {"note": "anywhere", "constraints": []})
    boundary = BlackboardArtifact.objects.get(book=book, slug="scope-boundary")
    assert boundary.status == "ratified"
    assert [c["text"] for c in boundary.content["constraints"]] == ["one city only"]
    assert [c["text"] for c in boundary.successor["content"]["constraints"]] == ["one city only"]
    assert [c["text"] for c in LoopMeta.objects.get(book=book).constraints] == ["one city only"]


def test_writing_ratified_is_refused_for_every_writer(book, sol_api, luna_api, author_api):
    for api in (sol_api, luna_api, author_api):
        r = api.post(url(book, "/artifacts"), {"slug": "brief", "type": "decision-brief", "status": "ratified"})
        assert r.status_code == 403
    assert not BlackboardArtifact.objects.filter(book=book).exists()


# --- Item 10: each G2 review is filed by the lens the roster names for it --------------------------------


def test_the_roster_names_roles_that_can_do_the_g2_reviews():
    required = RosterEntry.objects.filter(required=True, required_at_gate="G2")
    roles = {e.slug: e.agent_role for e in required}
    assert roles == {"canon-integrity": "terra", "reader-trust": "luna"}
    assert len(set(roles.values())) == len(roles)  # distinct lenses
    assert Cap.SERIES_READ in capabilities_of(roles["canon-integrity"])  # it can read the canon it checks


def test_a_review_is_filed_only_by_the_role_the_roster_names(book, luna_api, terra_api, sol_api, author_api):
    finding = {"findings": [{"text": "t", "resolution": "resolved", "reason": "r"}], "gate": "G2"}
    for api, lens in ((luna_api, "canon-integrity"), (sol_api, "canon-integrity"), (terra_api, "reader-trust"),
                      (author_api, "reader-trust")):  # fmt: skip
        r = api.post(url(book, "/reviews"), {"lens": lens, **finding})
        assert r.status_code == 403 and r.json()["code"] == "not_this_lens", (lens, r.json())
    assert terra_api.post(url(book, "/reviews"), {"lens": "canon-integrity", **finding}).status_code == 201
    assert luna_api.post(url(book, "/reviews"), {"lens": "reader-trust", **finding}).status_code == 201


def test_g2_refuses_one_role_filing_both_required_reviews_or_a_canon_lens_that_cannot_read_canon(
    book, luna_api, terra_api, sol_api, author_api
):
    reach_g2(sol_api, author_api, book)
    saturate(sol_api, luna_api, terra_api, book)
    # Staff re-point the roster: both required lenses to Terra.
    RosterEntry.objects.filter(slug="reader-trust").update(agent_role="terra")
    r = ask_gate(sol_api, book, "G2")
    assert r.status_code == 409
    assert any("distinct lenses" in reason for reason in r.json()["reasons"])
    # Or the canon lens to Luna, who cannot read series canon: her review is refused and G2 stays shut.
    RosterEntry.objects.filter(slug="reader-trust").update(agent_role="luna")
    RosterEntry.objects.filter(slug="canon-integrity").update(agent_role="luna")
    body = {"lens": "canon-integrity", "gate": "G2", "findings": []}
    r = luna_api.post(url(book, "/reviews"), body)
    assert r.status_code == 409 and r.json()["code"] == "lens_cannot_read"
    r = ask_gate(sol_api, book, "G2")
    assert r.status_code == 409
    assert any("series:read" in reason for reason in r.json()["reasons"])
    assert LoopMeta.objects.get(book=book).gate == "G2"


# --- Issue 13: reads never write; the loop begins with the discovery -------------------------------------


@pytest.fixture
def unstarted(author):
    return BookFactory(owner=author, title="Not begun")


@pytest.fixture
def quiet_keys(monkeypatch):
    """A key records its use at most once a minute; move that write out of the way of the no-write checks."""
    monkeypatch.setattr("novelgraph.core.auth.KEY_USE_RESOLUTION", timedelta(days=1))


def test_reading_the_loop_of_a_book_not_started_creates_nothing(
    unstarted, author, author_api, author_browser, quiet_keys
):
    author_browser.get("/")  # the session's and the key's first-use writes happen here, not in what is measured
    author_api.get("/me")
    before = rows_written()
    r = author_api.get(url(unstarted))
    assert r.status_code == 409 and r.json()["code"] == "discovery_not_started"
    for tail in ("/nodes", "/lint", "/artifacts", "/export"):
        assert author_api.get(url(unstarted, tail)).status_code == 409
    assert rows_written() == before
    page = author_browser.get(f"/books/{unstarted.pk}/loop/")
    assert page.status_code == 200
    assert "Discovery not started" in page.content.decode()
    assert rows_written() == before
    assert not LoopMeta.objects.filter(book=unstarted).exists()
    assert not PlanNode.objects.filter(book=unstarted).exists()


def test_a_write_to_a_loop_not_started_is_refused_and_creates_nothing(unstarted, author):
    from django.test import Client

    from novelgraph.core.services import api_key_create

    from .conftest import Api

    sol = Api(Client(), api_key_create(owner=author, role="sol")[1])
    r = sol.post(url(unstarted, "/trace/nodes"), {"node_id": "premise", "kind": "premise"})
    assert r.status_code == 409 and r.json()["code"] == "discovery_not_started"
    assert not LoopMeta.objects.filter(book=unstarted).exists()


def test_reading_a_lapsed_card_writes_nothing(book, sol_api, luna_api, author_api, quiet_keys):
    _slot(luna_api, book, "arc", {"beat": "one"})
    first = ask_gate(sol_api, book, "G0", artifacts=["arc"]).json()["approval_id"]
    _slot(luna_api, book, "arc", {"beat": "two"})
    assert decide(author_api, book, first, "approve").status_code == 409  # lapses, a fresh card is raised
    Approval.objects.filter(book=book, status="pending").update(status="superseded")  # lapsed again
    author_api.get("/me")
    before = rows_written()
    body = author_api.get(url(book)).json()
    assert body["pending_card"] is None and body["meta"]["status"] == "working"
    assert rows_written() == before


def test_books_started_before_get_their_loop_by_the_data_migration(author, unstarted):
    started = BookFactory(owner=author, title="Started long ago")
    DiscoverySession.objects.create(book=started)  # as before the loop began with the discovery
    migration = importlib.import_module("discovery.loop.migrations.0005_loops_for_started_books_and_roster_roles")
    migration.forward(django_apps, None)
    meta = LoopMeta.objects.get(book=started)
    assert (meta.gate, meta.status) == ("G0", "working")
    assert PlanNode.objects.filter(book=started, is_root=True).count() == 1
    assert not LoopMeta.objects.filter(book=unstarted).exists()
    migration.forward(django_apps, None)  # idempotent
    assert PlanNode.objects.filter(book=started, is_root=True).count() == 1


# --- The rest of the family: nothing an agent key does clears what holds a gate ---------------------------


def test_only_the_queued_lens_clears_a_rerun_the_authors_constraint_queued(book, sol_api, luna_api, author_api):
    r = luna_api.post(
        url(book, "/artifacts"),
        {"slug": "arc", "type": "scene-card", "lens": "reader-trust", "content": {"beat": "one"}},
    )
    assert r.status_code == 201
    card = ask_gate(sol_api, book, "G0", artifacts=["arc"]).json()["approval_id"]
    d = decide(author_api, book, card, "approve-with-constraint", constraint="no second murder")
    assert d.status_code == 200
    rerun = author_api.get(url(book, "/reruns")).json()["items"][0]
    assert (rerun["lens"], rerun["status"]) == ("reader-trust", "queued")
    r = sol_api.post(url(book, f"/reruns/{rerun['id']}/done"))
    assert r.status_code == 403 and r.json()["code"] == "not_this_lens"
    assert author_api.get(url(book, "/reruns")).json()["items"][0]["status"] == "queued"
    assert luna_api.post(url(book, f"/reruns/{rerun['id']}/done")).status_code == 200
