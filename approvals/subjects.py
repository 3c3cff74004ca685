"""The subjects a decision is about, and the handlers their apps register for them.

Approvals is a generic engine: charters and claims (discovery), research items (the library) and gate option
cards (the loop) each register a :class:`SubjectHandler` from their ``AppConfig.ready()``. The engine asks the
handler whatever it needs to know of a subject (its verdicts, its fingerprint, how to show it, what a verdict
does, the sources it cites, how its impact is paged, what a verdict's words are) and never imports the subject's
app, which stands above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from discovery.access import BookAccess
from novelgraph.core.errors import Conflict

from .models import Approval, Verdict

LOOP_VERDICTS = frozenset(Verdict.values) - {Verdict.REJECT}
PROPOSAL_VERDICTS = frozenset({Verdict.APPROVE, Verdict.REJECT})


@dataclass(frozen=True)
class Decision:
    """What a handler receives when the author decides."""

    approval: Approval
    verdict: str
    rationale: str
    constraint: str
    access: BookAccess
    detail: dict = field(default_factory=dict)  # the handler may add to what is logged
    # G1.5: the thrust the author chooses (None: the one the card recommends) and, per thrust she does not
    # choose, her reason (thrust id -> text). Only a gate card's handler takes them.
    thrust_id: Any = None
    not_chosen: dict = field(default_factory=dict)


@dataclass(frozen=True)
class SubjectHandler:
    """How one kind of subject takes part in approvals.

    ``describe(approval)`` (optional) returns a JSON-serialisable dict shown on the
    decision page and in ``GET /approvals/{id}``. Keys with a meaning:

    - ``title`` (str) and ``fields`` (dict label -> value): what is proposed;
    - ``source_refs`` (list of ``{"type", "id"}``): resolved for display by ``sources``;
    - ``impact`` (dict or list): the impact preview of a blackboard-changing verdict, paged for a response by
      ``impact_page``.

    Any other key is shown as it is.
    """

    kind: str
    verdicts: frozenset[str]
    # The subject's current fingerprint; differs from the stored one once it changed.
    digest: Callable[[Approval], str]
    # Apply the verdict to the subject, inside the deciding transaction.
    apply: Callable[[Decision], None]
    # Optional: resolve the subject for display (review page, API detail).
    describe: Callable[[Approval], dict] | None = None
    # Optional: after the approval lapsed at the author's verdict, put the subject before her again as it is
    # now; returns the approval that waits for her then (a loop card is raised afresh), or None.
    renew: Callable[[Approval], Approval | None] | None = None
    # Optional: the subject's ``source_refs`` resolved for the reader (what each cited record says, or that it
    # is withheld from her role).
    sources: Callable[[BookAccess, list], list] | None = None
    # Optional: the impact preview as a response carries it (its first page, its count and the link to the rest).
    impact_page: Callable[[Any, Any], Any] | None = None
    # Optional: the decision page's words for the subject (``{"card_fields", "impact", "help": {verdict: text}}``).
    present: Callable[[Approval, dict], dict] | None = None
    # Optional: a choice the verdict form carries besides the verdict (the G1.5 thrust): read from the posted
    # form (``{"thrust_id", "not_chosen"}``), and the options the form offers, the posted one checked.
    choice_from_form: Callable[[Any], dict] | None = None
    choices_shown: Callable[[dict, dict], list] | None = None
    # Optional: what the verdict form carries in fields of its own for the constraint text (an extend's grant:
    # ``round_cap=8 cost_budget=150`` from two number boxes), read from the posted form for ``verdict``; "" if none.
    # A box that does not hold what it asks for is a 422 naming the box.
    constraint_from_form: Callable[[Any, str], str] | None = None
    # Optional: what a recorded verdict did, in plain sentences, from its log entry's ``detail`` (the decision
    # page shows them under the verdict: exactly what an extend granted, what re-runs, what waits).
    outcome: Callable[[Approval, dict], list[str]] | None = None


HANDLERS: dict[str, SubjectHandler] = {}


def register_subject_handler(handler: SubjectHandler) -> None:
    HANDLERS[handler.kind] = handler


def handler_of(kind: str) -> SubjectHandler | None:
    """The registered handler of an approval kind, or None."""
    return HANDLERS.get(kind)


def handler_for(approval: Approval) -> SubjectHandler:
    """The registered handler of the approval's kind (409 when its app is not installed)."""
    handler = HANDLERS.get(approval.kind)
    if handler is None:
        raise Conflict(f"no handler is registered for {approval.kind} approvals", code="no_handler")
    return handler


def approval_is_current(approval: Approval) -> bool:
    """False once the subject changed after the approval was requested."""
    if approval.status == Approval.Status.SUPERSEDED:
        return False
    return handler_for(approval).digest(approval) == approval.subject_digest
