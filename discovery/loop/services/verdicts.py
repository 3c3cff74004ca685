"""The seven loop verdicts, as the ``gate`` subject handler of ``approval_decide``.

``approval_decide`` checks that the author decides, that the verdict is typed and
that a rationale (and, for approve-with-constraint / redirect / extend, its text)
is given; it appends exactly one decision-log row. :func:`apply_verdict` gives each
verdict LOOP.md's effect and adds what it (and any cascade) did to
``decision.detail`` so that the same row records it.

| verdict | effect |
| approve | the card's slots ratified, its node ratified, the gate advances (G3: hand-off);
            a consent card applies its one-way-door action; a cascade card confirms the cascade |
| approve-with-constraint | constraint recorded in the scope boundary; touched slots re-run; no advance |
| redirect | the steer recorded; the cascade from the card's trace seed (the seed rejected, downstream
             stale); the node re-enters converging |
| explore-alternatives | the node returns to diverging; the selection set aside (kept); Terra re-runs |
| abandon | the node abandoned, its subtree stale, the cascade from the seed (abandoned); history stays |
| park | the node parked (a parked sub-idea; it ends in the backlog); siblings go on |
| extend | grants rounds, budget or lifts a bound (logged: previous and granted); the node resumes |
"""

from __future__ import annotations

import uuid

from approvals.models import Approval, DecisionList, Verdict
from approvals.services import record_list
from approvals.subjects import LOOP_VERDICTS, Decision, SubjectHandler
from discovery.models import ThrustCandidate
from novelgraph.core.errors import Conflict, Invalid
from novelgraph.core.schemas import limit

from ..models import (
    ArtifactStatus,
    BlackboardArtifact,
    Candidate,
    CandidateStatus,
    CardStatus,
    LensRerun,
    Lifecycle,
    LoopMeta,
    OptionCard,
    PlanNode,
    RosterEntry,
    SubIdea,
    TraceStatus,
)
from ..review import grant_form, outcome, present, thrust_choices, thrust_form
from ..selectors import impact_capped
from .artifacts import boundary_recording, ratify_successor
from .base import card_renew_after_lapse, lock_meta, refresh, root_of
from .bounds import apply_grant, subtree_ids
from .cards import OPEN_THRUST, card_as_dict, card_digest, card_impact, g15_thrusts, raise_card
from .cascade import cascade_apply
from .gates import charter_ratified, governing_charter, hand_off_to_drafting, next_gate
from .plan import apply_selection
from .reopen import refuse_card_verdict

CARD_VERDICTS = {
    "gate": frozenset(LOOP_VERDICTS),
    "bound": frozenset({Verdict.EXTEND, Verdict.APPROVE_WITH_CONSTRAINT, Verdict.PARK, Verdict.ABANDON}),
    "consent": frozenset(LOOP_VERDICTS) - {Verdict.EXTEND},
    "cascade": frozenset({Verdict.APPROVE, Verdict.PARK}),
}


def _card(approval: Approval, lock: bool = False) -> OptionCard | None:
    qs = OptionCard.objects.select_related("node").filter(pk=approval.subject_id, book_id=approval.book_id)
    return (qs.select_for_update(of=("self",)) if lock else qs).first()


def digest(approval: Approval) -> str:
    card = _card(approval)
    return card_digest(card) if card else "gone"


def describe(approval: Approval) -> dict:
    """The option card and an impact preview (what a cascade from its seed would touch)."""
    card = _card(approval)
    if card is None:
        return {"card": None, "impact": None}
    impact = card_impact(card)
    # What approve would ratify: each slot's current version and, where one waits, the successor it would
    # make current (the digest covers both, so a change lapses the approval).
    slots = [
        {"slug": slug, "version": version, "status": status, "content": content, "successor": successor or None}
        for slug, version, status, content, successor in BlackboardArtifact.objects.filter(
            book_id=card.book_id, slug__in=card.artifacts or []
        )
        .order_by("slug")
        .values_list("slug", "version", "status", "content", "successor")
    ]
    described = {
        "card": card_as_dict(card),
        "slots": slots,
        "impact": impact,
        "verdicts": sorted(CARD_VERDICTS[card.kind]),
    }
    if card.status == CardStatus.PENDING and Verdict.ABANDON in CARD_VERDICTS[card.kind]:
        # What abandoning its line would change, shown before she is asked to confirm it.
        line = card.node or root_of(card.book)
        below = [pk for pk in subtree_ids(line) if pk != line.pk]
        staled = PlanNode.objects.filter(pk__in=below).exclude(lifecycle__in=[Lifecycle.ABANDONED, Lifecycle.PARKED])
        described["previews"] = {
            Verdict.ABANDON: {"node": line.intent, "is_root": line.is_root, "below": staled.count(), "cascade": impact}
        }
    if card.status == CardStatus.PENDING and Verdict.EXTEND in CARD_VERDICTS[card.kind]:
        meta = LoopMeta.objects.filter(book_id=card.book_id).first()
        if meta is not None:
            described["bounds"] = {
                "round": meta.round,
                "round_cap": meta.round_cap,
                "cost_spent": meta.cost_spent,
                "cost_budget": meta.cost_budget,
                "proposed": card.proposed_extension or {},
            }
    if card.kind == "gate" and card.gate == "G1.5" and card.status == CardStatus.PENDING:
        # The author chooses among every open thrust; the one Sol named on the card is the recommendation.
        recommended = str((card.payload.get("thrust") or {}).get("id", ""))
        described["thrusts"] = [
            {
                "id": str(t.pk),
                "title": t.title,
                "kind": t.kind,
                "proposed_by": t.proposed_by,
                "main_thrust": t.main_thrust,
                "character_engine": t.character_engine,
                "central_conflict": t.central_conflict,
                "risks": t.risks,
                "forecloses": t.forecloses,
                "recommended": str(t.pk) == recommended,
            }
            for t in g15_thrusts(card)
        ]
    return described


def _queue_reruns(meta: LoopMeta, slugs: list[str], reason: str) -> list[dict]:
    """Queue the producing lens of each slot; the re-run's cost counts."""
    by_lens: dict[str, list[str]] = {}
    for slot in BlackboardArtifact.objects.filter(book=meta.book, slug__in=slugs).order_by("slug"):
        lens = slot.lens or {"terra": "explore-options", "luna": "plan-validation"}.get(slot.produced_by, "")
        if lens:
            by_lens.setdefault(lens, []).append(slot.slug)
    return _queue(meta, by_lens, reason)


def _queue(meta: LoopMeta, by_lens: dict[str, list[str]], reason: str) -> list[dict]:
    costs = dict(RosterEntry.objects.filter(slug__in=by_lens).values_list("slug", "rerun_cost"))
    queued = []
    for lens, slots in sorted(by_lens.items()):
        cost = float(costs.get(lens, 1.0))
        LensRerun.objects.create(book=meta.book, lens=lens, artifacts=slots, reason=reason[:2000], cost=cost)
        meta.cost_spent += cost
        queued.append({"lens": lens, "slots": slots, "cost": cost})
    meta.save()
    return queued


def _cascade(meta: LoopMeta, card: OptionCard, reason: str, seed_status: str, verdict: str) -> dict | None:
    if not card.trace_seed:
        return None
    result = cascade_apply(meta=meta, seed=card.trace_seed, reason=reason, seed_status=seed_status)
    if result.get("surfaced"):
        follow = raise_card(
            meta=meta,
            kind="cascade",
            summary=f"the cascade from {card.trace_seed} would touch {result['affected_count']} slots "
            f"(more than {result['limit']:g}): confirm it",
            decisions_requested=["approve: confirm the cascade", "park: not now"],
            recommended="look at the impact before confirming",
            node=card.node,
            trace_seed=card.trace_seed,
            payload={"seed_status": seed_status, "reason": reason[:1000], "from_verdict": verdict},
        )
        result["approval_id"] = str(follow.approval_id)
    return result


def _record_constraint(meta: LoopMeta, card: OptionCard, text: str, kind: str) -> None:
    item = {"kind": kind, "text": text, "gate": card.gate, "card": str(card.pk)}
    meta.constraints = [*(meta.constraints or []), item]
    meta.save()
    if kind != "constraint":
        return  # a steer is recorded in meta and the log row, not in the scope boundary
    boundary = (
        BlackboardArtifact.objects.select_for_update(of=("self",)).filter(book=meta.book, slug="scope-boundary").first()
    )
    if boundary is None:
        BlackboardArtifact.objects.create(
            book=meta.book,
            slug="scope-boundary",
            type="scope-boundary",
            status=ArtifactStatus.RATIFIED,
            produced_by="author",
            round_last_touched=meta.round,
            content=boundary_recording({}, item, meta.book_id),
        )
    else:
        boundary.content = boundary_recording(dict(boundary.content or {}), item, meta.book_id)
        boundary.version += 1
        boundary.status = ArtifactStatus.RATIFIED
        boundary.round_last_touched = meta.round
        boundary.save()


def _approve(meta, card, node, decision) -> dict:
    if card.kind == "cascade":
        result = cascade_apply(
            meta=meta,
            seed=card.trace_seed,
            reason=card.payload.get("reason") or decision.rationale,
            seed_status=card.payload.get("seed_status", TraceStatus.REJECTED),
            override_breaker=True,
        )
        return {"cascade": result}
    if card.kind == "consent" and card.payload.get("action") == "select":
        candidate = Candidate.objects.filter(pk=card.payload["candidate"], node=node).first()
        if candidate is None or candidate.status != CandidateStatus.PROPOSED:
            raise Conflict("the candidate is no longer open", code="candidate_closed")
        apply_selection(node, candidate, card.payload.get("rationale") or decision.rationale)
        return {"selected": str(candidate.pk)}
    slots = BlackboardArtifact.objects.select_for_update(of=("self",)).filter(book=meta.book, slug__in=card.artifacts)
    for slot in slots:
        if slot.status in {ArtifactStatus.STALE, ArtifactStatus.REJECTED}:
            raise Conflict(f"slot {slot.slug} is {slot.status}", code="slot_closed")
    ratified = []
    for slot in slots.order_by("slug"):
        # A successor proposed beside a ratified version becomes current only now, by this verdict.
        ratify_successor(slot)
        slot.status = ArtifactStatus.RATIFIED
        slot.round_last_touched = meta.round
        slot.save()
        ratified.append({"slug": slot.slug, "version": slot.version})
    effect: dict = {"ratified": [r["slug"] for r in ratified], "versions": ratified, "from_gate": card.gate}
    if card.payload.get("answers"):
        effect["answers"] = card.payload["answers"]  # her steer or constraint, which this card answered
    if card.node_id:
        node.lifecycle = Lifecycle.RATIFIED
        node.save(update_fields=["lifecycle", "updated_at"])
        effect["node_ratified"] = str(node.pk)
    if card.kind == "gate" and card.gate == "G1.5" and (card.payload.get("thrust") or decision.thrust_id is not None):
        effect["thrust"] = _ratify_thrust(meta, card, decision)
    if card.kind == "gate" and card.gate == "G2":
        effect["charter"] = _ratify_charter(meta, card)
    if card.gate == "G3":
        effect["handoff"] = hand_off_to_drafting(meta=meta)
    else:
        meta.gate = next_gate(card.gate)
        meta.save()
    effect["gate_now"] = meta.gate
    return effect


def _thrust_key(value) -> str | None:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return None


def _ratify_thrust(meta, card, decision) -> dict:
    """G1.5: exactly one open thrust candidate becomes selected: the author's choice (``thrust_id``; the one
    the card recommends when she names none). Every other open one is rejected and stays visible, with her
    reason for it (``not_chosen``) or, where she gave none, the generic sentence. A chosen id that is not an
    open thrust of this book is a 422 naming ``thrust_id``; a reason for anything but an open thrust she did
    not choose, a 422 naming ``not_chosen``. The log's detail records the choice and every reason."""
    thrusts = list(ThrustCandidate.objects.select_for_update().filter(session__book=meta.book).order_by("created_at"))
    open_ones = {str(t.pk): t for t in thrusts if t.status in OPEN_THRUST}
    recommended = str((card.payload.get("thrust") or {}).get("id", "")) or None
    if decision.thrust_id is not None:
        chosen = open_ones.get(_thrust_key(decision.thrust_id) or "")
        if chosen is None:
            raise Invalid("choose one of this book's open thrust candidates", field="thrust_id")
    else:
        chosen = open_ones.get(recommended or "")
        if chosen is None:
            raise Conflict("the thrust candidate this card names is no longer open", code="thrust_closed")
    # The reasons come validated (stripped, within the field's limit) by the verdict's input schema.
    reasons: dict[str, str] = {}
    for key, text in decision.not_chosen.items():
        thrust_key = _thrust_key(key)
        if thrust_key not in open_ones or thrust_key == str(chosen.pk):
            raise Invalid(
                f"not_chosen names {str(key)[:60]!r}, which is not an open thrust candidate left unchosen",
                field="not_chosen",
            )
        if text:
            reasons[thrust_key] = text
    generic = f"G1.5 ratified '{chosen.title}' instead: {decision.rationale}"
    generic = generic[: limit(ThrustCandidate, "not_chosen_reason")]
    not_chosen = []
    for key, thrust in open_ones.items():
        if thrust.pk == chosen.pk:
            continue
        thrust.status = ThrustCandidate.Status.REJECTED
        thrust.not_chosen_reason = reasons.get(key, generic)
        thrust.save(update_fields=["status", "not_chosen_reason", "updated_at"])
        not_chosen.append(
            {"id": key, "title": thrust.title, "reason": thrust.not_chosen_reason, "author_reason": key in reasons}
        )
    chosen.status = ThrustCandidate.Status.SELECTED
    chosen.save(update_fields=["status", "updated_at"])
    return {
        "selected": str(chosen.pk),
        "title": chosen.title,
        "recommended": recommended,
        "chose_the_recommended": str(chosen.pk) == recommended,
        "not_chosen": not_chosen,
    }


def _ratify_charter(meta, card) -> dict:
    """G2 ratifies the governing Story Charter version; the log names it and its content digest. A newer
    version approved while the card waited is refused (409): the card would name the wrong version."""
    charter = governing_charter(meta.book)
    named = card.payload.get("charter") or {}
    if charter is None:
        raise Conflict("there is no approved Story Charter version for G2 to ratify", code="no_charter")
    ratified = charter_ratified(charter)
    if named and named != ratified:
        raise Conflict(
            f"this G2 card names charter v{named.get('version')}, but v{charter.version} governs now; ask G2 again",
            code="charter_changed",
        )
    return ratified


def _approve_with_constraint(meta, card, node, decision) -> dict:
    _record_constraint(meta, card, decision.constraint, "constraint")
    reason = f"re-run under the constraint: {decision.constraint}"
    queued = _queue_reruns(meta, card.artifacts, reason)
    if not queued and card.kind == "gate" and card.gate == "G1.5":
        # The G1.5 card covers no slot: the work it touches is the thrust candidates (the divergence lens's).
        queued = _queue(meta, {"explore-options": [f"node:{node.pk}"]}, reason)
    return {"constraint_recorded": True, "reruns": queued, "gate_now": meta.gate}


def _redirect(meta, card, node, decision) -> dict:
    _record_constraint(meta, card, decision.constraint, "steer")
    cascade = _cascade(meta, card, f"redirect: {decision.constraint}", TraceStatus.REJECTED, decision.verdict)
    if node.lifecycle not in {Lifecycle.ABANDONED}:
        node.lifecycle = Lifecycle.CONVERGING
        node.save(update_fields=["lifecycle", "updated_at"])
    effect = {"steer": decision.constraint, "node": str(node.pk), "lifecycle": node.lifecycle, "cascade": cascade}
    if card.kind == "gate" and card.gate == "G1.5":
        # Steered at G1.5: the thrusts are redrafted along the steer (the divergence lens re-runs), so the next
        # card offers thrusts that answer it, not the same ones under new words.
        effect["reruns"] = _queue(meta, {"explore-options": [f"node:{node.pk}"]}, f"redirect: {decision.constraint}")
    return effect


def _explore(meta, card, node, decision) -> dict:
    set_aside = []
    for candidate in node.candidates.filter(status=CandidateStatus.SELECTED):
        candidate.status = CandidateStatus.PARKED
        candidate.rationale = candidate.rationale or f"set aside to explore alternatives: {decision.rationale}"
        candidate.save(update_fields=["status", "rationale", "updated_at"])
        set_aside.append(str(candidate.pk))
    node.selection = None
    node.lifecycle = Lifecycle.DIVERGING
    node.save(update_fields=["selection", "lifecycle", "updated_at"])
    queued = _queue(meta, {"explore-options": [f"node:{node.pk}"]}, f"new candidates: {decision.rationale}")
    kept = node.candidates.filter(status=CandidateStatus.REJECTED).count()
    effect = {"node": str(node.pk), "lifecycle": node.lifecycle}
    # Capped when written, the whole list recorded with the verdict (GET /approvals/{id}/lists/set_aside).
    record_list(decision, DecisionList.SET_ASIDE, set_aside, into=effect)
    return {**effect, "rejected_kept": kept, "reruns": queued}


def _abandon(meta, card, node, decision) -> dict:
    below = [pk for pk in subtree_ids(node) if pk != node.pk]
    PlanNode.objects.filter(pk__in=below).exclude(lifecycle__in=[Lifecycle.ABANDONED, Lifecycle.PARKED]).update(
        lifecycle=Lifecycle.STALE
    )
    node.lifecycle = Lifecycle.ABANDONED
    node.sub_idea = SubIdea.DONE
    node.save(update_fields=["lifecycle", "sub_idea", "updated_at"])
    cascade = _cascade(meta, card, f"abandoned: {decision.rationale}", TraceStatus.ABANDONED, decision.verdict)
    effect = {"node": str(node.pk), "abandoned": True}
    # Every node below it (the subtree grows up to max_breadth ** max_depth): capped when written, the whole list
    # recorded with the verdict (GET /approvals/{id}/lists/subtree_stale), in the order the subtree was walked.
    record_list(decision, DecisionList.SUBTREE_STALE, [str(pk) for pk in below], into=effect)
    return {**effect, "cascade": cascade}


def _park(meta, card, node, decision) -> dict:
    if card.kind == "cascade":
        return {"cascade": {"applied": False, "deferred": True, "seed": card.trace_seed}}
    if card.node_id is None or node.is_root:
        # A card about the whole loop: the decision is deferred; nothing is parked.
        return {"deferred": True, "gate": card.gate, "bound": card.bound}
    node.lifecycle = Lifecycle.PARKED
    node.sub_idea = SubIdea.PARKED
    node.save(update_fields=["lifecycle", "sub_idea", "updated_at"])
    return {"node": str(node.pk), "parked": True}


def _extend(meta, card, node, decision) -> dict:
    granted = apply_grant(meta, card, decision.constraint)
    resumed = None
    if node is not None and node.lifecycle == Lifecycle.PARKED:
        node.lifecycle = Lifecycle.CONVERGING
        node.sub_idea = SubIdea.OPEN
        node.save(update_fields=["lifecycle", "sub_idea", "updated_at"])
        resumed = str(node.pk)
    return {"bound": card.bound, **granted, "resumed_node": resumed}


EFFECTS = {
    Verdict.APPROVE: _approve,
    Verdict.APPROVE_WITH_CONSTRAINT: _approve_with_constraint,
    Verdict.REDIRECT: _redirect,
    Verdict.EXPLORE_ALTERNATIVES: _explore,
    Verdict.ABANDON: _abandon,
    Verdict.PARK: _park,
    Verdict.EXTEND: _extend,
}


def apply_verdict(decision: Decision) -> None:
    approval = decision.approval
    meta = lock_meta(approval.book)
    card = _card(approval, lock=True)
    if card is None:
        raise Conflict("the option card is gone", code="card_gone")
    if card.status != CardStatus.PENDING:
        raise Conflict(f"the option card is {card.status}", code="not_pending")
    refuse_card_verdict(card)  # a charter-reopen card goes with its charter version's decision
    # The loop is locked now: what the author was shown must still be what the verdict acts on (a write that
    # landed between the digest check and this lock would otherwise widen the cascade unseen).
    if card_digest(card) != approval.subject_digest:
        raise Conflict(
            "the card, its slots or its impact changed while the verdict was being given; decide again",
            code="superseded",
        )
    if decision.verdict not in CARD_VERDICTS[card.kind]:
        raise Invalid(
            f"a {card.kind} card takes {', '.join(sorted(CARD_VERDICTS[card.kind]))}, not {decision.verdict}",
            field="verdict",
        )
    if (decision.thrust_id is not None or decision.not_chosen) and (
        card.kind != "gate" or card.gate != "G1.5" or decision.verdict != Verdict.APPROVE
    ):
        raise Invalid("a thrust is chosen only by approving the G1.5 gate card", field="thrust_id")
    node = card.node or root_of(meta.book)
    effect = EFFECTS[decision.verdict](meta, card, node, decision)
    card.status = CardStatus.DECIDED
    card.verdict = decision.verdict
    card.save(update_fields=["status", "verdict", "updated_at"])
    refresh(meta)
    decision.detail.update(
        {
            "card": str(card.pk),
            "card_kind": card.kind,
            "effect": effect,
            "loop": {"gate": meta.gate, "status": meta.status, "saturation": meta.saturation},
        }
    )


def renew(approval: Approval) -> Approval | None:
    """A lapsed card is put before the author again (the card now waiting, with its impact as it is now)."""
    card = card_renew_after_lapse(book=approval.book)
    return card.approval if card is not None and card.approval_id else None


GATE_HANDLER = SubjectHandler(
    kind="gate",
    verdicts=frozenset(LOOP_VERDICTS),
    digest=digest,
    apply=apply_verdict,
    describe=describe,
    renew=renew,
    impact_page=impact_capped,
    present=present,
    choice_from_form=thrust_form,
    choices_shown=thrust_choices,
    constraint_from_form=grant_form,
    outcome=outcome,
)
