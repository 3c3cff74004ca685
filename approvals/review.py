"""The decision page as the author reads it: the proposal in words, the verdicts offered and what each does, the
waiting list beside it, the contradictions, and what to say when her verdict met a changed state.

The subject's own words come from its handler (a loop card's fields and verdicts are the loop's); this module
only lays them out, so the view stays a guard, a call and a render.
"""

from __future__ import annotations

from django.urls import reverse
from django.utils import timezone

from discovery.access import BookAccess
from discovery.selectors import approval_conflicts
from novelgraph.core.pagination import page_at, page_offset, page_url
from novelgraph.core.runs import produced_by
from novelgraph.core.words import short_title

from .models import Approval, Verdict
from .selectors import approval_view
from .services import VERDICT_NEEDS_CONSTRAINT
from .subjects import handler_for, handler_of
from .wording import VERDICT_PAST, verdict_help


def decision_context(access: BookAccess, approval: Approval, query, *, sidebar: dict, **extra) -> dict:
    """Everything the decision page shows: the proposal as its handler words it, the verdicts offered with what
    each does, the waiting list beside it (``sidebar``: the reader's inbox, which is hers and not the approval's),
    the run that asked, the contradictions (a page of each, from the ``query``'s offsets) and, for the G1.5 card,
    the thrusts to choose from."""
    view = approval_view(access, approval)
    handler = handler_of(approval.kind)
    words = handler.present(approval, view.proposal) if handler and handler.present else {}
    shown = {"title", "fields", "changes", "source_refs", "impact", "type", "id", "exists", "card", "verdicts"}
    shown.add("thrusts")  # a G1.5 card's thrusts are offered on the form, not listed as details
    shown |= {"previews", "bounds"}  # said in words by the handler: what a verdict would change, the extend boxes
    if view.proposal.get("fields"):
        shown.add("content")
    offered = view.proposal.get("verdicts") or view.verdicts
    offered = [v for v in view.verdicts if v in offered]
    context = {
        "view": view,
        # What the decision is about, by its name (never its id).
        "subject_name": short_title(
            view.proposal.get("title") or (view.proposal.get("card") or {}).get("summary") or approval.summary
        ),
        "card_fields": words.get("card_fields") or {},
        # What a verdict would change, asked before it is recorded (abandon), and the extend form's boxes.
        "previews": words.get("previews") or {},
        "grant": words.get("grant") or {},
        # What her recorded verdict did, in words (exactly what an extend granted).
        "outcome": handler.outcome(approval, view.log_entry.detail or {})
        if handler and handler.outcome and view.log_entry is not None
        else [],
        "impact": words.get("impact", view.impact),
        "verdict_choices": [
            (v, Verdict(v).label, (words.get("help") or {}).get(v) or verdict_help(approval.kind, v)) for v in offered
        ],
        "extras": [
            (k, v)
            for k, v in view.proposal.items()
            if k not in shown and k not in {"research_id", "version", "content"} and v not in (None, "", [], {})
        ],
        "approval": approval,
        "may_decide": access.is_author,
        "needs_text": {str(k): v for k, v in VERDICT_NEEDS_CONSTRAINT.items()},
        "form": {"verdict": "", "rationale": "", "constraint": ""},
        "error": None,
        "error_field": None,
        "sidebar": sidebar,
        "oob": False,
        # The agent run that asked for this decision (a charter draft, a claim, a gate card), if one did.
        "run": produced_by("approval", [approval.pk]).get(str(approval.pk)),
        # A proposed claim that contradicts approved canon: both sides, for the author's verdict; and the
        # scratchpad's contradiction entries that name it (they stay, whatever she decides).
        **contradictions(access, approval, query),
    }
    context.update(extra)
    shown = handler.choices_shown if handler else None
    context["thrusts"] = shown(view.proposal, context["form"]) if shown else []
    return context


def renewed(approval: Approval) -> Approval | None:
    """A lapsed approval whose subject is put before the author again (a loop card): the one to decide now."""
    if approval.status != Approval.Status.SUPERSEDED:
        return None
    renew = handler_for(approval).renew
    return renew(approval) if renew is not None else None


def stale_message(approval: Approval) -> str:
    """When the form was sent against a state that changed meanwhile, say what happened instead."""
    if approval.status == Approval.Status.DECIDED and approval.decided_at:
        who = approval.decided_by.get_username() if approval.decided_by else "the author"
        when = timezone.localtime(approval.decided_at).strftime("%H:%M")
        done = VERDICT_PAST.get(approval.verdict, "decided")
        return f"Already {done} by {who} at {when}; nothing was recorded."
    if approval.status == Approval.Status.SUPERSEDED:
        return "This approval lapsed (the proposal changed) before your verdict arrived; nothing was recorded."
    return ""


# The review page's paged lists and the query parameter each one's offset is read from.
CONTRADICTION_OFFSETS = {"conflicts": "conflicts_offset", "contradiction_entries": "entries_offset"}


def contradictions(access: BookAccess, approval: Approval, query) -> dict:
    """A page of the conflicts and one of the scratchpad's contradiction entries (each from its own
    ``?…_offset=``; past the end: the last page), with plain previous / next links that keep the other's place."""
    found = approval_conflicts(access, approval.subject_type, approval.subject_id)
    if approval.status != Approval.Status.PENDING:
        found["conflicts"] = []  # resolved by the verdict; the log entry names both sides
    offsets = {param: page_offset(query.get(param)) for param in CONTRADICTION_OFFSETS.values()}
    base = reverse("approvals:decision", args=[approval.pk])

    def link(param: str, at: int | None) -> str | None:
        return None if at is None else page_url(base, offsets, **{param: at})

    context: dict = {}
    for name, rows in (("conflicts", found["conflicts"]), ("contradiction_entries", found["entries"])):
        param = CONTRADICTION_OFFSETS[name]
        page = page_at(rows, offsets[param])
        context[name] = page["items"]
        context[f"{name}_pager"] = {
            **page,
            "previous_url": link(param, page["previous"]),
            "next_url": link(param, page["next"]),
        }
    return context
