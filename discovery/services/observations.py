"""Observations have a life: the author confirms, corrects or retires what a turn observed.

Every step is an append-only ``ObservationRevision``: the observation keeps the value as first
stated, a correction's new value is the current one, and every earlier value stays in history.
Only ``working`` observations are unresolved (dossiers list those)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from novelgraph.core.errors import Conflict, Invalid
from novelgraph.core.pagination import rest_link

from ..access import BookAccess, Cap
from ..models import Observation, ObservationAction, ObservationRevision, ObservationStatus, Provenance
from ..schemas import ObservationResolveIn, TurnIn
from ..selectors import OPEN_SESSION_STATUSES, VIEW_PAGE, bounded, observation_rows
from ..signals import person_acted
from .sessions import turn_add

NEXT_STATUS = {
    ObservationAction.CONFIRM: ObservationStatus.CONFIRMED,
    ObservationAction.CORRECT: ObservationStatus.CONFIRMED,
    ObservationAction.RETIRE: ObservationStatus.RETIRED,
}


def observation_current_value(observation: Observation) -> str:
    """The value as the author last stated it: the newest correction's, else the one first stated."""
    latest = (
        ObservationRevision.objects.filter(observation=observation, action=ObservationAction.CORRECT)
        .order_by("-sequence")
        .values_list("value", flat=True)
        .first()
    )
    return observation.value if latest is None else latest


def observation_resolve(*, access: BookAccess, observation: Observation, payload: ObservationResolveIn):
    """The author (a person; 403 for anyone else) confirms, corrects (a new ``value``, 422 when
    blank or unchanged) or retires (with her reason, ``rationale``: 422 when blank) an observation of her book.
    A retired observation is final (409).
    Appends one revision; the observation's status moves (confirmed, or retired)."""
    access.require_author()
    action = ObservationAction(payload.action)
    with transaction.atomic():
        observation = Observation.objects.select_for_update().get(pk=observation.pk)
        if observation.status == ObservationStatus.RETIRED:
            raise Conflict("this observation is retired; its history stays, it no longer changes", code="retired")
        current = observation_current_value(observation)
        value = current
        if action == ObservationAction.CORRECT:
            value = (payload.value or "").strip()
            if not value:
                raise Invalid("a correction states the new value", field="value")
            if value == current:
                raise Invalid("the correction repeats the current value", field="value")
        elif action == ObservationAction.RETIRE and not (payload.rationale or "").strip():
            raise Invalid("say why you retire it: the reason stays in its history", field="rationale")
        elif action == ObservationAction.CONFIRM and observation.status == ObservationStatus.CONFIRMED:
            raise Conflict("this observation is already confirmed", code="already_confirmed")
        last = ObservationRevision.objects.filter(observation=observation).aggregate(m=Max("sequence"))["m"] or 0
        revision = ObservationRevision.objects.create(
            observation=observation,
            sequence=last + 1,
            action=action,
            previous_value=current,
            value=value,
            previous_status=observation.status,
            status=NEXT_STATUS[action],
            rationale=payload.rationale or "",
            decided_by=access.user,
        )
        observation.status = NEXT_STATUS[action]
        observation.save(update_fields=["status", "updated_at"])
    return observation, revision


REVISION_COLUMNS = (
    "id",
    "sequence",
    "action",
    "previous_value",
    "value",
    "previous_status",
    "status",
    "rationale",
    "created_at",
)


def observation_history(observation: Observation):
    """The observation's revisions, oldest first, as rows (a queryset: a response slices a page of it in SQL)."""
    return ObservationRevision.objects.filter(observation=observation).order_by("sequence").values(*REVISION_COLUMNS)


def observation_detail(observation: Observation) -> dict:
    """The observation with the first page of its history; ``next.revisions`` pages the rest (the REST
    route's and the MCP tool's answer)."""
    row = observation_rows(Observation.objects.filter(pk=observation.pk))[0]
    revisions, more = bounded(observation_history(observation), VIEW_PAGE)
    link = rest_link(f"observations/{observation.pk}/revisions")
    return {**row, "revisions": revisions, "next": {"revisions": link if more else None}}


def observation_extract(*, access: BookAccess, turn, payload) -> Observation:
    """An agent (Luna, whose role writes the scratchpad) records what a person's turn speaks to, as a
    ``working`` observation citing that turn; the author confirms, corrects or retires it. Never
    ``author-stated`` (422), never already confirmed (the author's verdict confirms), and only from a turn
    of the book's open session (409 once the discovery is handed off)."""
    access.require(Cap.SCRATCHPAD_WRITE, Cap.DISCOVERY_WRITE)
    if payload.provenance == Provenance.AUTHOR_STATED:
        raise Invalid(f"{access.role} cannot label its own words author-stated", field="provenance")
    if turn.session.book_id != access.book.pk:
        raise Invalid("the turn is not of this book", field="turn_id")
    if turn.role not in ("author", "editor"):
        raise Invalid("observations are extracted from a person's turn", field="turn_id")
    if turn.session.status not in OPEN_SESSION_STATUSES:
        raise Conflict("this discovery session is closed", code="session_not_open")
    return Observation.objects.create(
        session=turn.session,
        turn=turn,
        key=payload.key,
        value=payload.value,
        provenance=payload.provenance,
        confidence=payload.confidence,
        status=ObservationStatus.WORKING,
    )


def observations_confirm_turn(*, access: BookAccess, turn, rationale: str = "") -> list[Observation]:
    """The author confirms every observation still ``working`` from one turn (each through
    ``observation_resolve``, so each keeps its own revision). Returns those confirmed."""
    access.require_author()
    confirmed = []
    with transaction.atomic():
        for observation in Observation.objects.filter(turn=turn, status=ObservationStatus.WORKING).order_by(
            "created_at"
        ):
            done, _ = observation_resolve(
                access=access,
                observation=observation,
                payload=ObservationResolveIn(action="confirm", rationale=rationale or "Confirmed with its turn."),
            )
            confirmed.append(done)
    if confirmed:
        person_acted.send(sender=Observation, book=access.book, user=access.user, act="confirm")
    return confirmed


STATED_RATIONALE = "Stated by the author in her own turn."


def turn_add_stating(*, access: BookAccess, session, payload: TurnIn):
    """The composer's turn with what she states herself: the turn and its observations (``turn_add``: each enters
    ``working``, and ``author-stated`` only from the author as herself, 422 for anyone else), then her own
    statements confirmed by the same act, each with its revision (``observation_resolve``), in one transaction.
    What an agent later extracts from the turn still waits for her."""
    with transaction.atomic():
        turn = turn_add(access=access, session=session, payload=payload)
        stated = Observation.objects.filter(
            turn=turn, provenance=Provenance.AUTHOR_STATED, status=ObservationStatus.WORKING
        ).order_by("created_at")
        for observation in stated:
            observation_resolve(
                access=access,
                observation=observation,
                payload=ObservationResolveIn(action="confirm", rationale=STATED_RATIONALE),
            )
    return turn
