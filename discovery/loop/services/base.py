"""Shared pieces of the loop's services: ensuring the loop, locking its meta row,
who may write what, and the recomputation of saturation and status.

Rules: the controller (Sol, or the author) writes loop state; lenses (Terra, Luna)
write proposed slots, questions and reviews; only the author decides (through
``approvals.services.approval_decide``).
"""

from __future__ import annotations

from django.db import transaction

from discovery.access import BookAccess, Cap, refusal
from discovery.models import Book
from novelgraph.core.db import lock_row
from novelgraph.core.errors import Conflict

from ..models import (
    CardStatus,
    LoopMeta,
    LoopStatus,
    OptionCard,
    PlanNode,
    TraceNode,
)
from ..selectors import pending_card, saturation_check
from .cards import supersede_lapsed

CONTROLLER_CAPS = (Cap.DISCOVERY_WRITE, Cap.LOOP_WRITE)
LENS_CAPS = (Cap.DISCOVERY_WRITE, Cap.LOOP_WRITE, Cap.SCRATCHPAD_WRITE, Cap.CHARTER_PROPOSE)
CONTROLLER_ROLES = frozenset({"sol", "author"})
PAUSED = frozenset({LoopStatus.PAUSED_AT_BOUND, LoopStatus.STALLED_AT_CAP})


ROOT_LABEL = "The premise"


def seed_root(book: Book, root: str) -> None:
    """The traceability graph's root (the premise), drawn when the loop starts: the thrust, the charter and the
    brief's chapters are linked from it. Unsigned (the loop made it): the first lens that draws the root node
    takes it as its own (``trace_node_add``)."""
    if not TraceNode.objects.filter(book=book, node_id=root).exists():
        TraceNode.objects.create(book=book, node_id=root, kind="premise", label=ROOT_LABEL, produced_by="")


def loop_ensure(*, book: Book) -> LoopMeta:
    """Create the book's loop at G0 with the root plan node (draft, hypothesis), the traceability root
    (the premise) and empty queues.

    Idempotent: an existing loop is returned unchanged.
    """
    meta = LoopMeta.objects.filter(book=book).first()
    if meta is not None:
        return meta
    with transaction.atomic():
        meta, created = LoopMeta.objects.get_or_create(book=book)
        if created or not PlanNode.objects.filter(book=book, is_root=True).exists():
            PlanNode.objects.create(
                book=book,
                is_root=True,
                depth=0,
                intent=(book.premise or book.title)[:5000],
                altitude="book",
            )
        if created:
            seed_root(book, meta.trace_root)
    return meta


def loop_on_discovery_started(*, book: Book, **_signal) -> None:
    """When a book's discovery starts: refuse a book whose discovery was handed off at G3 (starting again never
    opens a new session silently), else ensure its loop."""
    if LoopMeta.objects.filter(book=book, status=LoopStatus.HANDED_OFF).exists():
        raise Conflict(
            "this book's discovery was handed off to drafting at G3; it cannot be started again",
            code="handed_off",
        )
    loop_ensure(book=book)


NOT_STARTED = "discovery has not started for this book: the loop begins when its discovery starts"


def not_started() -> Conflict:
    return Conflict(NOT_STARTED, code="discovery_not_started")


def lock_meta(book: Book) -> LoopMeta:
    """The book's meta row, locked for the rest of the transaction.

    Takes the book row first (one lock order, ``novelgraph.core.db.lock_row``), then the meta row alone.
    The loop exists from the moment the book's discovery starts (``discovery_start``; older books by
    a data migration). A write to the loop of a book whose discovery has not started is a 409: no
    write, and no read, creates a loop on the side.
    """
    lock_row(Book, book.pk)  # the book first: one lock order (novelgraph.core.db.lock_row)
    meta = (
        LoopMeta.objects.select_for_update(of=("self",), no_key=True).select_related("book").filter(book=book).first()
    )
    if meta is None:
        raise not_started()
    return meta


def root_of(book: Book) -> PlanNode:
    return PlanNode.objects.get(book=book, is_root=True)


def writer_role(access: BookAccess) -> str:
    if access.role not in {"author", "sol", "terra", "luna"}:
        raise refusal(access.role, Cap.LOOP_WRITE)
    return access.role


def controller_book(access: BookAccess) -> tuple[Book, str]:
    """The book, for the controller (Sol) or the author; a lens is refused naming the capability."""
    access.require(Cap.DISCOVERY_READ)
    if access.role not in CONTROLLER_ROLES:
        raise refusal(access.role, Cap.DISCOVERY_WRITE, "only the controller writes the loop's state")
    access.require(*CONTROLLER_CAPS)
    return access.book, access.role


def lens_book(access: BookAccess) -> tuple[Book, str]:
    """The book, for anyone who may write proposed slots (Sol, Terra, Luna, the author)."""
    access.require(Cap.DISCOVERY_READ)
    access.require(*LENS_CAPS)
    return access.book, writer_role(access)


def reader_book(access: BookAccess) -> Book:
    """The book, for a reader of its loop. Reads never write: nothing is ensured here."""
    access.require(Cap.DISCOVERY_READ)
    return access.book


def started_book(access: BookAccess) -> Book:
    """The book, for a reader of its loop, or a 409 when its discovery (so its loop) has not started."""
    book = reader_book(access)
    if not LoopMeta.objects.filter(book=book).exists():
        raise not_started()
    return book


def refuse_when_paused(meta: LoopMeta) -> None:
    if meta.status in PAUSED:
        raise Conflict(
            f"the loop is {meta.status} at the {meta.bound} bound; it waits for the author's verdict",
            code="paused",
            status=meta.status,
            bound=meta.bound,
        )
    if meta.status == LoopStatus.HANDED_OFF:
        raise Conflict("the loop has handed off to drafting", code="handed_off")


# --- Lint, saturation and status -------------------------------------------------


def refresh(meta: LoopMeta) -> LoopMeta:
    """Recompute saturation and settle the status from the pending cards. Saves the meta row."""
    supersede_lapsed(meta.book, meta)
    meta.saturation = saturation_check(meta.book)["holds"]
    pending = set(OptionCard.objects.filter(book=meta.book, status=CardStatus.PENDING).values_list("kind", flat=True))
    if meta.status == LoopStatus.HANDED_OFF:
        pass
    elif "bound" in pending:
        if meta.status not in PAUSED:
            meta.status = LoopStatus.PAUSED_AT_BOUND
    elif pending:
        meta.status = LoopStatus.AWAITING_HUMAN
        meta.bound = ""
    else:
        meta.bound = ""
        meta.status = LoopStatus.CONVERGED if meta.saturation else LoopStatus.WORKING
    meta.save()
    return meta


def card_renew_after_lapse(*, book) -> OptionCard | None:
    """After an approval lapsed at the author's verdict: supersede its card and raise the fresh one (with the
    impact as it is now) in one transaction; returns the card now waiting for the author, if any."""
    with transaction.atomic():
        meta = lock_meta(book)
        refresh(meta)
        return pending_card(book)
