"""Reopening discovery after hand-off: a draft changed direction, and the author takes the loop back to a gate.

Impact before blast, as for every change that takes the loop back: ``discovery_reopen_impact`` says first what a
reopen at G0, G1, G1.5, G2 or G3 touches (the gates to pass again, each with the decision that passed it, the
ratified slots those gates ratified, the governing charter and the chosen thrust, the chapters, and the
cascade preview of the parts downstream), and changes nothing. ``discovery_reopen`` is her decision, with a
rationale: without ``confirm`` it is a 409 ``reopens_discovery`` carrying the impact.

Nothing is deleted. The earlier hand-off, the charter, the brief and every decision stay in the log. The brief
that was handed off is kept as a copy of its own (``earlier-brief-<n>``, stale, its version and content digest
named in the reopen's row) and steps aside, so the new hand-off goes through G3 with a new brief the author
ratifies. The loop resumes at the gate (its status recomputed), the conversation reopens (the agents work again),
and the chapters and their text revisions stay: the next hand-off updates their titles and specs from the new
brief's chapter plan (``hand_off_to_drafting``). The reopen is one decision-log row ratified by the author.
"""

from __future__ import annotations

from django.db import transaction

from approvals.models import Approval, DecisionLogEntry, Gate, Reversibility, Verdict
from approvals.services import decision_log_append
from discovery.access import BookAccess
from discovery.models import Chapter, ChapterRevision, DiscoverySession, ThrustCandidate
from discovery.selectors import VIEW_PAGE
from discovery.signals import person_acted
from novelgraph.core.digest import fingerprint
from novelgraph.core.errors import Conflict, Forbidden, Invalid

from ..models import (
    GATE_ORDER,
    ArtifactStatus,
    BlackboardArtifact,
    CardStatus,
    LoopMeta,
    LoopStatus,
    OptionCard,
    TraceNode,
    TraceStatus,
)
from ..requirements import decision_brief, governing_charter
from .base import lock_meta, refresh
from .cascade import cascade_preview

REOPEN_SUBJECT = "discovery-reopen"
KEPT_BRIEF = "earlier-brief-{n}"
GATE_WORDS = {
    "G0": "the premise",
    "G1": "genre and series fit",
    "G1.5": "the chosen story thrust",
    "G2": "the Story Charter",
    "G3": "the hand-off to drafting",
}


def reopen_gate(gate: str | None) -> str:
    """The gate a reopen goes back to: one of the loop's gates (422 naming ``gate`` otherwise)."""
    if gate not in GATE_ORDER:
        raise Invalid(f"gate must be one of {', '.join(GATE_ORDER)}", field="gate")
    return str(gate)


def reopen_allowed(access: BookAccess) -> None:
    """Only the book's author, as a person, reopens her discovery (never an agent key, an editor or staff)."""
    if not access.is_author or access.is_agent:
        raise Forbidden(
            f"{access.role} cannot reopen this book's discovery: only its author decides that", code="author_only"
        )


def _passed_rows(book, gates: list[str]) -> dict[str, dict]:
    """The newest decision-log row that passed each gate (its earlier decision stays in the log)."""
    rows: dict[str, dict] = {}
    for sequence, gate, decision, ratified_by, ts in (
        DecisionLogEntry.objects.filter(book=book, gate__in=gates, subject_type="loop-option-card", decision="approve")
        .order_by("-sequence")
        .values_list("sequence", "gate", "decision", "ratified_by", "ts")
    ):
        rows.setdefault(
            gate, {"sequence": sequence, "decision": decision, "ratified_by": ratified_by, "ts": ts.isoformat()}
        )
    return rows


def _ratified_slots(book, gates: list[str]) -> list[BlackboardArtifact]:
    """The ratified slots the gates from the reopened one on ratified (their cards' slots), and the brief."""
    slugs: set[str] = set()
    for artifacts in OptionCard.objects.filter(
        book=book, gate__in=gates, status__in=[CardStatus.DECIDED, CardStatus.AUTO_PASSED], verdict="approve"
    ).values_list("artifacts", flat=True):
        slugs.update(artifacts or [])
    brief = decision_brief(book)
    if brief is not None:
        slugs.add(brief.slug)
    return list(
        BlackboardArtifact.objects.filter(book=book, slug__in=slugs, status=ArtifactStatus.RATIFIED).order_by("slug")
    )


def _chapters(book) -> tuple[list[dict], int]:
    """The book's chapters (the first page), each with its revisions and the words of its latest text."""
    chapters = list(Chapter.objects.filter(book=book).order_by("number")[:VIEW_PAGE])
    latest: dict = {}
    for chapter_id, number, words in (
        ChapterRevision.objects.filter(chapter__in=chapters)
        .order_by("chapter_id", "number")
        .values_list("chapter_id", "number", "words")
    ):
        latest[chapter_id] = (number, words)
    rows = [
        {
            "number": c.number,
            "title": c.title,
            "revisions": latest.get(c.pk, (0, 0))[0],
            "words": latest.get(c.pk, (0, 0))[1],
        }
        for c in chapters
    ]
    return rows, Chapter.objects.filter(book=book).count()


def _trace_seeds(book, meta: LoopMeta, gate: str, slots: list[BlackboardArtifact]) -> list[str]:
    """Where the cascade preview starts: the premise for G0 and G1, else the nodes bound to the slots touched."""
    active = TraceNode.objects.filter(book=book, status=TraceStatus.ACTIVE)
    if GATE_ORDER.index(gate) <= GATE_ORDER.index("G1"):
        return list(active.filter(node_id=meta.trace_root).values_list("node_id", flat=True))
    return list(active.filter(artifact__in=slots).order_by("node_id").values_list("node_id", flat=True))


def _downstream(book, seeds: list[str]) -> dict:
    """The union of the cascade previews from ``seeds`` (reads only; nothing goes stale)."""
    affected: dict[str, dict] = {}
    lenses: set[str] = set()
    for seed in seeds:
        preview = cascade_preview(book=book, seed=seed)
        for item in preview["affected"]:
            affected.setdefault(item["node_id"], item)
        lenses.update(preview["lenses"])
    labels = dict(TraceNode.objects.filter(book=book, node_id__in=list(affected)).values_list("node_id", "label"))
    items = [{**a, "label": labels.get(a["node_id"]) or a["artifact"] or a["node_id"]} for a in affected.values()]
    return {"seeds": seeds, "affected": items[:VIEW_PAGE], "affected_count": len(items), "lenses": sorted(lenses)}


def discovery_reopen_impact(*, book, gate: str) -> dict:
    """What reopening the handed-off discovery at ``gate`` touches. Reads only; a loop that is not handed off
    is a 409 ``not_handed_off`` (a gate before the current one is reached by the verdicts there)."""
    gate = reopen_gate(gate)
    meta = LoopMeta.objects.filter(book=book).first()
    if meta is None or meta.status != LoopStatus.HANDED_OFF:
        raise Conflict(
            "this book's discovery is not handed off to drafting: there is nothing to reopen",
            code="not_handed_off",
            field="gate",
        )
    gates = GATE_ORDER[GATE_ORDER.index(gate) :]
    passed = _passed_rows(book, gates)
    slots = _ratified_slots(book, gates)
    brief = decision_brief(book)
    charter = governing_charter(book) if GATE_ORDER.index(gate) <= GATE_ORDER.index("G2") else None
    thrust = (
        ThrustCandidate.objects.filter(session__book=book, status=ThrustCandidate.Status.SELECTED)
        .order_by("-created_at")
        .first()
        if GATE_ORDER.index(gate) <= GATE_ORDER.index("G1.5")
        else None
    )
    chapters, chapters_count = _chapters(book)
    return {
        "gate": gate,
        "gates": [{"gate": g, "what": GATE_WORDS[g], "passed_by": passed.get(g)} for g in gates],
        "artifacts": [
            {
                "slug": a.slug,
                "type": a.type,
                "version": a.version,
                "effect": "kept as a copy, and set aside: the new hand-off needs a new brief you ratify"
                if brief is not None and a.pk == brief.pk
                else "stays ratified until its gate is passed again",
            }
            for a in slots
        ],
        "charter": {"id": str(charter.pk), "version": charter.version, "main_thrust": charter.main_thrust}
        if charter
        else None,
        "thrust": {"id": str(thrust.pk), "title": thrust.title} if thrust else None,
        "chapters": chapters,
        "chapters_count": chapters_count,
        "downstream": _downstream(book, _trace_seeds(book, meta, gate, slots)),
    }


def _keep_brief(book, meta: LoopMeta, brief: BlackboardArtifact | None, reason: str) -> dict | None:
    """The handed-off brief, kept as a stale copy of its own; the live slot steps aside (stale, version + 1)."""
    if brief is None:
        return None
    n = BlackboardArtifact.objects.filter(book=book, slug__startswith="earlier-brief-").count() + 1
    kept = BlackboardArtifact.objects.create(
        book=book,
        slug=KEPT_BRIEF.format(n=n),
        type=brief.type,
        status=ArtifactStatus.STALE,
        version=brief.version,
        produced_by=brief.produced_by,
        lens=brief.lens,
        round_last_touched=meta.round,
        stale_reason=reason[:2000],
        untrusted=brief.untrusted,
        data_class=brief.data_class,
        content=brief.content,
    )
    kept_at = {"slug": brief.slug, "version": brief.version, "content_digest": fingerprint(brief.content)}
    brief.status = ArtifactStatus.STALE
    brief.stale_reason = reason[:2000]
    brief.version += 1
    brief.round_last_touched = meta.round
    brief.save(update_fields=["status", "stale_reason", "version", "round_last_touched", "updated_at"])
    return {**kept_at, "kept_as": kept.slug}


def discovery_reopen(*, access: BookAccess, gate: str | None, rationale: str, confirm: bool = False) -> dict:
    """The author reopens her handed-off discovery at ``gate``, with a rationale (422 naming ``gate`` or
    ``rationale``). Without ``confirm`` it is a 409 ``reopens_discovery`` carrying the impact, so she sees it first.
    The loop goes back to the gate and resumes, the conversation reopens, the handed-off brief is kept and steps
    aside; nothing is deleted. One decision-log row, ratified by her."""
    reopen_allowed(access)
    gate = reopen_gate(gate)
    rationale = (rationale or "").strip()
    if not rationale:
        raise Invalid("say why the discovery reopens: a rationale is required", field="rationale")
    book = access.book
    with transaction.atomic():
        meta = lock_meta(book)
        impact = discovery_reopen_impact(book=book, gate=gate)
        if not confirm:
            raise Conflict(
                f"reopening the discovery at {gate} takes the loop back from hand-off: look at what it touches, "
                "then confirm with confirm=true",
                code="reopens_discovery",
                field="confirm",
                impact=impact,
            )
        reason = f"discovery reopened at {gate}: {rationale}"
        kept = _keep_brief(book, meta, decision_brief(book), reason)
        waiting = list(OptionCard.objects.select_for_update(of=("self",)).filter(book=book, status=CardStatus.PENDING))
        OptionCard.objects.filter(pk__in=[c.pk for c in waiting]).update(status=CardStatus.SUPERSEDED)
        Approval.objects.filter(
            pk__in=[c.approval_id for c in waiting if c.approval_id], status=Approval.Status.PENDING
        ).update(status=Approval.Status.SUPERSEDED)
        session = DiscoverySession.objects.filter(book=book).order_by("-created_at").first()
        if session is not None and session.status == DiscoverySession.Status.CLOSED:
            session.status = DiscoverySession.Status.ACTIVE
            session.save(update_fields=["status", "updated_at"])
        meta.gate = gate
        meta.status = LoopStatus.WORKING
        meta.bound = ""
        refresh(meta)
        entry = decision_log_append(
            book=book,
            decision=Verdict.REDIRECT,
            subject_type=REOPEN_SUBJECT,
            subject_id=book.pk,
            rationale=rationale,
            ratified_by_user=access.user,
            gate=Gate(gate),
            reversibility_class=Reversibility.REVERSIBLE,
            detail={
                "reopened_at": gate,
                "gates": [g["gate"] for g in impact["gates"]],
                "handed_off_by": (impact["gates"][-1]["passed_by"] or {}).get("sequence"),
                "slots": [a["slug"] for a in impact["artifacts"]],
                "brief": kept,
                "chapters_count": impact["chapters_count"],
                "downstream_count": impact["downstream"]["affected_count"],
                "session": str(session.pk) if session else None,
                "loop": {"gate": meta.gate, "status": meta.status},
            },
        )
        person_acted.send(sender=type(book), book=book, user=access.user, act="reopen")
    return {"gate": meta.gate, "status": meta.status, "decision_sequence": entry.sequence, "impact": impact}


def book_reopened(book) -> bool:
    """Whether the book's discovery was ever reopened after a hand-off (the next hand-off then replans)."""
    return DecisionLogEntry.objects.filter(book=book, subject_type=REOPEN_SUBJECT).exists()
