"""Reads of approvals and the decision log, shared by the API, pages and commands."""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import BinaryField, Count, Q, QuerySet
from django.db.models.functions import Cast
from psycopg.types.string import ByteaBinaryLoader

from discovery.access import BookAccess, Cap, book_access, books_visible_to
from discovery.models import Book, StoryCharter
from discovery.selectors import withheld_claims
from novelgraph.core.auth import Principal
from novelgraph.core.errors import Forbidden, NotFound
from novelgraph.core.rows import per_vendor

from .anchor import anchor_line, anchor_seal, anchor_tip
from .canon_record import canon_picker, canon_verify
from .chain import Verification, seal_keys, verify_rows
from .models import Approval, DecisionList, DecisionListItem, DecisionLogEntry, Verdict
from .subjects import approval_is_current, handler_of
from .waiting import waiting_for

# What verification reads of each entry (approvals.chain.verify_rows), in sequence order: its predecessor's hash
# (a column generated from its text), its stored text (the only copy of what it says), its hash and its seal.
VERIFY_COLUMNS = ("prev_hash", "entry", "hash", "seal", "seal_key_id")


def decision_log_for(book: Book) -> QuerySet[DecisionLogEntry]:
    return DecisionLogEntry.objects.filter(book=book).order_by("sequence")


def _entry_rows(book: Book, batch: int = 2000) -> Iterator[tuple]:
    """The book's ``VERIFY_COLUMNS`` in sequence order, streamed from the database (constant memory), with each
    entry's text as bytes: verification hashes the text as it is, so it is never decoded and encoded again."""
    rows = DecisionLogEntry.objects.filter(book=book).order_by("sequence")
    if connection.vendor == "sqlite":
        rows = rows.annotate(entry_bytes=Cast("entry", output_field=BinaryField()))
        columns = ("entry_bytes" if c == "entry" else c for c in VERIFY_COLUMNS)
        sql, params = rows.values_list(*columns).query.sql_with_params()
        with connection.chunked_cursor() as cursor:
            cursor.execute(sql, params)
            while chunk := cursor.fetchmany(batch):
                yield from chunk
        return
    sql, params = rows.values_list(*VERIFY_COLUMNS).query.sql_with_params()
    # PostgreSQL streams the rows with COPY in binary format (a fifth faster than a server-side cursor, and as
    # constant in memory), where a text value is its UTF-8 bytes: ``entry`` (the only text column; the others
    # are varchar) is loaded as those bytes, the way bytea is. COPY takes no parameters: psycopg quotes them.
    with connection.cursor() as wrapper:
        cursor = wrapper.cursor
        cursor.adapters.register_loader("text", ByteaBinaryLoader)
        with cursor.copy(f"COPY ({cursor.mogrify(sql, params)}) TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(_COPY_TYPES)
            yield from copy.rows()


# The database types of VERIFY_COLUMNS, for reading them from binary COPY.
_COPY_TYPES = ["varchar", "text", "varchar", "varchar", "varchar"]


@per_vendor
def _generated_shapes(connection) -> list[tuple[str, re.Pattern | str]]:
    """Each column that shows a log entry, with what the catalog says of it while it is generated from the text
    as the migrations made it: on SQLite its declaration in the table's DDL, on PostgreSQL its text key."""
    shapes = []
    for field in DecisionLogEntry._meta.concrete_fields:
        if field.generated:
            if connection.vendor == "sqlite":
                sql, _params = field.generated_sql(connection)
                declared = rf'"{field.column}" [^,"]* GENERATED ALWAYS AS \({re.escape(sql)}\) STORED'
                shapes.append((field.column, re.compile(declared, re.IGNORECASE)))
            else:
                shapes.append((field.column, f"'{field.expression.key}'::text"))
    return shapes


def _shown_columns_problem() -> str | None:
    """Whether every column that shows a log entry is still generated from its hashed text, as the migrations
    made it: None, or the first column that is not. One catalog read. An edited row cannot change a generated
    column; only an altered table can, and then pages (and verification's own reading of an entry's place in
    the chain) would no longer show what the hashed text says."""
    table = DecisionLogEntry._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [table])
            ddl = cursor.fetchone()[0]
            cursor.execute(f'PRAGMA table_xinfo("{table}")')
            hidden = {name: flag for _cid, name, _kind, _nn, _default, _pk, flag in cursor.fetchall()}
            for column, declared in _generated_shapes(connection):
                if hidden.get(column) != 3 or declared.search(ddl) is None:  # 3: a stored generated column
                    return column
            return None
        cursor.execute(
            "SELECT a.attname, a.attgenerated, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a"
            " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
            " WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped",
            [table],
        )
        declared = {name: (generated, expression or "") for name, generated, expression in cursor.fetchall()}
    for column, key in _generated_shapes(connection):
        generated, expression = declared.get(column, ("", ""))
        if generated != "s" or "(entry)::jsonb" not in expression or key not in expression:
            return column
    return None


def log_migrations_pending() -> list[str]:
    """The decision log's migrations (this app's) that the database has not applied yet."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan if migration.app_label == "approvals"]


def decision_log_verify(book: Book, *, use_anchor: bool = True) -> Verification:
    """Recompute the book's chain and seals; names the first entry that fails.

    First, the columns that show an entry (its place in the chain among them) must still be generated from its
    hashed text. A chain alone cannot show that its newest entries were cut off, so the check also asks
    that the tip anchored outside the database (approvals/anchor.py) is still in the chain
    with its hash, and that every decided approval of the book still has its log entry. Then
    the log's canon history is replayed (approvals/canon_record.py): every charter, claim and research item
    it decided must still exist, in the state its last decision left it, with the content it approved; every
    one approved now must have the entry that approved it. The chain streams in batches: constant memory.
    """
    altered = _shown_columns_problem()
    if altered is not None:  # first: the chain's order is read from generated columns
        pending = log_migrations_pending()
        if pending:  # an old store before `migrate` (its checks run first): not an altered table
            return Verification(
                False,
                0,
                None,
                f"the database is not migrated yet ({', '.join(pending)} not applied): run manage.py migrate, "
                "and the log is verified as the migrations leave it",
            )
        return Verification(
            False,
            0,
            None,
            f"the log's column {altered} is no longer generated from the entries' hashed text: the table was "
            "altered outside the migrations, so what pages show of an entry may not be what it says",
        )
    anchor = anchor_tip(book.pk) if use_anchor else None
    # The chain's one pass also collects the entries that may decide canon, for the canon replay below.
    canon_entries: list = []
    result = verify_rows(
        book.pk,
        _entry_rows(book),
        checkpoint=anchor.sequence if anchor else None,
        pick=(canon_picker(book.pk), canon_entries),
    )
    if not result.ok:
        return result
    anchored = anchor.sequence if anchor else None
    result = replace(result, anchored_sequence=anchored)
    if anchor is not None:
        if not anchor.valid:
            return _failed(result, result.entries, "the tip anchor outside the database is not sealed by this server")
        if anchor.sequence > result.entries:
            return _failed(
                result,
                result.entries + 1,
                f"the log ends at entry {result.entries} but its anchor records entry {anchor.sequence}: "
                "entries were cut from the tip",
            )
        if result.checkpoint_hash != anchor.hash:
            return _failed(result, anchor.sequence, f"entry {anchor.sequence} differs from the anchored tip")
    orphan = (
        Approval.objects.filter(book=book, status=Approval.Status.DECIDED)
        .exclude(pk__in=DecisionLogEntry.objects.filter(book=book, approval__isnull=False).values("approval_id"))
        .order_by("decided_at")
        .values_list("pk", flat=True)
        .first()
    )
    if orphan is not None:
        return _failed(result, result.entries + 1, f"approval {orphan} was decided but its log entry is missing")
    checked, problem = canon_verify(book, canon_entries)
    if problem is not None:
        return replace(result, ok=False, first_bad_sequence=None, reason=problem, canon_checked=checked)
    return replace(result, canon_checked=checked)


def decision_log_reaches(book: Book, tip: dict, result: Verification) -> Verification:
    """Whether the verified log still holds the tip an earlier export sealed (``{"sequence", "hash", "key_id",
    "seal"}``): a log cut below a tip the author kept fails, even when the anchor file was cut with it."""
    sequence = int(tip["sequence"])
    key = seal_keys().get(str(tip.get("key_id")))
    if key is None or not hmac.compare_digest(
        anchor_seal(book.pk, sequence, str(tip.get("hash")), key), str(tip.get("seal"))
    ):
        return _failed(result, sequence, "the export's tip seal was not written by this server")
    stored = DecisionLogEntry.objects.filter(book=book, sequence=sequence).values_list("hash", flat=True).first()
    if stored is None:
        return _failed(result, result.entries + 1, f"the log ends at entry {result.entries} but the export reaches "
                       f"entry {sequence}: entries were cut")  # fmt: skip
    if stored != tip.get("hash"):
        return _failed(result, sequence, f"entry {sequence} differs from the exported tip")
    return result


def _failed(result: Verification, sequence: int | None, reason: str) -> Verification:
    return replace(result, ok=False, first_bad_sequence=sequence, reason=reason)


def decision_log_newest_first(book: Book) -> QuerySet[DecisionLogEntry]:
    """The book's log for reading, newest first, with the approval each entry decided."""
    return (
        DecisionLogEntry.objects.filter(book=book).select_related("approval", "ratified_by_user").order_by("-sequence")
    )


def decision_log_export_lines(book: Book, *, withheld: dict[str, str] | None = None) -> Iterator[str]:
    """The book's log as JSON Lines: every field of the hash recipe, then hash, seal and seal_key_id;
    the last line is ``{"tip": {book, sequence, hash, key_id, seal}}``, the tip sealed as the anchor seals it.

    Each line re-verifies on its own with ``approvals.chain``'s recipe (see the README
    and ``scripts/verify_decision_log_export.py``). An entry about a subject in ``withheld``
    (what the reader's role may not read) carries ``"withheld"`` instead of its rationale and detail.
    """
    withheld = withheld or {}
    rows = (
        DecisionLogEntry.objects.filter(book=book)
        .order_by("sequence")
        .values_list("sequence", "entry", "hash", "seal", "seal_key_id")
        .iterator(chunk_size=2000)
    )
    tip = None
    for sequence, entry, digest, seal, key_id in rows:
        line = dict(json.loads(entry), hash=digest, seal=seal, seal_key_id=key_id)
        hidden = withheld_line(withheld, line["subject_type"], line["subject_id"])
        if hidden is not None:
            line.update(rationale="", detail={}, withheld=hidden)
        tip = (sequence, digest)
        yield json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n"
    if tip is not None:
        # The tip seal, as the anchor file writes it: whoever keeps this export can later show that a
        # log which no longer reaches this entry was cut (`verify_decision_log --against FILE`).
        yield json.dumps({"tip": anchor_line(book.pk, *tip)}, sort_keys=True) + "\n"


# --- What a role may not read ------------------------------------------------------


def withheld_subjects(principal: Principal, caps: frozenset[Cap], books) -> dict[str, str]:
    """Claims (by id) whose approvals and log entries this caller may not read, each with the line
    shown instead: ``"withheld: series canon (luna lacks series:read)"``."""
    return withheld_claims(books, caps, principal.key_role if principal.is_agent else "caller")


def withheld_line(withheld: dict[str, str], subject_type: str, subject_id: str) -> str | None:
    """The line shown instead of a subject the reader may not read, or None when it may read it."""
    return withheld.get(subject_id) if subject_type == "claim" else None


# --- Approvals --------------------------------------------------------------


def approvals_visible(
    principal: Principal,
    *,
    access: BookAccess | None = None,
    status: str | None = None,
) -> QuerySet[Approval]:
    """Approvals of the books this principal may read (one book, or all of them), newest first."""
    approvals = Approval.objects.select_related("book", "requested_by_user", "decided_by").order_by(
        "-created_at", "-id"
    )
    if access is not None:
        approvals = approvals.filter(book=access.book)
    else:
        approvals = approvals.filter(book__in=books_visible_to(principal).values("pk"))
    if status:
        approvals = approvals.filter(status=status)
    return approvals


def approval_get(principal: Principal, approval_id: Any) -> tuple[BookAccess, Approval]:
    """One approval and the caller's access to its book (404 when the book is not the caller's)."""
    try:
        approval = Approval.objects.select_related(
            "book__series", "book__owner", "requested_by_user", "decided_by"
        ).get(pk=approval_id)
    except (Approval.DoesNotExist, ValueError, TypeError, ValidationError):
        raise NotFound("approval not found") from None
    access = book_access(principal, approval.book, Cap.BOOK_READ, missing="approval")
    return access, approval


def subject_readable(access: BookAccess, approval: Approval) -> None:
    """Refuse (403 ``withheld``) a caller whose role may not read the approval's subject: what its log entry
    records is withheld from her, and so is the rest of it."""
    line = withheld_line(
        withheld_subjects(access.principal, access.caps, [access.book]), approval.subject_type, str(approval.subject_id)
    )
    if line:
        raise Forbidden(line, code="withheld")


def decision_list(access: BookAccess, approval: Approval, name: DecisionList) -> QuerySet:
    """Every item of a list this approval's verdict recorded (``contradictions``, ``subtree_stale``,
    ``set_aside``), in its log entry's order: the entry names the first page and links here for the rest.
    Recorded with the verdict, so true after the fact; an approval that recorded none lists none."""
    subject_readable(access, approval)
    return (
        DecisionListItem.objects.filter(approval=approval, list=name)
        .order_by("position")
        .values_list("value", flat=True)
    )


def superseded_versions(access: BookAccess, approval: Approval) -> QuerySet:
    """Every charter version this approval's verdict superseded, oldest first (its log entry names the first
    page: ``detail.superseded_versions``). Each superseded version records the approval that superseded it."""
    subject_readable(access, approval)
    return (
        StoryCharter.objects.filter(book_id=approval.book_id, superseded_by=approval)
        .order_by("version")
        .values_list("version", flat=True)
    )


@dataclass(frozen=True)
class ApprovalView:
    """Everything a reviewer sees about one approval (API detail and decision page)."""

    approval: Approval
    verdicts: list[str]
    current: bool
    proposal: dict
    source_refs: list
    impact: Any
    log_entry: DecisionLogEntry | None


def approval_view(access: BookAccess, approval: Approval) -> ApprovalView:
    """The proposal as its handler describes it, with source refs resolved (by its handler) and the impact preview.

    A subject the reader's role may not read (a series claim, for Luna) is withheld: the
    proposal says so and shows nothing of it.
    """
    handler = handler_of(approval.kind)
    proposal: dict = {}
    withheld = withheld_subjects(access.principal, access.caps, [access.book])
    line = withheld_line(withheld, approval.subject_type, approval.subject_id)
    if line is not None:
        proposal = {"withheld": True, "title": line}
    elif handler is not None and handler.describe is not None:
        proposal = dict(handler.describe(approval) or {})
    refs = proposal.get("source_refs") or []
    resolved = handler.sources(access, refs) if refs and handler.sources is not None else []
    log_entry = (
        DecisionLogEntry.objects.filter(approval=approval).order_by("sequence").first()
        if approval.status == Approval.Status.DECIDED
        else None
    )
    return ApprovalView(
        approval=approval,
        verdicts=sorted(handler.verdicts, key=Verdict.values.index) if handler else [],
        current=approval_is_current(approval) if handler else False,
        proposal=proposal,
        source_refs=list(resolved),
        impact=proposal.get("impact"),
        log_entry=log_entry,
    )


@dataclass(frozen=True)
class Inbox:
    pending: QuerySet[Approval] | list[Approval]  # newest first; the page pages it
    superseded: list[Approval]
    counts: list[dict]  # per book: {"book": Book, "pending": int}
    pending_total: int
    superseded_more: bool = False  # more lapsed approvals follow the ``superseded`` page


def inbox_for(
    principal: Principal,
    *,
    limit: int | None = None,
    superseded_limit: int = 50,
    superseded_offset: int = 0,
    book_id: Any = None,
) -> Inbox:
    """Pending decisions across the principal's books (or one of them), newest first, with counts per book.

    A fixed number of queries whatever the number of approvals: the counts come from one
    aggregate, the lists from one query each. ``pending`` is a queryset to page, or the first
    ``limit`` approvals; ``superseded`` a page of the lapsed ones (``superseded_limit`` from
    ``superseded_offset``, newest first) and whether more follow.
    """
    books = books_visible_to(principal)
    if book_id is not None:
        books = books.filter(pk=book_id)
    counts = list(
        Book.objects.filter(pk__in=books.values("pk"))
        .annotate(pending=Count("approvals", filter=Q(approvals__status=Approval.Status.PENDING)))
        .filter(pending__gt=0)
        .order_by("-pending", "title")
    )
    base = Approval.objects.filter(book__in=books.values("pk")).select_related("book", "requested_by_user")
    pending = base.filter(status=Approval.Status.PENDING).order_by("-created_at", "-id")
    lapsed = base.filter(status=Approval.Status.SUPERSEDED).order_by("-updated_at", "-id")
    superseded = list(lapsed[superseded_offset : superseded_offset + superseded_limit + 1]) if superseded_limit else []
    return Inbox(
        pending=list(pending[:limit]) if limit is not None else pending,
        superseded=superseded[:superseded_limit],
        counts=[{"book": b, "pending": b.pending} for b in counts],
        pending_total=sum(b.pending for b in counts),
        superseded_more=len(superseded) > superseded_limit,
    )


def pending_count_for(user) -> int:
    """How many decisions wait for this person as an author (the nav badge)."""
    return Approval.objects.filter(book__owner=user, status=Approval.Status.PENDING).count()


def inbox_waiting(principal: Principal, *, book_id: Any = None) -> dict:
    """What else waits beside the decisions, in the one inbox: each registered section (observations to confirm,
    questions routed to the author) over the person's books, and whether she is the author of any of them (an
    editor's inbox says what waits for the author, not "for you")."""
    books = books_visible_to(principal)
    if book_id is not None:
        books = books.filter(pk=book_id)
    user = principal.user
    return {
        "sections": waiting_for(books, user),
        "author_of_any": Book.objects.filter(owner=user).exists(),
    }
