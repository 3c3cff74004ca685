"""What a gate still needs: the one rule the gate checks refuse by, read as a list of what is missing.

``g2_missing`` and ``g3_missing`` are the rules G2 and G3 are refused by (``services.gates.g2_reasons`` and
``g3_reasons`` are their reasons, word for word); ``gate_missing`` is, for the loop's current gate, every
item still missing before the loop can move on, each in the author's words with the action beside it (the
in-app run that supplies it, the hand-off, or the place to act). The book page, the loop page,
``GET /books/{id}/loop/missing`` and the MCP tool ``loop_missing`` all read it from here. Reads only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.urls import reverse

from discovery.models import Book, StoryCharter, ThrustCandidate

from .models import (
    ArtifactStatus,
    BlackboardArtifact,
    LensRerun,
    LensReview,
    LoopMeta,
    LoopStatus,
    OpenQuestion,
    QuestionKind,
    QuestionStatus,
    RerunStatus,
    RosterEntry,
)
from .roster import lens_role_problem
from .selectors import pending_card, saturation_check, trace_lint

CLOSED_SLOTS = {ArtifactStatus.STALE, ArtifactStatus.REJECTED}
AUTHORS_TO_SETTLE = frozenset({QuestionKind.VALUE_CONFLICT, QuestionKind.CANON_CONFLICT})
# The in-app task that files each required lens's review (the agents' AgentTask values).
LENS_TASK = {"canon-integrity": "canon-review", "reader-trust": "trust-review"}
SOL_STEP = "next-question"  # Sol's one task: he asks, hands work on, closes rounds and raises the gate


@dataclass(frozen=True)
class Action:
    """What to do about a missing item: ``run`` queues an in-app ``task``; ``hand-off`` asks for G3 (the loop
    page's button); ``link`` opens ``href``, the place to act."""

    kind: str
    label: str
    task: str = ""
    href: str = ""


@dataclass(frozen=True)
class Missing:
    """One thing a gate still needs. ``reason`` is the gate's own refusal text; ``what`` says it plainly."""

    code: str
    what: str
    reason: str
    action: Action | None = None
    group: str = ""  # "saturation": the parts of the one "saturation does not hold" reason
    detail: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = asdict(self)
        out.pop("group")
        return out


def settled_by_author(q: OpenQuestion) -> bool:
    """A conflict counts as settled only when the author resolved it (not a lens, not an import)."""
    return q.status == QuestionStatus.RESOLVED and q.resolved_by.startswith("author:")


def unsettled_conflicts(book):
    """Value and canon conflicts the author has not settled herself (open, routed, surfaced, or resolved by
    anyone else: a lens's or an import's "resolved" settles nothing)."""
    return [
        q
        for q in OpenQuestion.objects.filter(book=book, kind__in=AUTHORS_TO_SETTLE).order_by("created_at")
        if not settled_by_author(q)
    ]


def governing_charter(book) -> StoryCharter | None:
    """The Story Charter version that governs the book (the newest approved one)."""
    return StoryCharter.objects.filter(book=book, status=StoryCharter.Status.APPROVED).order_by("-version").first()


def decision_brief(book) -> BlackboardArtifact | None:
    """The brief G3 hands off: the author's ratified one if there is one (a brief proposed later beside it
    never displaces it), else the latest open one (for the reasons G3 gives)."""
    briefs = BlackboardArtifact.objects.filter(book=book, type="decision-brief").exclude(status__in=CLOSED_SLOTS)
    return (
        briefs.filter(status=ArtifactStatus.RATIFIED).order_by("-updated_at").first()
        or briefs.order_by("-updated_at").first()
    )


def queued_rerun_lenses(book) -> list[str]:
    """The lenses with a queued re-run (a recorded constraint or a cascade is honoured before any gate)."""
    queued = LensRerun.objects.filter(book=book, status=RerunStatus.QUEUED).values_list("lens", flat=True)
    return sorted(set(queued))


def _run(task: str, label: str) -> Action:
    return Action(kind="run", task=task, label=label)


def _loop_link(book, anchor: str, label: str) -> Action:
    return Action(kind="link", href=f"{reverse('loop:page', args=[book.pk])}#{anchor}", label=label)


def g2_missing(book) -> list[Missing]:
    """What G2 is refused for: an approved charter, the required lenses' reviews (each by the role the roster
    names, distinct roles), no conflict left for the author, a clean strict lint, and saturation."""
    missing = []
    if governing_charter(book) is None:
        proposed = StoryCharter.objects.filter(book=book, status=StoryCharter.Status.PROPOSED).exists()
        missing.append(
            Missing(
                code="charter",
                what="An approved Story Charter",
                reason="there is no approved Story Charter version for G2 to ratify",
                action=Action(
                    kind="link", href=f"{reverse('approvals:inbox')}?book={book.pk}", label="Decide the charter"
                )
                if proposed
                else _run("charter", "Ask Terra for a charter draft"),
            )
        )
    required = list(RosterEntry.objects.filter(required=True, required_at_gate="G2").order_by("slug"))
    roles: dict[str, list[str]] = {}
    for lens in required:
        roles.setdefault(lens.agent_role, []).append(lens.slug)
        problem = lens_role_problem(lens.slug, lens.agent_role)
        who = lens.agent_role.capitalize() or "a lens"
        if problem:
            missing.append(Missing(code="lens-role", what=f"A role able to file the {lens.name}", reason=problem))
        # Only a review filed by the role the roster names counts (not one filed under another lens's name).
        elif not LensReview.objects.filter(book=book, lens=lens, gate="G2", reviewer_role=lens.agent_role).exists():
            task = LENS_TASK.get(lens.slug)
            missing.append(
                Missing(
                    code="lens-review",
                    what=f"{who}'s {lens.name.lower().replace(' lens', ' review')}",
                    reason=f"the required lens {lens.slug} has not reviewed at G2 (filed by {lens.agent_role})",
                    action=_run(task, f"Ask {who} for it") if task else None,
                    detail={"lens": lens.slug, "role": lens.agent_role},
                )
            )
    for role, slugs in sorted(roles.items()):
        if len(slugs) > 1:
            missing.append(
                Missing(
                    code="distinct-lenses",
                    what="The required reviews filed by different agents",
                    reason=f"the required reviews {', '.join(slugs)} must be filed by distinct lenses, "
                    f"not all by {role}",
                )
            )
    for q in unsettled_conflicts(book):
        missing.append(
            Missing(
                code="conflict",
                what=f"Your ruling on: {q.question[:120]}",
                reason=f"the {q.kind} '{q.question[:120]}' waits for the author to settle it",
                action=_loop_link(book, f"question-{q.pk}", "Settle it"),
            )
        )
    report = trace_lint(book, strict=True)
    if not report.ok:
        shown = "; ".join(f["message"] for f in report.failures[:5])
        missing.append(
            Missing(
                code="lint",
                what="Every part of the discovery linked back to the premise (a clean strict lint)",
                reason=f"the strict lint fails: {shown}",
                action=_run("brief", "Ask Terra to link it (with the decision brief)"),
                detail={"failures": len(report.failures)},
            )
        )
    for part in saturation_check(book)["reasons"]:
        if part.startswith("the strict lint"):
            continue  # said once, above
        if part.startswith("no full round") or part.startswith("the current round"):
            item = ("round", "A completed round that changed nothing", _run(SOL_STEP, "Ask Sol to close the round"))
        else:
            item = ("questions", f"Answers to the open questions ({part})", _loop_link(book, "questions-h", "Open"))
        code, what, action = item
        missing.append(Missing(code=code, what=what, reason=part, action=action, group="saturation"))
    return missing


def g3_missing(book, artifacts: list[str] | None = None) -> list[Missing]:
    """Why G3 cannot be asked for. The brief must carry success metrics and be ratified by the author;
    a brief that is only proposed may be put on the G3 card itself (``artifacts``): the author's
    verdict then ratifies it and hands off in one decision (a consent card, never automatic)."""
    brief = decision_brief(book)
    draft = _run("brief", "Ask Terra to draft it")
    if brief is None:
        return [
            Missing(
                code="brief",
                what="A decision brief",
                reason="there is no decision brief (an artifact of type decision-brief)",
                action=draft,
            )
        ]
    metrics = brief.content.get("success_metrics") if isinstance(brief.content, dict) else None
    if not isinstance(metrics, list) or not [m for m in metrics if isinstance(m, str | dict) and m]:
        return [
            Missing(
                code="brief-metrics",
                what="Success metrics in the decision brief",
                reason="the decision brief has no success_metrics",
                action=draft,
            )
        ]
    if brief.status != ArtifactStatus.RATIFIED and brief.slug not in (artifacts or []):
        # G3 hands off automatically only what is already the author's: a brief only proposed (by a lens,
        # Sol or an import) is put before her at G2, or on the G3 card itself (then G3 waits for her verdict).
        return [
            Missing(
                code="brief-ratified",
                what="The decision brief, ratified by you",
                reason=f"the decision brief {brief.slug} is {brief.status}, not ratified by the author: ratify it "
                f"at G2 or put it on the G3 card (artifacts: [{brief.slug!r}])",
                action=Action(kind="hand-off", label="Hand off to drafting"),
            )
        ]
    return []


def _gate_step(book, meta: LoopMeta) -> list[Missing]:
    """What the current gate itself needs once nothing blocks it: the card raised (by Sol, or by her at G3)."""
    gate = meta.gate
    if (
        gate == "G1.5"
        and not ThrustCandidate.objects.filter(
            session__book=book, status__in=[ThrustCandidate.Status.PROPOSED, ThrustCandidate.Status.SELECTED]
        ).exists()
    ):
        return [
            Missing(
                code="thrusts",
                what="Thrust candidates to choose among",
                reason="G1.5 ratifies a thrust candidate, and there is none",
                action=_run("thrusts", "Ask Terra for thrust candidates"),
            )
        ]
    if gate == "G3":
        return [
            Missing(
                code="ask-gate",
                what="Asking for G3: the hand-off to drafting",
                reason="G3 waits to be asked for",
                action=Action(kind="hand-off", label="Hand off to drafting"),
            )
        ]
    return [
        Missing(
            code="ask-gate",
            what=f"{gate} raised for your decision",
            reason=f"{gate} waits to be asked for (Sol raises it)",
            action=_run(SOL_STEP, f"Ask Sol to raise {gate}"),
        )
    ]


def gate_missing(book: Book) -> dict:
    """For the loop's current gate, everything still missing before it can pass, in order, each with its
    action: her verdict on a waiting card; the loop paused at a bound; queued re-runs; then what the gate's
    own rule refuses for (G2, G3); then asking for the gate. Empty once handed off (or before the loop)."""
    meta = LoopMeta.objects.filter(book=book).first()
    if meta is None:
        return {"gate": None, "status": None, "started": False, "missing": []}
    out = {"gate": meta.gate, "status": meta.status, "started": True, "missing": []}
    if meta.status == LoopStatus.HANDED_OFF:
        return out
    missing: list[Missing] = []
    card = pending_card(book)
    if card is not None and card.approval_id and card.approval.status == "pending":
        missing.append(
            Missing(
                code="decision",
                what=f"Your decision on the {card.gate} card" if card.kind == "gate" else "Your decision",
                reason=f"an option card already waits for the author ({card.gate}: {card.summary})",
                action=Action(
                    kind="link", href=reverse("approvals:decision", args=[card.approval_id]), label="Review and decide"
                ),
            )
        )
        out["missing"] = [m.as_dict() for m in missing]
        return out
    if meta.status in {LoopStatus.PAUSED_AT_BOUND, LoopStatus.STALLED_AT_CAP}:
        missing.append(
            Missing(
                code="paused",
                what=f"The loop paused at its {meta.bound or 'cost'} limit: extend it or close the discovery",
                reason=f"the loop is {meta.status} at the {meta.bound} bound",
                action=_loop_link(book, "counters-h", "See the limits"),
            )
        )
    for lens in queued_rerun_lenses(book):
        missing.append(
            Missing(
                code="rerun",
                what=f"The {lens} lens's re-run of what changed",
                reason=f"lens {lens} has a queued re-run",
                action=_loop_link(book, "counters-h", "See the queued re-runs"),
            )
        )
    rule = g2_missing(book) if meta.gate == "G2" else g3_missing(book, []) if meta.gate == "G3" else []
    if meta.gate == "G3" and [m.code for m in rule] == ["brief-ratified"]:
        rule = []  # the hand-off puts the proposed brief on the card: her approval there ratifies it
        missing.append(
            Missing(
                code="brief-ratified",
                what="The decision brief, ratified by you (your approval at the hand-off ratifies it)",
                reason="the decision brief is only proposed",
                action=_loop_link(book, "blackboard-h", "Read the brief"),
            )
        )
    missing.extend(rule)
    if not [m for m in missing if m.code not in ("brief-ratified",)]:
        missing.extend(_gate_step(book, meta))
    out["missing"] = [m.as_dict() for m in missing]
    return out


def missing_panel(book: Book) -> dict:
    """The book page's panel: what the current gate still needs (``gate_missing``)."""
    return {"gate_missing": gate_missing(book)}
