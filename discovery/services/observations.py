"""Observations have a life: the author confirms, corrects or retires what a turn observed.

Every step is an append-only ``ObservationRevision``: the observation keeps the value as first
stated, a correction's new value is the current one, and every earlier value stays in history.
Only ``working`` observations are unresolved (dossiers list those)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from novelgraph.core.errors import Conflict, Invalid

from ..access import BookAccess
from ..models import Observation, ObservationAction, ObservationRevision, ObservationStatus
from ..schemas import ObservationResolveIn

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
    blank or unchanged) or retires an observation of her book. A retired observation is final (409).
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
