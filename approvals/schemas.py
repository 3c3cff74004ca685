"""The approvals API's schemas: approvals, verdicts and decision-log entries.

Output schemas withhold what the caller's role may not read: a route that serves such
objects records on the request the subjects to withhold (``WITHHELD``); an MCP tool, which has
no request, passes them as the ``withheld`` context (``approvals/reads.py`` computes them for
both). The resolvers below show the withheld line instead of the subject's words.
"""

import uuid
from datetime import datetime
from typing import Any

from ninja import Field, Schema

from discovery.models import ThrustCandidate
from novelgraph.core.schemas import LONG_TEXT, Text, limit

from .models import Approval, ApprovalStatus, Verdict
from .selectors import withheld_line

# What the caller's role may not read, per request (set by the route, read by the output schemas).
WITHHELD = "novelgraph_withheld"


def _withheld(context, obj) -> str | None:
    context = context or {}
    withheld = context.get("withheld")
    if withheld is None:
        withheld = getattr(context.get("request"), WITHHELD, None) or {}
    subject_type = obj.get("subject_type") if isinstance(obj, dict) else obj.subject_type
    subject_id = obj.get("subject_id") if isinstance(obj, dict) else obj.subject_id
    return withheld_line(withheld, subject_type, str(subject_id))


class ApprovalOut(Schema):
    id: uuid.UUID
    book_id: uuid.UUID
    kind: str
    subject_type: str
    subject_id: str
    gate: str | None
    summary: str
    note: str
    requested_by_role: str
    requested_by: str | None
    reversibility_class: str
    status: str
    verdict: str | None
    rationale: str
    constraint: str
    decided_by: str | None
    decided_at: datetime | None
    created_at: datetime

    @staticmethod
    def resolve_summary(obj: Approval | dict, context) -> str:
        line = _withheld(context, obj)
        return line if line else (obj["summary"] if isinstance(obj, dict) else obj.summary)

    @staticmethod
    def resolve_note(obj: Approval | dict, context) -> str:
        return "" if _withheld(context, obj) else (obj["note"] if isinstance(obj, dict) else obj.note)

    @staticmethod
    def resolve_rationale(obj: Approval | dict, context) -> str:
        return "" if _withheld(context, obj) else (obj["rationale"] if isinstance(obj, dict) else obj.rationale)

    @staticmethod
    def resolve_constraint(obj: Approval | dict, context) -> str:
        return "" if _withheld(context, obj) else (obj["constraint"] if isinstance(obj, dict) else obj.constraint)

    @staticmethod
    def resolve_requested_by(obj: Approval | dict) -> str | None:
        if isinstance(obj, dict):
            return obj.get("requested_by")
        return obj.requested_by_user.get_username() if obj.requested_by_user_id else None

    @staticmethod
    def resolve_decided_by(obj: Approval | dict) -> str | None:
        if isinstance(obj, dict):
            return obj.get("decided_by")
        return obj.decided_by.get_username() if obj.decided_by_id else None


class LogEntryOut(Schema):
    id: uuid.UUID
    book_id: uuid.UUID
    sequence: int
    ts: datetime
    gate: str | None
    decision: str
    subject_type: str
    subject_id: str
    ratified_by: str
    reversibility_class: str
    rationale: str
    detail: dict[str, Any]
    approval_id: uuid.UUID | None
    prev_hash: str
    hash: str
    seal: str
    withheld: bool = Field(False, description="true when the caller's role may not read this entry's subject")

    @staticmethod
    def resolve_rationale(obj, context) -> str:
        line = _withheld(context, obj)
        return line if line else (obj["rationale"] if isinstance(obj, dict) else obj.rationale)

    @staticmethod
    def resolve_detail(obj, context) -> dict:
        return {} if _withheld(context, obj) else (obj["detail"] if isinstance(obj, dict) else obj.detail)

    @staticmethod
    def resolve_withheld(obj, context) -> bool:
        return _withheld(context, obj) is not None


class ApprovalDetailOut(ApprovalOut):
    verdicts: list[str] = Field(description="the verdicts this kind of approval accepts")
    current: bool = Field(description="false once the subject changed after the approval was requested")
    proposal: dict[str, Any] = Field(description="the subject as its handler describes it")
    source_refs: list[dict[str, Any]] = Field(description="the proposal's source refs, resolved")
    impact: Any = Field(None, description="the impact preview, where the verdict would change the blackboard")
    log_entry: LogEntryOut | None = Field(None, description="the decision-log entry, once decided")


class ThrustChoiceIn(Schema):
    """What the author chooses when she approves a G1.5 gate card (refused with 422 on any other verdict)."""

    thrust_id: uuid.UUID | None = Field(
        None, description="G1.5 approve: the thrust candidate she chooses (default: the one the card recommends)"
    )
    not_chosen: dict[uuid.UUID, Text(limit(ThrustCandidate, "not_chosen_reason"), required=False)] = Field(
        default_factory=dict,
        description="G1.5 approve: thrust candidate id -> why it was not chosen (optional per thrust; a blank "
        "reason falls back to the generic sentence naming the chosen thrust and the rationale)",
    )


class VerdictIn(ThrustChoiceIn):
    verdict: Verdict = Field(description="the verdict; each kind of approval takes some (its detail's verdicts)")
    rationale: Text(LONG_TEXT, required=False) = Field(description="why: required, never blank")
    constraint: Text(LONG_TEXT, required=False) = Field(
        "",
        description="the constraint (approve-with-constraint), the steer (redirect) or what is granted (extend)",
    )


class VerdictOut(Schema):
    approval: ApprovalOut
    entry: LogEntryOut


class ApprovalFilter(Schema):
    book_id: uuid.UUID | None = None
    status: ApprovalStatus | None = None


class VerificationOut(Schema):
    ok: bool
    entries: int
    first_bad_sequence: int | None
    reason: str | None
    # The entry the tip anchor outside the database records (null: this book has no anchor yet).
    anchored_sequence: int | None = None
    # How many charters, claims and research items (decided by the log, or approved now) were checked against it.
    canon_checked: int = 0
