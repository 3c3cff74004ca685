"""Every decision goes through here: one service decides, and logs, in one transaction.

Subjects (charters, claims, research items, gate option cards) plug in a
:class:`SubjectHandler` from their own app: it says which verdicts the subject
accepts, how to fingerprint it (so a changed proposal lapses) and what a verdict
does to it. ``approval_decide`` enforces the rules common to all of them: only the
book's author decides, a rationale is required, a decided or lapsed approval is a
409, and the decision-log row is appended inside the same transaction.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from discovery.access import BookAccess
from discovery.models import Book
from novelgraph.core.db import lock_row
from novelgraph.core.errors import Conflict, Invalid, NotFound
from novelgraph.core.pagination import rest_link
from novelgraph.core.schemas import replace_invalid_text
from novelgraph.core.signals import book_event

from .anchor import anchor_after_commit
from .canon_record import APPROVING, canon_record
from .chain import GENESIS_HASH, chain_fields, current_key_id, entry_hash, entry_text, seal_of
from .models import Approval, ApprovalKind, DecisionList, DecisionListItem, DecisionLogEntry, Reversibility, Verdict
from .signals import verdict_recorded
from .subjects import HANDLERS, Decision, handler_for

# Verdicts that need a text saying what they impose, steer or grant.
VERDICT_NEEDS_CONSTRAINT = {
    Verdict.APPROVE_WITH_CONSTRAINT: "the constraint",
    Verdict.REDIRECT: "the steer",
    Verdict.EXTEND: "what is granted",
}


def decision_list_link(approval: Approval, route: str) -> str:
    """Where the rest of a list a verdict's log entry names capped is: the approval's paged route, second page."""
    return rest_link(f"approvals/{approval.pk}/{route}")


def capped_in(into: dict, key: str, items: list, approval: Approval, route: str) -> None:
    """``into[key]``: the first page (``VIEW_PAGE``) of ``items``, with ``<key>_count`` (all of them) and
    ``<key>_rest`` (the approval's paged route with the rest; None when one page holds them all). A log entry
    is hashed and never rewritten, so what it names is capped when it is written."""
    page = settings.NINJA_PAGINATION_PER_PAGE  # VIEW_PAGE
    rest = decision_list_link(approval, route) if len(items) > page else None
    into.update({key: items[:page], f"{key}_count": len(items), f"{key}_rest": rest})


def record_list(decision: Decision, name: DecisionList, items: list, *, into: dict | None = None) -> None:
    """Record a list the verdict names, whole and in order (``DecisionListItem``, in the verdict's transaction),
    and name it capped in ``into`` (default: the log entry's detail) under the list's name, with its count and
    ``GET /approvals/{id}/lists/{name}`` for the rest: what it names changes after the verdict, so the rest is
    read from what the verdict recorded, never recomputed."""
    name = DecisionList(name)
    DecisionListItem.objects.bulk_create(
        DecisionListItem(approval=decision.approval, list=name, position=n, value=item) for n, item in enumerate(items)
    )
    capped_in(decision.detail if into is None else into, name.value, items, decision.approval, f"lists/{name.value}")


def require_rationale(rationale: str | None) -> str:
    """Every decision carries the author's reasons, whoever calls (an API route, a page, the demo, a command): the
    rationale, stripped, or a 422 naming it. The input schemas leave a blank rationale to this rule, so that a
    caller who may not decide hears that first (403)."""
    rationale = (rationale or "").strip()
    if not rationale:
        raise Invalid("a rationale is required: say in a sentence why", field="rationale")
    return rationale


# --- The decision log --------------------------------------------------------


def decision_log_append(
    *,
    book: Book,
    decision: str,
    subject_type: str,
    subject_id: Any,
    rationale: str,
    ratified_by_user=None,
    controller_role: str | None = None,
    gate: str | None = None,
    reversibility_class: str = Reversibility.REVERSIBLE,
    detail: dict | None = None,
    approval: Approval | None = None,
) -> DecisionLogEntry:
    """Append one entry to the book's chain. Call it inside the deciding transaction.

    Exactly one of ``ratified_by_user`` (a person) and ``controller_role`` (an
    automatic gate) names who ratified it. The chain head is locked first, so two
    concurrent decisions on one book queue instead of forking the chain. The decision and the
    reversibility class come typed from the input schemas (or are the caller's own constants);
    the table's check constraints refuse any other value.
    """
    if (ratified_by_user is None) == (controller_role is None):
        raise ValueError("name either the ratifying user or the controller role")
    rationale = require_rationale(rationale)
    # What a decision quotes of a subject stored before the input rule (a lone surrogate, issue 30) is written
    # with U+FFFD in its place: the entry's text must be UTF-8, and the author must be able to decide.
    rationale, detail, subject_id = replace_invalid_text([rationale, detail, str(subject_id)])
    with transaction.atomic():
        # Lock the book row: the per-book chain head, so concurrent decisions queue instead of forking.
        lock_row(Book, book.pk)
        last = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").values_list("sequence", "hash").first()
        sequence, prev_hash = (last[0] + 1, last[1]) if last else (1, GENESIS_HASH)
        ratified_by = (
            f"controller:{controller_role}" if controller_role else f"author:{ratified_by_user.get_username()}"
        )
        ts = timezone.now()
        fields = chain_fields(
            book_id=book.pk,
            sequence=sequence,
            ts=ts,
            gate=gate,
            decision=decision,
            subject_type=subject_type,
            subject_id=subject_id,
            ratified_by=ratified_by,
            reversibility_class=reversibility_class,
            rationale=rationale,
            # What is hashed is exactly what the database gives back: plain JSON.
            detail=json.loads(json.dumps(detail or {}, default=str)),
            prev_hash=prev_hash,
        )
        text = entry_text(fields)
        digest = entry_hash(fields)
        # What the entry says is stored once, as the text its hash covers; the database generates the
        # columns that show it (ts, decision, rationale...) and returns them with the insert.
        entry = DecisionLogEntry.objects.create(
            book=book,
            sequence=sequence,
            entry=text,
            ratified_by_user=ratified_by_user,
            approval=approval,
            prev_hash=prev_hash,
            hash=digest,
            seal=seal_of(digest),
            seal_key_id=current_key_id(),
        )
        # The tip, anchored outside the database once this transaction commits (approvals/anchor.py).
        anchor_after_commit(book.pk, sequence, digest)
        return entry


# --- Approvals ------------------------------------------------------------


def approval_request(
    *,
    book: Book,
    kind: str,
    subject_type: str,
    subject_id: Any,
    summary: str,
    requested_by_role: str,
    requested_by_user=None,
    note: str = "",
    gate: str | None = None,
    reversibility_class: str = Reversibility.REVERSIBLE,
) -> Approval:
    """Open a pending approval on a subject. The caller checks who may request it; the reversibility class
    comes typed from its input schema (``GateIn``, ``SelectIn``), and the table refuses any other."""
    handler = HANDLERS.get(kind)
    if handler is None:
        raise Invalid(f"unknown approval kind {kind!r}", field="kind")
    approval = Approval(
        book=book,
        kind=kind,
        subject_type=subject_type,
        subject_id=str(subject_id),
        summary=replace_invalid_text(summary)[:500],  # text stored before the input rule (issue 30) stays readable
        note=replace_invalid_text(note),
        gate=gate,
        requested_by_role=requested_by_role,
        requested_by_user=requested_by_user,
        reversibility_class=reversibility_class,
    )
    approval.subject_digest = handler.digest(approval)
    approval.save()
    _announce(book, "decision-waiting", approval)
    return approval


def _announce(book: Book, kind: str, approval: Approval) -> None:
    """``book_event`` once the approval's transaction commits (the webhooks and notifications listen)."""
    payload = {
        "approval_id": str(approval.pk),
        "kind": approval.kind,
        "summary": approval.summary,
        "status": approval.status,
        "verdict": approval.verdict or "",
    }
    transaction.on_commit(lambda: book_event.send(sender=Approval, book=book, kind=kind, payload=payload))


def approval_decide(
    *,
    access: BookAccess,
    approval_id: Any,
    verdict: str,
    rationale: str,
    constraint: str = "",
    expected_kind: str | None = None,
    thrust_id: Any = None,
    not_chosen: dict | None = None,
) -> DecisionLogEntry:
    """The author's verdict on a pending approval of ``access.book``; returns the decision-log entry.

    Rules: only the book's author, as a person, decides (403 otherwise); the verdict must be
    one the subject accepts (422); a rationale is required (422); approve-with-constraint,
    redirect and extend need their text (422); a decided approval is a 409; so is one whose
    subject changed since it was requested, which is marked superseded and stays in history.
    A thrust choice (``thrust_id``, ``not_chosen``) is taken by a gate card only (422 otherwise); the
    gate handler checks it.
    """
    access.require_author()
    constraint = (constraint or "").strip()
    lapsed = False
    with transaction.atomic():
        # The book's decisions queue here, before any handler writes: two verdicts on one book (say two
        # charters approved at once, each creating the opening chapter) never interleave.
        lock_row(Book, access.book.pk)
        approval = (
            Approval.objects.select_for_update().filter(pk=approval_id, book=access.book).first()
            if _is_id(approval_id)
            else None
        )
        if approval is None or (expected_kind and approval.kind != expected_kind):
            raise NotFound("approval not found")
        approval.book = access.book
        handler = handler_for(approval)
        # The verdict is one of Verdict's (typed by VerdictIn, LoopVerdictIn); which of them this subject takes
        # is the subject's rule.
        if verdict not in handler.verdicts:
            raise Invalid(
                f"a {approval.kind} approval takes {', '.join(sorted(handler.verdicts))}, not {verdict}",
                field="verdict",
            )
        rationale = require_rationale(rationale)
        if verdict in VERDICT_NEEDS_CONSTRAINT and not constraint:
            raise Invalid(
                f"{verdict} needs {VERDICT_NEEDS_CONSTRAINT[verdict]}",
                field="constraint",
            )
        if (thrust_id is not None or not_chosen) and approval.kind != ApprovalKind.GATE:
            raise Invalid("only the G1.5 gate card takes a thrust choice", field="thrust_id")
        if approval.status != Approval.Status.PENDING:
            raise Conflict(f"this approval is already {approval.status}", code="not_pending")
        if handler.digest(approval) != approval.subject_digest:
            approval.status = Approval.Status.SUPERSEDED
            approval.save(update_fields=["status", "updated_at"])
            lapsed = True
        else:
            approval.status = Approval.Status.DECIDED
            approval.verdict = verdict
            approval.rationale = rationale
            approval.constraint = constraint
            approval.decided_by = access.user
            approval.decided_at = timezone.now()
            approval.save()
            decision = Decision(
                approval, verdict, rationale, constraint, access, thrust_id=thrust_id, not_chosen=dict(not_chosen or {})
            )
            handler.apply(decision)
            detail = dict(decision.detail)
            if constraint:
                detail["constraint"] = constraint
            if verdict == APPROVING:
                # What became canon (its content's digest; a claim's value), checked by verification.
                record = canon_record(approval.subject_type, approval.subject_id)
                if record is not None:
                    detail["canon"] = record
            entry = decision_log_append(
                book=access.book,
                decision=verdict,
                subject_type=approval.subject_type,
                subject_id=approval.subject_id,
                rationale=rationale,
                ratified_by_user=access.user,
                gate=approval.gate,
                reversibility_class=approval.reversibility_class,
                detail=detail,
                approval=approval,
            )
            _announce(access.book, "decision-made", approval)
    if lapsed:
        raise Conflict(
            "the proposal changed after approval was requested; this approval is superseded",
            code="superseded",
        )
    verdict_recorded.send(sender=Approval, book=access.book, user=access.user, approval=approval, entry=entry)
    return entry


def _is_id(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def subject_decide(
    *,
    access: BookAccess,
    kind: str,
    subject_type: str,
    subject_id: Any,
    subject_pending: bool,
    subject_label: str,
    summary: str,
    verdict: str,
    rationale: str,
    requested_by_role: str = "author",
    requested_by_user=None,
) -> Approval:
    """The author decides a subject (charter, claim, research item) directly; returns its approval.

    The same precedence as ``approval_decide``: who (only the author, 403), then the
    rationale (422), then the state (a subject that is no longer pending, 409). It decides
    the subject's pending approval when there is one; otherwise (a proposal made without
    one, or whose approval lapsed) it opens one and decides it in the same transaction, so
    every decision still has its approval and its log row.
    """
    access.require_author()
    require_rationale(rationale)
    if not subject_pending:
        raise Conflict(f"{subject_label} is no longer pending", code="not_pending")
    book = access.book
    approval = (
        Approval.objects.filter(book=book, kind=kind, subject_type=subject_type, subject_id=str(subject_id))
        .filter(status=Approval.Status.PENDING)
        .order_by("-created_at")
        .first()
    )
    if approval is not None:
        # Not inside a further transaction: a lapsed approval's "superseded" must be kept.
        approval_decide(
            access=access, approval_id=approval.pk, verdict=verdict, rationale=rationale, expected_kind=kind
        )
    else:
        with transaction.atomic():
            approval = approval_request(
                book=book,
                kind=kind,
                subject_type=subject_type,
                subject_id=subject_id,
                summary=summary,
                requested_by_role=requested_by_role,
                requested_by_user=requested_by_user or access.user,
            )
            approval_decide(
                access=access, approval_id=approval.pk, verdict=verdict, rationale=rationale, expected_kind=kind
            )
    approval.refresh_from_db()
    return approval
