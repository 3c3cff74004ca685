"""A loop option card as the author's decision page shows it: its fields in words, its impact preview in words,
what each verdict does to it, and the G1.5 thrust choice on the form.

The gate handler hands these to approvals (``SubjectHandler.present``, ``choice_from_form``, ``choices_shown``):
the review flow is approvals', the words for a card are the loop's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from approvals.models import Approval, Verdict
from novelgraph.core.errors import Invalid
from novelgraph.core.words import AGENT_NAMES, plain

LOOP_HELP: dict[str, str] = {
    Verdict.APPROVE: "The card's slots are ratified and the discovery moves to the next gate (after G3, the book "
    "is handed off).",
    Verdict.APPROVE_WITH_CONSTRAINT: "Your constraint is recorded as a boundary and the work the card touches is "
    "re-run under it, in-app; the gate does not advance yet, and Sol's next card answers your constraint.",
    Verdict.REDIRECT: "Your steer is recorded; what the card rests on is rejected, what follows from it goes stale, "
    "and the node converges again. Sol's next card answers your steer.",
    Verdict.EXPLORE_ALTERNATIVES: "The current selection is set aside (kept) and Terra drafts new candidates; the "
    "node diverges again.",
    Verdict.ABANDON: "This line is abandoned: the node and everything under it go stale; the history stays.",
    Verdict.PARK: "Not now: the node waits in the backlog (a card about the whole loop is simply deferred) while "
    "the rest goes on.",
    Verdict.EXTEND: "Grants what you enter (more rounds, more budget, or a lifted bound) and the paused work resumes.",
}
# A card about the whole loop (no plan node of its own): parking defers the decision.
WHOLE_LOOP_PARK = (
    "Not now: the decision waits while the discovery goes on; Sol asks for it again after your next answer."
)

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


def card_verdict_help(verdict: str, card_kind: str | None = None, gate: str | None = None) -> str:
    """One sentence saying what ``verdict`` does to a gate card of ``card_kind`` at ``gate``."""
    if card_kind == "gate" and (gate or "", verdict) in GATE_HELP:
        return GATE_HELP[(gate or "", verdict)]
    return CARD_HELP.get((card_kind or "", verdict)) or LOOP_HELP.get(verdict, "")


CARD_KINDS = {
    "gate": "gate card",
    "bound": "bound card (the loop paused at a limit)",
    "consent": "consent card (a one-way door)",
    "cascade": "cascade card (confirm what goes stale)",
}


def card_fields(card: dict | None) -> dict:
    """A loop option card as labelled, readable fields (no ids, no schema version)."""
    if not card:
        return {}
    fields = {
        "Kind": CARD_KINDS.get(card.get("kind"), card.get("kind")),
        "Gate": card.get("gate"),
        "What is asked": plain(card.get("summary")),
        "Decisions requested": card.get("decisions_requested"),
        "Recommended": card.get("recommended"),
        "Reversibility": (card.get("reversibility_class") or "").replace("-", " "),
        "Slots it covers": card.get("artifacts"),
        "Bound reached": card.get("bound"),
        "Proposed extension": card.get("proposed_extension"),
        "Risk triggers": card.get("risk_triggers"),
        "Rests on": card.get("trace_seed"),
        "Answers what you said": [
            f"your {w.get('kind')}: {w.get('text')}" for w in (card.get("payload") or {}).get("answers") or []
        ],
        "Raised by": AGENT_NAMES.get(card.get("raised_by"), card.get("raised_by")),
        "Round": card.get("round"),
    }
    return {label: value for label, value in fields.items() if value not in (None, "", [], {})}


def impact_fields(impact) -> dict | None:
    """A cascade preview in words: what would go stale, which lenses re-run, whether it needs confirming."""
    if not isinstance(impact, dict) or "affected" not in impact:
        return impact
    if impact.get("already_applied"):
        return {"Already applied": f"what this rests on is already {impact.get('seed_status')}; nothing more changes"}
    affected = []
    for a in impact.get("affected") or []:
        rerun = f", re-run by {a['lens']}" if a.get("lens") else ""
        affected.append(f"{a.get('artifact') or a.get('node_id')} ({a.get('kind')}{rerun})")
    return {
        "Would go stale": affected or "nothing",
        "Lenses that would re-run": impact.get("lenses") or "none",
        "Needs your confirmation": (
            f"yes: {len(affected)} slots is more than the limit of {impact.get('limit'):g}"
            if impact.get("breaker")
            else "no"
        ),
    }


def abandon_words(preview: dict | None) -> str:
    """What abandoning the card's line would change, in one sentence (asked before she records it)."""
    if not preview:
        return ""
    below = preview.get("below") or 0
    plans = "nothing below it" if not below else f"{below} plan{'s' if below != 1 else ''} below it"
    impact = preview.get("cascade") or {}
    rests = [a.get("artifact") or a.get("node_id") for a in impact.get("affected") or []]
    what = f"what rests on it goes stale ({', '.join(map(str, rests[:8]))})" if rests else "nothing else rests on it"
    line = "the whole book's line" if preview.get("is_root") else "the line"
    return (
        f"{line.capitalize()} “{preview.get('node', '')[:200]}” is abandoned, {plans} goes stale, and {what}. "
        "Nothing is deleted: the history stays."
    )


def grant_fields(bounds: dict | None) -> dict:
    """The extend form's boxes: each bound as it stands and what the card proposes."""
    if not bounds:
        return {}
    proposed = bounds.get("proposed") or {}
    return {
        "round_cap": {
            "now": bounds.get("round_cap"),
            "used": bounds.get("round"),
            "proposed": proposed.get("round_cap"),
        },
        "cost_budget": {
            "now": bounds.get("cost_budget"),
            "used": bounds.get("cost_spent"),
            "proposed": proposed.get("cost_budget"),
        },
    }


def present(approval: Approval, proposal: dict) -> dict:
    """The card's fields, its impact preview and each verdict's sentence, as the decision page shows them."""
    card = proposal.get("card") or {}
    help = {v: card_verdict_help(v, card.get("kind"), card.get("gate")) for v in Verdict.values}
    if card.get("kind") == "gate" and not card.get("node"):
        help[Verdict.PARK] = WHOLE_LOOP_PARK
    previews = proposal.get("previews") or {}
    return {
        "card_fields": card_fields(card),
        "impact": impact_fields(proposal.get("impact")),
        "help": help,
        "previews": {Verdict.ABANDON: abandon_words(previews.get(Verdict.ABANDON))} if previews else {},
        "grant": grant_fields(proposal.get("bounds")),
    }


# The extend form's boxes (``grant_<bound>``), each a number, and the words for each bound in what was granted.
GRANT_BOXES = ("round_cap", "cost_budget")
BOUND_WORDS = {
    "round_cap": "round cap",
    "cost_budget": "cost budget",
    "concentration": "concentration",
    "max_depth": "depth",
    "max_breadth": "breadth",
    "node_round_cap": "the plan's round cap",
}
RERUN_WORDS = {
    "explore-options": "Terra drafts new thrust candidates",
    "canon-integrity": "Terra reviews canon integrity again",
    "reader-trust": "Luna reviews reader trust again",
}
NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def grant_form(post: Mapping, verdict: str) -> str:
    """An extend's grant from its boxes, as the constraint text the loop reads (``round_cap=8 cost_budget=150``);
    "" when the verdict is not extend or no box is filled. A box that is not a number is a 422 naming it."""
    if verdict != Verdict.EXTEND:
        return ""
    named = []
    for name in GRANT_BOXES:
        raw = str(post.get(f"grant_{name}", "")).strip()
        if not raw:
            continue
        if not NUMBER.fullmatch(raw):
            raise Invalid(f"the {BOUND_WORDS[name]} to grant is a number, such as 8", field=f"grant_{name}")
        named.append(f"{name}={raw}")
    return " ".join(named)


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def outcome(approval: Approval, detail: dict) -> list[str]:
    """What her recorded verdict did to the loop, in plain sentences (the decision page shows them)."""
    effect = detail.get("effect") or {}
    said = []
    granted = effect.get("granted") or {}
    if granted:
        previous = effect.get("previous") or {}
        said.append(
            "Granted: "
            + "; ".join(
                f"{BOUND_WORDS.get(k, k)} {_number(v)}"
                + (f" (was {_number(previous[k])})" if previous.get(k) is not None else "")
                for k, v in sorted(
                    granted.items(), key=lambda kv: list(BOUND_WORDS).index(kv[0]) if kv[0] in BOUND_WORDS else 99
                )
            )
            + "."
        )
    if effect.get("steer"):
        said.append(f"Your steer is recorded: “{effect['steer']}”. Sol's next card answers it.")
    if effect.get("constraint_recorded"):
        said.append("Your constraint is recorded in the scope boundary; Sol's next card answers it.")
    for rerun in effect.get("reruns") or []:
        lens = rerun.get("lens")
        said.append(f"{RERUN_WORDS.get(lens, f'The {lens} lens re-runs')} in-app; Sol asks again when it is done.")
    if effect.get("deferred"):
        said.append(
            "Deferred: the discovery goes on without this decision; Sol asks for it again after your next answer."
        )
    for word in effect.get("answers") or []:
        said.append(f"This card answered your {word.get('kind')}: “{word.get('text')}”.")
    return said


def thrust_choices(proposal: dict, form: dict) -> list[dict]:
    """A G1.5 card's open thrusts as the form shows them: the one checked (the author's last choice, else the
    recommended one) and the reason she wrote for each, kept when the form comes back with an error."""
    thrusts = proposal.get("thrusts") or []
    chosen = form.get("thrust_id") or next((t["id"] for t in thrusts if t["recommended"]), "")
    reasons = form.get("not_chosen") or {}
    return [{**t, "checked": t["id"] == chosen, "reason": reasons.get(t["id"], "")} for t in thrusts]


NOT_CHOSEN_PREFIX = "not_chosen-"


def thrust_form(post: Mapping) -> dict:
    """The G1.5 choice as the decision form sends it: the ``thrust_id`` radio and a ``not_chosen-<id>`` text per
    thrust (blank ones left out; none for the chosen thrust itself, whatever was typed there)."""
    thrust_id = post.get("thrust_id", "").strip()
    if not thrust_id:
        return {}
    reasons = {
        key[len(NOT_CHOSEN_PREFIX) :]: text
        for key, text in post.items()
        if key.startswith(NOT_CHOSEN_PREFIX) and text.strip() and key[len(NOT_CHOSEN_PREFIX) :] != thrust_id
    }
    return {"thrust_id": thrust_id, "not_chosen": reasons}
