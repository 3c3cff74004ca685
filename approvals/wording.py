"""What each verdict will do, in one sentence, for the kind of decision it is offered on.

The decision page shows the sentence beside every verdict it offers, so the author knows what a
verdict does before she records it. The effects themselves live in each subject's handler
(``discovery.services.subjects``, ``library.services``, ``discovery.loop.services.verdicts``).
"""

from __future__ import annotations

from .models import ApprovalKind, Verdict

PROPOSAL_HELP: dict[str, dict[str, str]] = {
    ApprovalKind.STORY_CHARTER: {
        Verdict.APPROVE: "This version becomes the book's binding Story Charter; the approved version before it "
        "is superseded.",
        Verdict.REJECT: "This version is set aside and never binds the book; the discovery goes on.",
    },
    ApprovalKind.CANON_PROMOTION: {
        Verdict.APPROVE: "The claim becomes canon in its knowledge base, with this decision as its authority.",
        Verdict.REJECT: "The claim is rejected and never becomes canon; it stays in the record.",
    },
    ApprovalKind.RESEARCH_ADMISSION: {
        Verdict.APPROVE: "The research is admitted: claims and charters may cite it as evidence.",
        Verdict.REJECT: "The research is rejected: nothing may rest on it as evidence.",
    },
}

LOOP_HELP: dict[str, str] = {
    Verdict.APPROVE: "The card's slots are ratified and the discovery moves to the next gate (after G3, the book "
    "is handed off).",
    Verdict.APPROVE_WITH_CONSTRAINT: "Your constraint is recorded as a boundary and the touched slots are re-run; "
    "the gate does not advance yet.",
    Verdict.REDIRECT: "Your steer is recorded; what the card rests on is rejected, what follows from it goes stale, "
    "and the node converges again.",
    Verdict.EXPLORE_ALTERNATIVES: "The current selection is set aside (kept) and Terra drafts new candidates; the "
    "node diverges again.",
    Verdict.ABANDON: "This line is abandoned: the node and everything under it go stale; the history stays.",
    Verdict.PARK: "Not now: the node waits in the backlog (a card about the whole loop is simply deferred) while "
    "the rest goes on.",
    Verdict.EXTEND: "Grants what you write (more rounds, more budget, or a lifted bound) and the paused work resumes.",
}

# Where a card kind gives a verdict a different effect.
CARD_HELP: dict[tuple[str, str], str] = {
    ("consent", Verdict.APPROVE): "You consent to the one-way door: the action the card names is carried out.",
    ("cascade", Verdict.APPROVE): "You confirm the cascade: every slot in the impact preview goes stale and its "
    "lens re-runs.",
    ("cascade", Verdict.PARK): "Not now: nothing goes stale; the cascade waits.",
    ("bound", Verdict.APPROVE_WITH_CONSTRAINT): "The bound stays; your constraint says how to go on within it.",
}


# Where a gate card's verdict does more at one gate.
GATE_HELP: dict[tuple[str, str], str] = {
    ("G1.5", Verdict.APPROVE): "The thrust you choose below is ratified and the discovery moves on to G2; every "
    "other thrust is kept, not chosen, with your reason for it.",
}


def verdict_help(kind: str, verdict: str, card_kind: str | None = None, gate: str | None = None) -> str:
    """One sentence saying what ``verdict`` does to a decision of ``kind`` (a gate card of ``card_kind``)."""
    if kind == ApprovalKind.GATE:
        if card_kind == "gate" and (gate or "", verdict) in GATE_HELP:
            return GATE_HELP[(gate or "", verdict)]
        return CARD_HELP.get((card_kind or "", verdict)) or LOOP_HELP.get(verdict, "")
    return PROPOSAL_HELP.get(kind, {}).get(verdict, "")


# A recorded verdict in the past tense ("already approved by ada at 17:02").
VERDICT_PAST: dict[str, str] = {
    Verdict.APPROVE: "approved",
    Verdict.REJECT: "rejected",
    Verdict.APPROVE_WITH_CONSTRAINT: "approved with a constraint",
    Verdict.REDIRECT: "redirected",
    Verdict.EXPLORE_ALTERNATIVES: "sent back to explore alternatives",
    Verdict.ABANDON: "abandoned",
    Verdict.PARK: "parked",
    Verdict.EXTEND: "extended",
}
