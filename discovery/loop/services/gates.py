"""Gates G0 to G3 (LOOP.md "Gates") and the hand-off to drafting.

- No jumping ahead: asking for any gate other than the current one is a 409; so is
  asking while a card waits, while the loop is paused, or while re-runs queued by a
  recorded constraint or a cascade have not run (a constraint is honoured first).
- G0, G1.5 and G2 raise an option card (a pending approval of kind ``gate``) and
  the loop waits for the author (``awaiting-human``).
- G1 passes automatically with a controller row in the decision log, unless a risk
  trigger fires (a one-way-door decision, a logged value conflict, a conflict with
  approved series canon): then it waits for the author like any consent gate.
- G2 is refused (409, the reasons listed) while a required lens has not reviewed,
  the strict lint fails or saturation does not hold.
- G3 is refused while the decision brief has no success_metrics; otherwise it hands
  off automatically (controller row): chapter 1 exists and parked ideas become
  backlog entries. A one-way-door request at G1 or G3 forces a consent card.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from pydantic import ValidationError as PydanticValidationError

from approvals.models import Gate, Reversibility
from approvals.services import decision_log_append
from discovery.access import BookAccess
from discovery.models import (
    Chapter,
    DiscoverySession,
    KnowledgeBase,
    KnowledgeClaim,
    StoryCharter,
    ThrustCandidate,
)
from discovery.selectors import VIEW_PAGE
from discovery.services.charters import charter_content_digest
from novelgraph.core.errors import Conflict, Invalid

from ..models import (
    GATE_ORDER,
    ArtifactStatus,
    BlackboardArtifact,
    Candidate,
    CandidateStatus,
    CardStatus,
    Lifecycle,
    LoopMeta,
    LoopStatus,
    OptionCard,
    PlanNode,
    QuestionKind,
    SubIdea,
)
from ..requirements import (
    CLOSED_SLOTS,
    decision_brief,
    g2_missing,
    g3_missing,
    governing_charter,
    queued_rerun_lenses,
    unsettled_conflicts,
)
from ..schemas import BriefChapterIn, GateIn
from ..selectors import open_author_words
from .base import controller_book, lock_meta, refresh
from .cards import raise_card, supersede_lapsed
from .discovery_reopen import book_reopened

CONSENT_GATES = {"G0", "G1.5", "G2"}


def next_gate(gate: str) -> str | None:
    i = GATE_ORDER.index(gate)
    return GATE_ORDER[i + 1] if i + 1 < len(GATE_ORDER) else None


# The saturation reasons only closing a round settles (Sol closes one at G2 when nothing else is missing).
ROUND_REASONS = (
    "saturation does not hold: no full round has yet completed without invalidating anything",
    "saturation does not hold: the current round invalidated slots",
)


def g2_reasons(book) -> list[str]:
    """Why G2 is refused: the reasons of the one rule (``requirements.g2_missing``), the saturation parts
    said as one reason."""
    missing = g2_missing(book)
    reasons = [m.reason for m in missing if m.group != "saturation"]
    saturation = [m.reason for m in missing if m.group == "saturation"]
    if saturation:
        reasons.append(f"saturation does not hold: {'; '.join(saturation)}")
    return reasons


def g3_reasons(book, artifacts: list[str] | None = None) -> list[str]:
    """Why G3 cannot be asked for (``requirements.g3_missing``): the brief must carry success metrics and be
    ratified by the author, or be put on the G3 card itself (``artifacts``)."""
    return [m.reason for m in g3_missing(book, artifacts)]


def g3_brief_unratified(book) -> bool:
    brief = decision_brief(book)
    return brief is not None and brief.status != ArtifactStatus.RATIFIED


def charter_ratified(charter: StoryCharter) -> dict:
    """What G2's log entry names: the version and its content digest."""
    return {
        "id": str(charter.pk),
        "version": charter.version,
        "content_digest": charter_content_digest(charter.content),
    }


def g15_thrust(book, thrust_id) -> ThrustCandidate:
    """G1.5 ratifies one thrust candidate of the book, still open (422 naming ``thrust_id`` otherwise)."""
    if thrust_id is None:
        raise Invalid("G1.5 ratifies the chosen thrust: name the thrust candidate", field="thrust_id")
    thrust = ThrustCandidate.objects.filter(pk=thrust_id, session__book=book).first()
    if thrust is None:
        raise Invalid("no such thrust candidate of this book", field="thrust_id")
    if thrust.status not in (ThrustCandidate.Status.PROPOSED, ThrustCandidate.Status.SELECTED):
        raise Invalid(f"the thrust candidate is {thrust.status}", field="thrust_id")
    return thrust


def series_canon_conflicts(book) -> list[str]:
    """Book claims whose subject and predicate match approved series canon with another value."""
    if not book.series_id:
        return []
    series_base = KnowledgeBase.objects.filter(scope="series", owner_id=str(book.series_id)).first()
    book_base = KnowledgeBase.objects.filter(scope="book", owner_id=str(book.pk)).first()
    if series_base is None or book_base is None:
        return []
    canon = {
        (c.subject, c.predicate): c.value
        for c in KnowledgeClaim.objects.filter(base=series_base, status="approved").only(
            "subject", "predicate", "value"
        )
    }
    found = []
    for claim in KnowledgeClaim.objects.filter(base=book_base).exclude(status="rejected"):
        key = (claim.subject, claim.predicate)
        if key in canon and canon[key] != claim.value:
            found.append(f"{claim.subject} {claim.predicate} contradicts approved series canon")
    return found


def risk_triggers(book, reversibility_class: str) -> list[str]:
    triggers = []
    if reversibility_class == Reversibility.ONE_WAY_DOOR:
        triggers.append("one-way-door decision")
    unsettled = unsettled_conflicts(book)
    for q in unsettled:
        if q.kind == QuestionKind.VALUE_CONFLICT:
            triggers.append(f"logged value conflict: {q.question[:120]}")
    for q in unsettled:
        if q.kind == QuestionKind.CANON_CONFLICT:
            triggers.append(f"conflict with approved series canon: {q.question[:120]}")
    triggers.extend(f"conflict with approved series canon: {c}" for c in series_canon_conflicts(book))
    return triggers


MAX_BRIEF_CHAPTERS = 200


def hand_off_to_drafting(*, meta: LoopMeta) -> dict:
    """Hand off to drafting: chapter 1 exists; parked ideas become backlog entries. Inside a transaction."""
    book = meta.book
    brief = decision_brief(book)
    content = brief.content if brief is not None and isinstance(brief.content, dict) else {}
    spec = str(content.get("chapter_1") or content.get("first_chapter") or "")
    # The brief's chapters, each made once (Chapter 1 always: from the brief's list, else from its chapter_1).
    planned: dict[int, dict] = {}
    for item in (content.get("chapters") or [])[:MAX_BRIEF_CHAPTERS]:
        try:
            chapter_spec = BriefChapterIn.model_validate(item)
        except PydanticValidationError:
            continue  # a malformed chapter of an imported brief makes no chapter; the brief itself stays
        planned.setdefault(chapter_spec.number, chapter_spec.model_dump())
    first = planned.pop(1, {})
    # A hand-off after a reopen follows the new brief's plan: the chapters it plans take its titles and specs
    # (their text revisions stay as they are); a first hand-off keeps what the author set before it.
    replan = book_reopened(book)
    replanned: list[dict] = []
    rows = [(1, {"title": first.get("title") or "Chapter 1", "spec": first.get("spec") or spec})]
    rows += [
        (n, {"title": item.get("title") or f"Chapter {n}", "spec": item.get("spec") or ""})
        for n, item in sorted(planned.items())
    ]
    chapter, created = None, False
    for number, item in rows:
        title, chapter_spec = str(item["title"])[:200], str(item["spec"])[:20_000]
        made, was_created = Chapter.objects.get_or_create(
            book=book, number=number, defaults={"title": title, "spec": chapter_spec}
        )
        if number == 1:
            chapter, created = made, was_created
        if replan and not was_created and (made.title, made.spec) != (title, chapter_spec):
            replanned.append({"number": number, "title_before": made.title, "title": title})
            made.title, made.spec = title, chapter_spec
            made.save(update_fields=["title", "spec", "updated_at"])
    entries = [
        {"kind": "parked-node", "id": str(n.pk), "intent": n.intent, "altitude": n.altitude}
        for n in PlanNode.objects.filter(book=book)
        .filter(Q(lifecycle=Lifecycle.PARKED) | Q(sub_idea=SubIdea.PARKED))
        .order_by("created_at")
    ]
    entries += [
        {
            "kind": "parked-candidate",
            "id": str(c.pk),
            "mechanic": c.mechanic,
            "shape": c.shape,
            "rationale": c.rationale,
        }
        for c in Candidate.objects.filter(node__book=book, status=CandidateStatus.PARKED).order_by("created_at")
    ]
    backlog, made = BlackboardArtifact.objects.get_or_create(
        book=book,
        slug="backlog",
        defaults={
            "type": "backlog",
            "status": ArtifactStatus.RATIFIED,
            "produced_by": "sol",
            "lens": "discovery-lead",
            "round_last_touched": meta.round,
            "content": {"entries": entries},
        },
    )
    if not made:
        backlog.version += 1
        backlog.status = ArtifactStatus.RATIFIED
        backlog.content = {**(backlog.content or {}), "entries": entries}
        backlog.round_last_touched = meta.round
        backlog.save()
    meta.status = LoopStatus.HANDED_OFF
    meta.bound = ""
    meta.save()
    # The conversation stays open until hand-off: G3 closes it (and nothing else does).
    closed = DiscoverySession.objects.filter(book=book).exclude(status=DiscoverySession.Status.CLOSED)
    closed = closed.update(status=DiscoverySession.Status.CLOSED)
    result = {
        "chapter_1": str(chapter.pk),
        "chapter_created": created,
        "backlog_entries": len(entries),
        "sessions_closed": closed,
    }
    if replan:
        # The row that logs this hand-off is hashed once: it names the first page of the replanned chapters.
        result["chapters_replanned"] = replanned[:VIEW_PAGE]
        result["chapters_replanned_count"] = len(replanned)
    return result


def gate_request(*, access: BookAccess, gate: Gate, payload: GateIn) -> dict:
    """The controller asks for the current gate. Returns {outcome, gate, card, approval_id, ...}."""
    book, role = controller_book(access)
    gate = str(gate)  # the edges type it as a Gate (the API's path, the MCP tool's argument, the agent's plan)
    summary, decisions, recommended = payload.summary, payload.decisions_requested, payload.recommended
    reversibility_class = Reversibility(payload.reversibility_class).value
    node_id, trace_seed, thrust_id = payload.node_id, payload.trace_seed, payload.thrust_id
    with transaction.atomic():
        meta = lock_meta(book)
        supersede_lapsed(book, meta)
        if meta.status == LoopStatus.HANDED_OFF:
            raise Conflict("the loop has already handed off to drafting", code="handed_off")
        if gate != meta.gate:
            raise Conflict(
                f"no jumping ahead: the loop is at {meta.gate}; {gate} cannot be asked for now",
                code="not_current_gate",
                current_gate=meta.gate,
            )
        if meta.status in {LoopStatus.PAUSED_AT_BOUND, LoopStatus.STALLED_AT_CAP}:
            raise Conflict(f"the loop is {meta.status} at the {meta.bound} bound", code="paused")
        waiting = OptionCard.objects.filter(book=book, status=CardStatus.PENDING).first()
        if waiting is not None:
            raise Conflict(
                f"an option card already waits for the author ({waiting.gate}: {waiting.summary})",
                code="card_pending",
                approval_id=str(waiting.approval_id),
            )
        queued = queued_rerun_lenses(book)
        if queued:
            raise Conflict(
                "re-runs must finish before moving on (a recorded constraint or cascade is honoured first): "
                + ", ".join(queued),
                code="reruns_pending",
                reasons=[f"lens {lens} has a queued re-run" for lens in queued],
            )
        slugs = list(dict.fromkeys(payload.artifacts))
        found = dict(BlackboardArtifact.objects.filter(book=book, slug__in=slugs).values_list("slug", "status"))
        for i, slug in enumerate(slugs):
            if slug not in found:
                raise Invalid(f"no slot {slug!r}", field=f"artifacts[{i}]")
            if found[slug] in CLOSED_SLOTS:
                raise Invalid(f"slot {slug!r} is {found[slug]}", field=f"artifacts[{i}]")
        node = None
        if node_id is not None:
            node = PlanNode.objects.filter(book=book, pk=node_id).first()
            if node is None:
                raise Invalid("no such plan node", field="node")
        reasons = g2_reasons(book) if gate == "G2" else g3_reasons(book, slugs) if gate == "G3" else []
        if reasons:
            raise Conflict(f"{gate} is refused: {'; '.join(reasons)}", code="gate_refused", reasons=reasons)
        # Seed 000's objects ride on the card: G1.5 the thrust it ratifies, G2 the charter version.
        card_payload: dict = {"action": "gate"}
        if gate == "G1.5":
            thrust = g15_thrust(book, thrust_id)
            card_payload["thrust"] = {"id": str(thrust.pk), "title": thrust.title}
        elif thrust_id is not None:
            raise Invalid("only G1.5 ratifies a thrust", field="thrust_id")
        if gate == "G2":
            card_payload["charter"] = charter_ratified(governing_charter(book))
        # Her steer or constraint on the card before: this card answers it, and names it.
        answers = open_author_words(meta)
        if answers:
            card_payload["answers"] = answers
        triggers = risk_triggers(book, reversibility_class) if gate == "G1" else []
        one_way = reversibility_class == Reversibility.ONE_WAY_DOOR
        if gate == "G3" and g3_brief_unratified(book):
            triggers.append("the decision brief is only proposed: the author ratifies it at hand-off")
        common = dict(
            meta=meta,
            summary=summary,
            decisions_requested=decisions,
            recommended=recommended,
            reversibility_class=reversibility_class,
            artifacts=slugs,
            node=node,
            trace_seed=trace_seed or "",
            raised_by=role,
            requested_by_user=access.user if role == "author" else None,
        )
        if gate in CONSENT_GATES or triggers or one_way:
            kind = "gate" if gate in CONSENT_GATES else "consent"
            card = raise_card(kind=kind, risk_triggers=triggers, payload=card_payload, **common)
            refresh(meta)
            return {"outcome": "awaiting-human", "gate": gate, "card": card, "approval_id": str(card.approval_id)}
        # Automatic passage (G1 without a risk trigger, G3 with success metrics).
        card = OptionCard.objects.create(
            book=book,
            kind="gate",
            gate=gate,
            summary=summary,
            decisions_requested=decisions,
            recommended=recommended,
            reversibility_class=reversibility_class,
            artifacts=slugs,
            node=node,
            status=CardStatus.AUTO_PASSED,
            verdict="approve",
            raised_by=role,
            round=meta.round,
        )
        detail: dict = {"card": str(card.pk), "automatic": True}
        if gate == "G3":
            detail["handoff"] = hand_off_to_drafting(meta=meta)
            rationale = "G3 hand-off: the decision brief carries success metrics; drafting starts at chapter 1"
        else:
            meta.gate = next_gate(gate)
            meta.save()
            rationale = f"{gate} passed automatically: no risk trigger fired"
        detail["loop"] = {"gate": meta.gate, "status": meta.status}
        entry = decision_log_append(
            book=book,
            decision="approve",
            subject_type="loop-option-card",
            subject_id=card.pk,
            rationale=rationale,
            controller_role="sol",
            gate=gate,
            reversibility_class=reversibility_class,
            detail=detail,
        )
        refresh(meta)
        return {
            "outcome": "handed-off" if gate == "G3" else "passed",
            "gate": gate,
            "card": card,
            "approval_id": None,
            "decision_sequence": entry.sequence,
        }
