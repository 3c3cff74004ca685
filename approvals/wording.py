"""What each verdict will do, in one sentence, for the kind of decision it is offered on.

The decision page shows the sentence beside every verdict it offers, so the author knows what a
verdict does before she records it. The effects themselves live in each subject's handler
(``discovery.services.charters``, ``discovery.services.subjects``, ``discovery.services.manuscript``,
``library.services``); a loop card's words
are the loop's (``discovery.loop.review``).
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
    ApprovalKind.CODEX_ENTRY: {
        Verdict.APPROVE: "The entry joins the codex: the continuity check knows its name and other names from now on.",
        Verdict.REJECT: "The entry is set aside and stays in the record; its names are free for another entry.",
    },
}


def verdict_help(kind: str, verdict: str) -> str:
    """One sentence saying what ``verdict`` does to a proposal of ``kind`` (a gate card's handler says its own)."""
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
