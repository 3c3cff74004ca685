"""Discovery sessions: start, turns with their observations, thrust candidates."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from novelgraph.core.db import lock_row
from novelgraph.core.errors import Conflict, Forbidden, Invalid
from novelgraph.core.schemas import MAX_LIST_ITEMS

from ..access import BookAccess, Cap, refusal
from ..models import (
    TURN_SPEAKERS,
    Book,
    DiscoverySession,
    Observation,
    ObservationStatus,
    Provenance,
    SessionQuestion,
    ThrustCandidate,
    Turn,
)
from ..refs import validate_source_refs
from ..schemas import QuestionSetIn, ThrustIn, TurnIn
from ..selectors import OPEN_SESSION_STATUSES
from ..signals import discovery_started, person_acted
from .knowledge import ensure_knowledge_bases


def discovery_start(*, access: BookAccess) -> tuple[DiscoverySession, bool]:
    """Start (or resume) the discovery of a book; returns ``(session, created)``.

    Needs discovery:write (the author, Sol). Ensures the knowledge bases, then returns the
    session that is active or charter-proposed, or creates an active one with the opening
    question. The book row is locked, so two concurrent starts make one session. After the G3
    hand-off (the loop handed off, every session closed) it is a 409 ``handed_off``.
    """
    access.require(Cap.DISCOVERY_WRITE)
    book = access.book
    with transaction.atomic():
        lock_row(Book, book.pk)
        ensure_knowledge_bases(book)
        session = (
            DiscoverySession.objects.filter(book=book, status__in=OPEN_SESSION_STATUSES).order_by("-created_at").first()
        )
        if session is not None:
            return session, False
        session = DiscoverySession.objects.create(book=book)
        # The discovery loop (seed 002) ensures the book's loop at G0 with its root node; a discovery handed off
        # at G3 is refused there, and this session rolls back with the refusal.
        discovery_started.send(sender=Book, book=book)
        return session, True


def refuse_author_stated_unless_author(access: BookAccess, provenance: str, *, field: str) -> None:
    """Provenance says who stated a thing: only the author, as herself, writes ``author-stated`` (422 for an
    agent key, an editor, an editor's personal key: nobody else's words are labelled the author's)."""
    if provenance == Provenance.AUTHOR_STATED and not access.is_author:
        other = "agent-inferred or agent-proposed" if access.is_agent else "another provenance"
        raise Invalid(
            f"{field}: {access.role} cannot label its own words author-stated; only the author states facts as "
            f"herself (use {other})",
            field=field,
        )


def locked_session(session: DiscoverySession) -> DiscoverySession:
    """The session re-read under its row lock (inside ``atomic``): the per-session counters (turn
    ordinals, scratchpad sequences) are computed under it, so concurrent writes never collide. The book
    first: one lock order (``novelgraph.core.db.lock_row``)."""
    lock_row(Book, session.book_id)
    return DiscoverySession.objects.select_for_update(no_key=True).get(pk=session.pk)


def writable(session: DiscoverySession) -> None:
    if session.status not in OPEN_SESSION_STATUSES:
        raise Conflict(
            f"this session is {session.status}: the discovery was handed off to drafting at G3"
            if session.status == DiscoverySession.Status.CLOSED
            else f"this session is {session.status}; the book's open session carries the conversation on",
            code="session_not_open",
        )


def turn_add(*, access: BookAccess, session: DiscoverySession, payload: TurnIn) -> Turn:
    """One turn of the conversation, with its observations, in one transaction.

    Authors and editors need turn:write, Sol discovery:write; the turn's ``role`` must be the
    caller's own role for the book (403 otherwise). Ordinals run 1, 2, 3... per session.
    Only the author states facts as herself: an observation of anyone else's turn is never ``author-stated``.
    Every observation enters as ``working``; only the author's act (``observation_resolve``) confirms,
    corrects or retires it, and that act leaves a revision.
    """
    access.require(Cap.TURN_WRITE, Cap.DISCOVERY_WRITE)
    if access.role not in dict(TURN_SPEAKERS):
        raise refusal(access.role, Cap.TURN_WRITE)
    if payload.role != access.role:
        raise Forbidden(
            f"this caller writes turns as {access.role}; a turn claiming role {payload.role!r} is refused",
            code="role_mismatch",
        )
    observations = [obs.dict() for obs in payload.observations]
    for i, obs in enumerate(observations):
        refuse_author_stated_unless_author(access, obs["provenance"], field=f"observations[{i}].provenance")
        obs["status"] = ObservationStatus.WORKING  # whatever the payload says: a turn confirms nothing
    with transaction.atomic():
        session = locked_session(session)
        writable(session)
        last = Turn.objects.filter(session=session).aggregate(m=Max("ordinal"))["m"] or 0
        # A person's turn answers the question Sol has put to the author (the session's newest one).
        answers = None
        if access.role != "sol":
            answers = SessionQuestion.objects.filter(session=session).order_by("-sequence").first()
        turn = Turn.objects.create(
            session=session,
            ordinal=last + 1,
            role=access.role,
            written_by=access.user,
            content=payload.content,
            answers=answers,
        )
        Observation.objects.bulk_create([Observation(session=session, turn=turn, **row) for row in observations])
    if access.role in ("author", "editor"):
        person_acted.send(sender=Turn, book=access.book, user=access.user, act="turn")
    return turn


# The thrusts the author chooses among at G1.5 (the loop's cards name the same set) and how many may be open.
OPEN_THRUST_STATUSES = (ThrustCandidate.Status.PROPOSED, ThrustCandidate.Status.SELECTED)
MAX_OPEN_THRUSTS = MAX_LIST_ITEMS


def thrust_propose(*, access: BookAccess, session: DiscoverySession, payload: ThrustIn) -> ThrustCandidate:
    """A story-thrust candidate, stored as proposed. Needs charter:propose (Terra) or discovery:write
    (Sol, the author). Moves an active session to charter-proposed; never moves an approved one back.
    At most ``MAX_OPEN_THRUSTS`` open candidates per book (409 ``too_many_open_thrusts``): a G1.5 card puts
    every open one before the author.
    """
    access.require(Cap.CHARTER_PROPOSE, Cap.DISCOVERY_WRITE)
    with transaction.atomic():
        # The bound is the book's: its row lock (which locked_session takes before the session's, as a verdict
        # takes it) queues every proposal to this book, from any of its sessions, so two at once never make 51.
        session = locked_session(session)
        if session.status == DiscoverySession.Status.CLOSED:
            raise Conflict("this session is closed", code="session_not_open")
        # The author chooses among every open thrust at G1.5, on one card: their number is bounded.
        open_ones = ThrustCandidate.objects.filter(session__book_id=session.book_id, status__in=OPEN_THRUST_STATUSES)
        if open_ones.count() >= MAX_OPEN_THRUSTS:
            raise Conflict(
                f"the book already holds {MAX_OPEN_THRUSTS} open thrust candidates: the author chooses among them "
                "at G1.5 before more are proposed",
                code="too_many_open_thrusts",
            )
        thrust = ThrustCandidate.objects.create(session=session, proposed_by=access.role, **payload.dict())
        if session.status == DiscoverySession.Status.ACTIVE:
            session.status = DiscoverySession.Status.CHARTER_PROPOSED
            session.save(update_fields=["status", "updated_at"])
    return thrust


# What can prompt Sol's next question: something said in the conversation or thought in the scratchpad.
PROMPTING_REFS = ("turn", "entry", "observation")


def question_set(*, access: BookAccess, session: DiscoverySession, payload: QuestionSetIn) -> SessionQuestion:
    """Sol (or the author) puts the next consequential question to the author, citing what prompted it.

    Needs discovery:write (the controller's capability: Sol, the author). The question becomes the
    session's current question; the earlier ones stay in its history. At least one typed citation
    that the role may read, at least one of them the turn, entry or observation that prompted it (422).
    Works until hand-off: approving a charter does not stop the conversation. A person's next
    turn answers it (``Turn.answers``).
    """
    access.require(Cap.DISCOVERY_WRITE)
    with transaction.atomic():
        session = locked_session(session)
        writable(session)
        refs = validate_source_refs(access, [r.dict() for r in payload.source_refs])
        if not any(ref["type"] in PROMPTING_REFS for ref in refs):
            raise Invalid(
                "a question cites the turn, scratchpad entry or observation that prompted it", field="source_refs"
            )
        last = SessionQuestion.objects.filter(session=session).aggregate(m=Max("sequence"))["m"] or 0
        asked = SessionQuestion.objects.create(
            session=session,
            sequence=last + 1,
            question=payload.question,
            source_refs=refs,
            asked_by=access.role,
        )
        session.current_question = payload.question
        session.save(update_fields=["current_question", "updated_at"])
    return asked


def question_close(*, access: BookAccess, session: DiscoverySession) -> bool:
    """Sol has nothing more to ask: the current question closes (the book page says so, and offers no answer
    to it). Its history stays; the next question Sol sets opens one again. True when it was open."""
    access.require(Cap.DISCOVERY_WRITE)
    with transaction.atomic():
        session = locked_session(session)
        writable(session)
        if not session.current_question:
            return False
        session.current_question = ""
        session.save(update_fields=["current_question", "updated_at"])
    return True
