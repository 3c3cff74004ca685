"""Tampering outside the log is seen (issue 12, item 9).

Someone with the database file drops the append-only triggers and edits rows with raw SQL. Each
edit below must make verification fail: the API route, the `verify_decision_log` command and the
log page's badge. The decisions are made through the real routes in committed transactions, so
the tip anchor outside the database (approvals/anchor.py) is written as in production.
"""

from __future__ import annotations

import json
import uuid
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from approvals.anchor import anchor_path, anchor_tip
from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.models import KnowledgeClaim, StoryCharter
from library.models import ResearchItem
from novelgraph.core.db import install_append_only, remove_append_only

from .discovery_support import charter_body, start
from .factories import PASSWORD
from .log_tamper import guards_lifted, rewrite_entry
from .loop_scenes import ask_gate, pass_gate

pytestmark = pytest.mark.django_db(transaction=True)

RATIONALE = "Seen, weighed and agreed."
LOG = "approvals_decisionlogentry"


def _id(value) -> str:
    """A UUID as the database stores it (SQLite: 32 hex digits)."""
    value = uuid.UUID(str(value))
    return value.hex if connection.vendor == "sqlite" else str(value)


def _sql(statement: str, params: list) -> None:
    """Raw SQL with the decision log's triggers dropped, as someone holding the database file would."""
    remove_append_only(connection, [LOG])
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
    finally:
        install_append_only(connection, [LOG])


def _claim(sol_api, book, subject: str = "Mara") -> dict:
    body = {
        "scope": "book",
        "scope_id": str(book.pk),
        "subject": subject,
        "predicate": "fears",
        "value": {"what": "deep water", "since": 1998},
        "provenance": "agent-proposed",
        "source_refs": [],
    }
    response = sol_api.post("/claims", body)
    assert response.status_code == 201, response.content
    return response.json()


def _canon_scene(sol_api, author_api, book) -> dict:
    """A claim promoted, research admitted and, last, a charter approved: all through the API."""
    start(author_api, book)
    claim = _claim(sol_api, book)
    promoted = author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": RATIONALE})
    assert promoted.status_code == 200, promoted.content
    research = sol_api.post(
        f"/books/{book.pk}/research",
        {
            "url": "https://example.org/tides",
            "title": "Tide tables of the northern coast",
            "claim": "High tide that morning was at 06:12.",
            "citation": "Coastal Almanac 2025, p. 14",
        },
    )
    assert research.status_code == 201, research.content
    admitted = author_api.post(f"/research/{research.json()['id']}/admit", {"rationale": RATIONALE})
    assert admitted.status_code == 200, admitted.content
    charter = sol_api.post(f"/books/{book.pk}/charters", charter_body())
    assert charter.status_code == 201, charter.content
    resolved = author_api.post(f"/charters/{charter.json()['id']}/resolve", {"approved": True, "rationale": RATIONALE})
    assert resolved.status_code == 200, resolved.content
    return {"claim": claim["id"], "research": research.json()["id"], "charter": charter.json()["id"]}


def _verified(author_api, book) -> dict:
    response = author_api.get(f"/books/{book.pk}/decision-log/verify")
    assert response.status_code == 200
    return response.json()


def _command(book) -> tuple[bool, str]:
    out = StringIO()
    try:
        call_command("verify_decision_log", "--book", str(book.pk), stdout=out)
    except CommandError as exc:
        return False, out.getvalue() + str(exc)
    return True, out.getvalue()


def _badge(author, book) -> str:
    client = Client()
    assert client.login(username=author.username, password=PASSWORD)
    page = client.get(f"/review/books/{book.pk}/log/")
    assert page.status_code == 200
    text = page.content.decode()
    start_at = text.index('data-testid="log-badge"')
    return text[start_at : text.index("</span>", start_at)]


def _assert_broken(author, author_api, book, reason_part: str) -> dict:
    result = _verified(author_api, book)
    assert result["ok"] is False, result
    assert reason_part in result["reason"], result
    ok, text = _command(book)
    assert not ok and "BROKEN" in text and reason_part in text
    assert "broken" in _badge(author, book)
    return result


def test_an_untouched_log_verifies_with_its_anchor_and_every_approved_subject_checked(
    author, book, sol_api, author_api
):
    _canon_scene(sol_api, author_api, book)
    entries = DecisionLogEntry.objects.filter(book=book).count()

    result = _verified(author_api, book)

    assert result == {
        "ok": True,
        "entries": entries,
        "first_bad_sequence": None,
        "reason": None,
        "anchored_sequence": entries,
        "canon_checked": 3,  # the charter, the claim and the research item
    }
    assert _command(book)[0]
    assert "verified" in _badge(author, book)
    client = Client()
    client.login(username=author.username, password=PASSWORD)
    page = client.get(f"/review/books/{book.pk}/log/").content.decode()
    assert f"tip anchored at #{entries}" in page and "3 canon subjects checked against the log" in page
    # What became canon is in the hashed detail: the content's digest and, for a claim, its value.
    claim_entry = DecisionLogEntry.objects.get(book=book, subject_type="claim")
    assert claim_entry.detail["canon"]["value"] == {"what": "deep water", "since": 1998}
    assert len(claim_entry.detail["canon"]["digest"]) == 64
    assert {"digest"} <= set(DecisionLogEntry.objects.get(book=book, subject_type="charter").detail["canon"])


def test_deleting_the_newest_entry_and_resetting_its_approval_and_charter_to_pending_is_seen(
    author, book, sol_api, author_api
):
    ids = _canon_scene(sol_api, author_api, book)
    tip = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert tip.subject_type == "charter"

    _sql(f"DELETE FROM {LOG} WHERE id = %s", [_id(tip.pk)])
    _sql(
        "UPDATE approvals_approval SET status = 'pending', verdict = NULL, rationale = '', decided_by_id = NULL, "
        "decided_at = NULL WHERE id = %s",
        [_id(tip.approval_id)],
    )
    _sql("UPDATE discovery_storycharter SET status = 'proposed' WHERE id = %s", [_id(ids["charter"])])
    assert Approval.objects.get(pk=tip.approval_id).status == "pending"

    result = _assert_broken(author, author_api, book, "cut from the tip")
    assert result["first_bad_sequence"] == tip.sequence
    assert result["anchored_sequence"] == tip.sequence


def test_deleting_an_automatic_controller_tip_is_seen(author, book, sol_api, author_api):
    start(author_api, book)  # the loop begins with the discovery
    pass_gate(sol_api, author_api, book, "G0")
    passed = ask_gate(sol_api, book, "G1", summary="genre and series fit")
    assert passed.status_code == 200 and passed.json()["outcome"] == "passed", passed.content
    tip = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert tip.ratified_by == "controller:sol" and tip.approval_id is None
    assert _verified(author_api, book)["ok"]

    _sql(f"DELETE FROM {LOG} WHERE id = %s", [_id(tip.pk)])

    _assert_broken(author, author_api, book, "cut from the tip")


def test_a_proposed_claim_set_to_approved_with_a_decided_approval_is_seen(author, book, sol_api, author_api):
    _canon_scene(sol_api, author_api, book)
    forged = _claim(sol_api, book, subject="The harbour master")
    decided = Approval.objects.filter(book=book, status="decided").order_by("decided_at").first()

    _sql(
        "UPDATE discovery_knowledgeclaim SET status = 'approved', approval_id = %s WHERE id = %s",
        [_id(decided.pk), _id(forged["id"])],
    )
    assert KnowledgeClaim.objects.get(pk=forged["id"]).status == "approved"

    _assert_broken(author, author_api, book, f"claim {forged['id']} is approved but no log entry approves it")


def test_a_changed_value_of_an_approved_claim_is_seen(author, book, sol_api, author_api):
    ids = _canon_scene(sol_api, author_api, book)

    _sql(
        "UPDATE discovery_knowledgeclaim SET value = %s WHERE id = %s",
        [json.dumps({"what": "nothing at all", "since": 1998}), _id(ids["claim"])],
    )

    _assert_broken(author, author_api, book, f"claim {ids['claim']} differs from what its log entry approved")


def test_changed_content_of_an_approved_charter_is_seen(author, book, sol_api, author_api):
    ids = _canon_scene(sol_api, author_api, book)
    content = dict(StoryCharter.objects.get(pk=ids["charter"]).content, main_thrust="A keeper covers up a murder.")

    _sql("UPDATE discovery_storycharter SET content = %s WHERE id = %s", [json.dumps(content), _id(ids["charter"])])

    _assert_broken(author, author_api, book, f"charter {ids['charter']} differs from what its log entry approved")


def test_a_changed_admitted_research_item_is_seen(author, book, sol_api, author_api):
    ids = _canon_scene(sol_api, author_api, book)

    _sql(
        "UPDATE library_researchitem SET claim = %s WHERE id = %s",
        ["High tide that morning was at 09:40.", _id(ids["research"])],
    )
    assert ResearchItem.objects.get(pk=ids["research"]).status == "admitted"

    _assert_broken(author, author_api, book, f"research item {ids['research']} differs from what its log entry")


def test_a_forged_anchor_line_is_refused(author, book, sol_api, author_api):
    """A line appended to the anchor file without the key: naming an older entry (to make a cut look
    anchored) changes nothing, since the highest anchored sequence counts; naming a newer one is refused."""
    start(author_api, book)  # the loop begins with the discovery
    pass_gate(sol_api, author_api, book, "G0")
    first = DecisionLogEntry.objects.get(book=book, sequence=1)
    older = {"book": str(book.pk), "sequence": 0, "hash": "0" * 64, "key_id": first.seal_key_id, "seal": "0" * 64}
    with open(anchor_path(book.pk), "a") as handle:
        handle.write(json.dumps(older) + "\n")
    assert (anchor_tip(book.pk).sequence, anchor_tip(book.pk).valid) == (1, True)

    newer = dict(older, sequence=2, hash=first.hash)
    with open(anchor_path(book.pk), "a") as handle:
        handle.write(json.dumps(newer) + "\n")
    assert anchor_tip(book.pk).valid is False

    _assert_broken(author, author_api, book, "not sealed by this server")


def test_the_anchor_may_lag_but_then_its_entry_must_match(author, book, sol_api, author_api):
    """A crash between commit and the anchor's append leaves the anchor one entry behind: that verifies."""
    start(author_api, book)  # the loop begins with the discovery
    pass_gate(sol_api, author_api, book, "G0")
    path = anchor_path(book.pk)
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    passed = ask_gate(sol_api, book, "G1", summary="genre and series fit")
    assert passed.status_code == 200, passed.content
    path.write_text(lines[0] + "\n")  # the crash: the second entry's anchor line never reached the disk
    result = decision_log_verify(book)
    assert (result.ok, result.entries, result.anchored_sequence) == (True, 2, 1)


def test_a_cut_hidden_by_also_cutting_the_anchor_file_is_seen_against_a_kept_export(
    author, book, sol_api, author_api, tmp_path
):
    """The limit SECURITY.md states: someone who can write the anchor file too can cut both. An export the
    author kept ends with its sealed tip, and `verify_decision_log --against` names the cut."""
    start(author_api, book)  # the loop begins with the discovery
    pass_gate(sol_api, author_api, book, "G0")
    assert ask_gate(sol_api, book, "G1", summary="genre and series fit").status_code == 200
    export = author_api.get(f"/books/{book.pk}/decision-log/export")
    kept = tmp_path / "kept.jsonl"
    kept.write_bytes(b"".join(export.streaming_content))
    call_command("verify_decision_log", "--against", str(kept), stdout=StringIO())  # intact: it reaches the tip

    tip = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    _sql(f"DELETE FROM {LOG} WHERE id = %s", [_id(tip.pk)])
    anchor_path(book.pk).unlink()

    assert _verified(author_api, book)["ok"] is True, "without the anchor the cut chain alone looks whole"
    assert _verified(author_api, book)["anchored_sequence"] is None
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("verify_decision_log", "--against", str(kept), stdout=out)
    assert "the export reaches entry 2: entries were cut" in out.getvalue()


def test_after_a_deliberate_restore_reanchor_accepts_the_restored_tip_once_the_chain_verifies(
    author, book, sol_api, author_api
):
    """A backup restored on purpose lacks the newest entries: verification says so until the operator re-anchors."""
    start(author_api, book)  # the loop begins with the discovery
    pass_gate(sol_api, author_api, book, "G0")
    assert ask_gate(sol_api, book, "G1", summary="genre and series fit").status_code == 200
    tip = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    _sql(f"DELETE FROM {LOG} WHERE id = %s", [_id(tip.pk)])  # what an older backup looks like
    assert not _verified(author_api, book)["ok"]

    out = StringIO()
    call_command("verify_decision_log", "--book", str(book.pk), "--reanchor", stdout=out)

    assert f"tip anchored at #{tip.sequence - 1}" in out.getvalue()
    assert _verified(author_api, book)["ok"]
    assert len(anchor_path(book.pk).read_text().splitlines()) == 3, "the older anchor lines stay"
    # A chain that does not verify is never re-anchored.
    with guards_lifted() as cursor:
        rewrite_entry(cursor, book, 1, rationale="Forged")
    with pytest.raises(CommandError):
        call_command("verify_decision_log", "--book", str(book.pk), "--reanchor", stdout=StringIO())
    assert len(anchor_path(book.pk).read_text().splitlines()) == 3


def test_anchor_lines_appended_out_of_order_by_two_processes_still_anchor_the_highest_and_a_torn_line_is_skipped(
    author, book, sol_api, author_api
):
    start(author_api, book)  # the loop begins with the discovery
    pass_gate(sol_api, author_api, book, "G0")
    assert ask_gate(sol_api, book, "G1", summary="genre and series fit").status_code == 200
    path = anchor_path(book.pk)
    first, second = path.read_text().splitlines()
    path.write_text(f"{second}\n{first}\n" + '{"book": "torn mid-wri')  # a crash in the middle of an append

    tip = anchor_tip(book.pk)
    assert (tip.sequence, tip.valid) == (2, True)
    assert _verified(author_api, book)["anchored_sequence"] == 2
