"""The decision log: one hash-chained, sealed, append-only chain per book (invariant 6).

Covers the chain recipe, the database guards, tamper detection (raw SQL with the
guards lifted) through the API and the management command, the JSON Lines export
re-verified by the stand-alone script, and concurrent appends that never fork.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import subprocess
import sys
import threading
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.test import Client

from approvals.chain import CHAIN_FIELDS, GENESIS_HASH, canonical_bytes, chain_fields, entry_hash
from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_for, decision_log_verify
from approvals.services import decision_log_append

from .factories import PASSWORD, BookFactory, UserFactory
from .log_tamper import book_param, entry_fields, guards_lifted, rewrite_entry, write_entry

TABLE = "approvals_decisionlogentry"
SCRIPT = Path(settings.BASE_DIR) / "scripts" / "verify_decision_log_export.py"
DECISIONS = ["approve", "reject", "approve-with-constraint", "park", "extend"]


def append_entries(book, user, count: int = 5) -> list[DecisionLogEntry]:
    entries = []
    for i in range(count):
        decision = DECISIONS[i % len(DECISIONS)]
        detail = {"constraint": "Keep Mara's fear of water — nicht übertreiben"} if decision != "approve" else {}
        entries.append(
            decision_log_append(
                book=book,
                decision=decision,
                subject_type="charter",
                subject_id=uuid.uuid4(),
                rationale=f"Reason {i + 1}: the keeper's unreliability drives the book.",
                ratified_by_user=user,
                detail=detail,
            )
        )
    return entries


@pytest.fixture
def logged(book, author):
    return append_entries(book, author)


def db_value(field_name: str, value):
    return DecisionLogEntry._meta.get_field(field_name).get_db_prep_value(value, connection)


def run_command(*args) -> str:
    out = StringIO()
    call_command("verify_decision_log", *args, stdout=out)
    return out.getvalue()


# --- The chain ---------------------------------------------------------------


def test_entries_are_chained_from_the_genesis_hash_and_sealed(book, logged):
    assert [e.sequence for e in logged] == [1, 2, 3, 4, 5]
    assert logged[0].prev_hash == GENESIS_HASH == "0" * 64
    for previous, entry in itertools.pairwise(logged):
        assert entry.prev_hash == previous.hash
    first = logged[0]
    fields = chain_fields(
        book_id=book.pk,
        sequence=1,
        ts=first.ts,
        gate=None,
        decision=first.decision,
        subject_type=first.subject_type,
        subject_id=first.subject_id,
        ratified_by=first.ratified_by,
        reversibility_class=first.reversibility_class,
        rationale=first.rationale,
        detail=first.detail,
        prev_hash=GENESIS_HASH,
    )
    canonical = json.dumps(fields, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
    assert first.hash == hashlib.sha256(canonical).hexdigest() == entry_hash(fields)
    assert first.ratified_by == "author:ada"
    assert decision_log_verify(book).as_dict() == {
        "ok": True,
        "entries": 5,
        "first_bad_sequence": None,
        "reason": None,
        "anchored_sequence": None,  # the test's transaction never commits: no anchor was written
        "canon_checked": 0,
    }


def test_each_book_has_its_own_chain(book, other_book, author, outsider):
    append_entries(book, author, 2)
    theirs = append_entries(other_book, outsider, 1)
    assert theirs[0].sequence == 1 and theirs[0].prev_hash == GENESIS_HASH
    assert decision_log_verify(book).ok and decision_log_verify(other_book).ok


def test_an_entry_needs_a_rationale_a_known_decision_and_a_ratifier(book, author):
    from django.db import IntegrityError

    from novelgraph.core.errors import Invalid

    with pytest.raises(Invalid) as blank:
        decision_log_append(
            book=book, decision="approve", subject_type="x", subject_id=1, rationale="  ", ratified_by_user=author
        )
    assert blank.value.field == "rationale"
    # The decision and the reversibility class come typed from the input schemas; the table refuses any other.
    with pytest.raises(IntegrityError), transaction.atomic():
        decision_log_append(
            book=book, decision="yes please", subject_type="x", subject_id=1, rationale="r", ratified_by_user=author
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        decision_log_append(
            book=book,
            decision="approve",
            subject_type="x",
            subject_id=1,
            rationale="r",
            ratified_by_user=author,
            reversibility_class="maybe",
        )
    with pytest.raises(ValueError):
        decision_log_append(book=book, decision="approve", subject_type="x", subject_id=1, rationale="r")
    assert not DecisionLogEntry.objects.filter(book=book).exists()


def test_an_automatic_gate_is_ratified_by_the_controller_role(book):
    entry = decision_log_append(
        book=book,
        decision="approve",
        subject_type="gate",
        subject_id="G1",
        rationale="No risk trigger fired.",
        controller_role="sol",
        gate="G1",
    )
    assert entry.ratified_by == "controller:sol" and entry.ratified_by_user is None
    assert decision_log_verify(book).ok


# --- The database and the model refuse changes ------------------------------


def test_the_database_refuses_update_and_delete_through_the_orm(book, logged):
    text = logged[0].entry.replace(logged[0].rationale, "rewritten")
    with pytest.raises(DatabaseError), transaction.atomic():
        DecisionLogEntry.objects.filter(book=book).update(entry=text)
    # What an entry shows is generated from its text: Django does not even try to write the column.
    assert DecisionLogEntry.objects.filter(book=book).update(rationale="rewritten") == 0
    with pytest.raises(DatabaseError), transaction.atomic():
        DecisionLogEntry.objects.filter(book=book).delete()
    assert DecisionLogEntry.objects.filter(book=book).count() == 5
    assert set(DecisionLogEntry.objects.values_list("rationale", flat=True)) == {e.rationale for e in logged}


def test_the_database_refuses_update_and_delete_in_raw_sql(book, logged):
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET rationale = %s WHERE sequence = 2", ["rewritten"])
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE sequence = 2")
    assert DecisionLogEntry.objects.get(book=book, sequence=2).rationale == logged[1].rationale
    assert decision_log_verify(book).ok


def test_the_model_refuses_save_and_delete_of_an_existing_entry(book, logged):
    entry = DecisionLogEntry.objects.get(pk=logged[0].pk)
    entry.rationale = "rewritten"
    with pytest.raises(ValidationError):
        entry.save()
    with pytest.raises(ValidationError):
        entry.delete()
    assert DecisionLogEntry.objects.get(pk=entry.pk).rationale == logged[0].rationale


def test_the_admin_shows_entries_but_refuses_to_change_or_delete_them(book, logged):
    staff = UserFactory(username="root", is_staff=True, is_superuser=True)
    client = Client()
    assert client.login(username=staff.username, password=PASSWORD)
    entry = logged[0]
    assert client.get("/admin/approvals/decisionlogentry/").status_code == 200
    change = client.post(f"/admin/approvals/decisionlogentry/{entry.pk}/change/", {"rationale": "rewritten"})
    assert change.status_code == 403
    assert client.get(f"/admin/approvals/decisionlogentry/{entry.pk}/delete/").status_code == 403
    assert client.post(f"/admin/approvals/decisionlogentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get("/admin/approvals/decisionlogentry/add/").status_code == 403
    bulk = client.post(
        "/admin/approvals/decisionlogentry/",
        {"action": "delete_selected", "_selected_action": [str(entry.pk)], "post": "yes"},
    )
    assert bulk.status_code in (200, 302, 403)
    assert DecisionLogEntry.objects.filter(book=book).count() == 5
    assert DecisionLogEntry.objects.get(pk=entry.pk).rationale == entry.rationale


# --- Tampering: five cases, each detected and named -------------------------


def tamper_edited_rationale(book, logged):
    with guards_lifted() as cursor:
        rewrite_entry(cursor, book, 3, rationale="We never said that.")
    return 3, "hash does not match"


def tamper_deleted_row(book, logged):
    with guards_lifted() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE book_id = %s AND sequence = 3", [book_param(book)])
    return 3, "expected sequence 3, found 4"


def tamper_inserted_row(book, logged):
    """A forged entry slipped in at 3, with a valid SHA-256 hash and a copied seal; the entries after it are
    renumbered and its successor relinked, each with a valid SHA-256 hash of its new text."""
    second = logged[1]
    forged = {
        **entry_fields(book, 2),
        "sequence": 3,
        "gate": None,
        "decision": "approve",
        "subject_type": "claim",
        "subject_id": "forged",
        "rationale": "Approved, obviously.",
        "detail": {},
        "prev_hash": second.hash,
    }
    forged_hash = entry_hash(forged)
    with guards_lifted() as cursor:
        for sequence in range(len(logged), 2, -1):  # from the tip down: the unique sequence never collides
            moved = {**entry_fields(book, sequence), "sequence": sequence + 1}
            if sequence == 3:
                moved["prev_hash"] = forged_hash
            write_entry(cursor, book, sequence, moved, rehash=True)
        cursor.execute(
            f"INSERT INTO {TABLE} (id, book_id, entry, ratified_by_user_id, approval_id, hash, seal, seal_key_id)"
            f" SELECT %s, book_id, %s, ratified_by_user_id, NULL, %s, seal, seal_key_id FROM {TABLE}"
            " WHERE book_id = %s AND sequence = 2",
            [db_value("id", uuid.uuid4()), canonical_bytes(forged).decode(), forged_hash, book_param(book)],
        )
    return 3, "seal does not match"


def tamper_swapped_rows(book, logged):
    """Entries 2 and 3 trade places: the order is the one their texts give, so the texts must change."""
    second, third = entry_fields(book, 2), entry_fields(book, 3)
    with guards_lifted() as cursor:
        write_entry(cursor, book, 2, {**second, "sequence": 1002})
        write_entry(cursor, book, 3, {**third, "sequence": 2})
        write_entry(cursor, book, 1002, {**second, "sequence": 3})
    return 2, "hash does not match"


def tamper_recomputed_without_the_secret(book, logged):
    """Edit entry 3 and recompute a perfectly valid SHA-256 chain from there; the seals cannot follow."""
    prev_hash = logged[1].hash
    with guards_lifted() as cursor:
        for entry in logged[2:]:
            fields = entry_fields(book, entry.sequence)
            if entry.sequence == 3:
                fields["rationale"] = "We never said that."
            fields["prev_hash"] = prev_hash
            new_hash = entry_hash(fields)
            guessed_seal = hashlib.sha256(f"guess:{new_hash}".encode()).hexdigest()
            prev_hash = write_entry(cursor, book, entry.sequence, fields, rehash=True, seal=guessed_seal)
    return 3, "seal does not match"


TAMPERS = [
    tamper_edited_rationale,
    tamper_deleted_row,
    tamper_inserted_row,
    tamper_swapped_rows,
    tamper_recomputed_without_the_secret,
]


@pytest.mark.parametrize("tamper", TAMPERS, ids=lambda t: t.__name__.removeprefix("tamper_"))
def test_tampering_is_detected_and_named_by_the_api_and_the_command(
    tamper, book, logged, author_api, other_book, outsider
):
    append_entries(other_book, outsider, 2)
    bad_sequence, reason = tamper(book, logged)

    response = author_api.get(f"/books/{book.pk}/decision-log/verify")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is False
    assert body["first_bad_sequence"] == bad_sequence
    assert reason in body["reason"]

    with pytest.raises(CommandError) as failed:
        run_command()
    assert f"book {book.pk}" in str(failed.value) and f"broken at entry {bad_sequence}" in str(failed.value)
    assert str(other_book.pk) not in str(failed.value)

    out = StringIO()
    with pytest.raises(CommandError):
        call_command("verify_decision_log", "--book", str(book.pk), stdout=out)
    assert f"BROKEN  {book.pk}" in out.getvalue() and f"entry {bad_sequence} fails" in out.getvalue()
    # The other book's chain is untouched and still verifies on its own.
    assert "2 entries verified" in run_command("--book", str(other_book.pk))


def test_an_entry_moved_in_from_another_books_chain_is_named(book, logged, other_book, outsider):
    """Another book's entry 3, with its own valid hash and seal, put in place of this book's entry 3."""
    append_entries(other_book, outsider, 3)
    with guards_lifted() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE book_id = %s AND sequence = 3", [book_param(book)])
        cursor.execute(
            f"UPDATE {TABLE} SET book_id = %s WHERE book_id = %s AND sequence = 3",
            [book_param(book), book_param(other_book)],
        )
    result = decision_log_verify(book)
    assert (result.ok, result.first_bad_sequence) == (False, 3), result


def test_the_columns_that_show_an_entry_cannot_be_written(book, logged):
    """What an entry shows (its rationale, its place in the chain) is generated from its hashed text: even with
    the append-only guards lifted, the database refuses to be told another value."""
    for column, value in (("rationale", "We never said that."), ("sequence", 9), ("prev_hash", "0" * 64)):
        with pytest.raises(DatabaseError), transaction.atomic(), guards_lifted() as cursor:
            cursor.execute(f"UPDATE {TABLE} SET {column} = %s WHERE book_id = %s", [value, book_param(book)])
    assert [e.rationale for e in decision_log_for(book)] == [e.rationale for e in logged]
    assert decision_log_verify(book).ok


def test_a_shown_column_made_writable_by_altering_the_table_is_named(book, logged):
    """Beyond editing rows: the table altered so that a shown column is plain again, then written. The hashed
    texts are untouched (the chain verifies), but what pages show is no longer what the entries say."""
    with guards_lifted() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f'ALTER TABLE {TABLE} DROP COLUMN "gate"')
            cursor.execute(f'ALTER TABLE {TABLE} ADD COLUMN "gate" varchar(4)')
        else:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no ALTER TABLE with the inserts' checks pending
            cursor.execute(f'ALTER TABLE {TABLE} ALTER COLUMN "gate" DROP EXPRESSION')
        cursor.execute(f"UPDATE {TABLE} SET gate = 'G3' WHERE book_id = %s", [book_param(book)])
    assert set(DecisionLogEntry.objects.filter(book=book).values_list("gate", flat=True)) == {"G3"}
    result = decision_log_verify(book)
    assert result.ok is False and "column gate is no longer generated" in result.reason


def test_a_recomputed_chain_passes_sha256_alone_but_not_the_seal(book, logged, author_api, tmp_path):
    tamper_recomputed_without_the_secret(book, logged)
    export = author_api.get(f"/books/{book.pk}/decision-log/export")
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(export.streaming_content))
    without_key = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True)
    assert without_key.returncode == 0, without_key.stdout
    with_key = subprocess.run(
        [sys.executable, str(SCRIPT), str(path), "--key", settings.DECISION_LOG_SEAL_KEY],
        capture_output=True,
        text=True,
    )
    assert with_key.returncode == 1
    assert "BROKEN at entry 3: seal does not match" in with_key.stdout


def test_cutting_off_a_decided_approvals_entry_is_detected(book, author):
    from approvals.models import Approval

    from .factories import ApprovalFactory

    approval = ApprovalFactory(book=book)
    entry = decision_log_append(
        book=book,
        decision="approve",
        subject_type=approval.subject_type,
        subject_id=approval.subject_id,
        rationale="Yes.",
        ratified_by_user=author,
        approval=approval,
    )
    Approval.objects.filter(pk=approval.pk).update(
        status="decided", verdict="approve", rationale="Yes.", decided_by=author
    )
    assert decision_log_verify(book).ok
    with guards_lifted() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE id = %s", [db_value("id", entry.pk)])
    result = decision_log_verify(book)
    assert result.ok is False and result.first_bad_sequence == 1
    assert str(approval.pk) in result.reason and "log entry is missing" in result.reason


# --- The management command ----------------------------------------------------


def test_the_command_prints_a_line_per_book_and_succeeds_when_all_verify(book, logged, other_book, outsider):
    append_entries(other_book, outsider, 1)
    out = run_command()
    assert f"ok      {book.pk}  {book.title}: 5 entries verified" in out
    assert f"ok      {other_book.pk}  {other_book.title}: 1 entries verified" in out
    only = run_command("--book", str(book.pk))
    assert str(book.pk) in only and str(other_book.pk) not in only
    assert str(book.pk) in run_command("--book", book.slug)


def test_the_command_refuses_an_unknown_book(db):
    with pytest.raises(CommandError, match="no book"):
        run_command("--book", str(uuid.uuid4()))


# --- API: list, verify, export -----------------------------------------------


def test_the_log_lists_in_sequence_order_and_paginates(book, logged, author_api):
    response = author_api.get(f"/books/{book.pk}/decision-log", limit=2, offset=1)
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 5
    assert [e["sequence"] for e in body["items"]] == [2, 3]
    item = body["items"][0]
    assert item["hash"] == logged[1].hash and item["prev_hash"] == logged[0].hash
    assert item["ratified_by"] == "author:ada" and item["decision"] == "reject"


def test_agents_of_the_book_may_read_and_verify_the_log(book, logged, luna_api, sol_api):
    assert luna_api.get(f"/books/{book.pk}/decision-log").json()["count"] == 5
    assert sol_api.get(f"/books/{book.pk}/decision-log/verify").json()["ok"] is True


def test_a_foreign_book_log_is_not_found_and_anonymous_is_refused(book, logged, outsider_api, anonymous_api):
    for path in ("", "/verify", "/export"):
        assert outsider_api.get(f"/books/{book.pk}/decision-log{path}").status_code == 404
        assert anonymous_api.get(f"/books/{book.pk}/decision-log{path}").status_code == 401
    assert outsider_api.get("/books/not-a-uuid/decision-log").status_code == 422


def test_the_export_is_json_lines_that_the_outside_script_reverifies(book, logged, author_api, tmp_path):
    response = author_api.get(f"/books/{book.pk}/decision-log/export")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    content = b"".join(response.streaming_content)
    lines = [json.loads(line) for line in content.decode().splitlines()]
    tip = lines.pop()["tip"]  # the last line seals the tip, as the anchor file does
    assert (tip["book"], tip["sequence"], tip["hash"]) == (str(book.pk), 5, logged[-1].hash)
    assert [line["sequence"] for line in lines] == [1, 2, 3, 4, 5]
    assert set(lines[0]) == {*CHAIN_FIELDS, "hash", "seal", "seal_key_id"}
    assert lines[1]["detail"]["constraint"].endswith("nicht übertreiben")
    assert [line["hash"] for line in lines] == [e.hash for e in logged]

    path = tmp_path / "log.jsonl"
    path.write_bytes(content)
    ok = subprocess.run(
        [sys.executable, str(SCRIPT), str(path), "--key", settings.DECISION_LOG_SEAL_KEY],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ok: 5 entries verified (hashes and seals)" in ok.stdout

    wrong_key = subprocess.run(
        [sys.executable, str(SCRIPT), str(path), "--key", "not-the-key"], capture_output=True, text=True
    )
    assert wrong_key.returncode == 1 and "BROKEN at entry 1: seal" in wrong_key.stdout

    lines[3]["rationale"] = "Edited after export."
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    broken = subprocess.run([sys.executable, str(SCRIPT), str(edited)], capture_output=True, text=True)
    assert broken.returncode == 1
    assert "BROKEN at entry 4: hash does not match" in broken.stdout


# --- Concurrency: decisions on one book never fork the chain -----------------


def run_in_threads(count: int, work) -> list[BaseException]:
    """Start ``count`` threads together on ``work(i)``; each closes its own connection."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            work(i)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return errors


def test_concurrent_appends_on_one_book_never_fork_the_chain(transactional_db):
    author = UserFactory(username="ada")
    book = BookFactory(owner=author)
    count = 8

    def work(i: int) -> None:
        decision_log_append(
            book=book,
            decision="park",
            subject_type="node",
            subject_id=f"node-{i}",
            rationale=f"Thread {i} parks its node.",
            ratified_by_user=author,
        )

    errors = run_in_threads(count, work)
    assert errors == []
    entries = list(DecisionLogEntry.objects.filter(book=book).order_by("sequence"))
    assert [e.sequence for e in entries] == list(range(1, count + 1))
    assert len({e.prev_hash for e in entries}) == count
    assert {e.subject_id for e in entries} == {f"node-{i}" for i in range(count)}
    assert decision_log_verify(book).ok


def test_concurrent_decisions_on_distinct_approvals_of_one_book_never_fork(transactional_db):
    from approvals.services import approval_decide
    from discovery.access import book_access
    from discovery.models import StoryCharter
    from novelgraph.core.auth import principal_for_user

    from .approval_subjects import propose_charter

    author = UserFactory(username="ada")
    book = BookFactory(owner=author)
    count = 6
    charters = [propose_charter(book, thrust=f"Thrust number {i}.") for i in range(count)]
    # Rejections only: charter versions are ordered (approving one supersedes the older ones, and an older
    # one is never approved after a newer one), so concurrent approvals of several versions would conflict
    # by design. What this test pins is the chain: six concurrent decisions, one unforked log.
    verdicts = ["reject"] * count

    me = book_access(principal_for_user(author), book)

    def work(i: int) -> None:
        approval_decide(
            access=me,
            approval_id=charters[i].approval_id,
            verdict=verdicts[i],
            rationale=f"Decision {i}, taken at the same moment as the others.",
        )

    errors = run_in_threads(count, work)
    assert errors == []
    entries = list(DecisionLogEntry.objects.filter(book=book).order_by("sequence"))
    assert [e.sequence for e in entries] == list(range(1, count + 1))
    assert sorted(str(e.approval_id) for e in entries) == sorted(str(c.approval_id) for c in charters)
    assert decision_log_verify(book).ok
    statuses = list(StoryCharter.objects.filter(book=book).values_list("status", flat=True))
    assert statuses.count("rejected") == count


def test_a_detail_with_non_json_values_is_stored_as_hashed_and_verifies(book, author):
    import datetime

    card = uuid.uuid4()
    entry = decision_log_append(
        book=book,
        decision="extend",
        subject_type="loop-option-card",
        subject_id=card,
        rationale="Two more rounds.",
        ratified_by_user=author,
        detail={"card": card, "granted": ("rounds", 2), "until": datetime.date(2030, 1, 1), "cost": 250.0},
    )
    stored = DecisionLogEntry.objects.get(pk=entry.pk)
    assert stored.detail == {"card": str(card), "granted": ["rounds", 2], "until": "2030-01-01", "cost": 250.0}
    assert decision_log_verify(book).ok
