"""Shared reads of a book's loop (API, pages, export)."""

from __future__ import annotations

from django.db.models import QuerySet
from django.urls import reverse

from approvals.chain import format_ts
from approvals.models import Gate
from approvals.selectors import decision_log_for
from discovery.models import Book, KnowledgeBase, Turn
from discovery.selectors import VIEW_PAGE, bounded
from novelgraph.core.pagination import rest_link
from novelgraph.core.words import AGENT_NAMES

from .lint import LintReport, lint
from .models import (
    GATE_ORDER,
    SCHEMA_VERSION,
    BlackboardArtifact,
    Candidate,
    CardStatus,
    LensRerun,
    LensReview,
    LoopMeta,
    LoopStatus,
    OpenQuestion,
    OptionCard,
    PlanNode,
    QuestionStatus,
    RerunStatus,
    RosterEntry,
    TraceEdge,
    TraceNode,
    TraceStatus,
    ValidationPlanItem,
)
from .roster import DEGRADE
from .serializers import (
    ARTIFACT,
    CARD,
    META,
    PLAN_NODE,
    QUESTION,
    RERUN,
    REVIEW,
    TRACE_EDGE,
    TRACE_NODE,
    VALIDATION_ITEM,
)


def gate_steps(meta: LoopMeta | None) -> list[dict]:
    """The stepper G0 to G3: each gate passed, current or upcoming (all passed once handed off)."""
    if meta is None:
        return []
    current = GATE_ORDER.index(meta.gate)
    handed_off = meta.status == LoopStatus.HANDED_OFF
    steps = []
    for i, (gate, name) in enumerate(Gate.choices):
        state = "passed" if handed_off or i < current else "current" if i == current else "upcoming"
        steps.append({"gate": gate, "name": name, "state": state})
    return steps


def loop_panel(book: Book) -> dict:
    """The loop on the book's page: its meta (None before the discovery starts), the gate stepper, and whether the
    discovery was handed off at G3."""
    meta = LoopMeta.objects.filter(book=book).first()
    return {
        "loop": meta,
        "gates": gate_steps(meta),
        "handed_off": meta is not None and meta.status == LoopStatus.HANDED_OFF,
    }


def loop_meta(book: Book) -> LoopMeta | None:
    """The book's meta, or None when its discovery (so its loop) has not started. Never creates it."""
    return LoopMeta.objects.filter(book=book).first()


def roster_status(book: Book) -> list[dict]:
    """The roster with what is present: optional lenses detect and degrade when absent."""
    library = KnowledgeBase.objects.filter(scope="literary").exists()
    reviewed = set(LensReview.objects.filter(book=book).values_list("lens_id", flat=True))
    out = []
    for entry in RosterEntry.objects.all().order_by("kind", "slug"):
        present = entry.slug in reviewed or entry.kind != "lens" or (entry.slug == "research" and library)
        out.append(
            {
                "slug": entry.slug,
                "name": entry.name,
                "kind": entry.kind,
                "agent_role": entry.agent_role,
                "required": entry.required,
                "required_at_gate": entry.required_at_gate,
                "state": "present" if present else ("missing" if entry.required else "degraded (absent)"),
                # In words: what the discovery does without an absent optional lens.
                "degrade": ""
                if present or entry.required
                else DEGRADE.get(entry.slug, "Absent: the discovery goes on without its review"),
            }
        )
    return out


def loop_view(book: Book) -> dict:
    """The loop as read: nothing is written. A card whose approval lapsed is not shown as waiting; the
    next write of the loop supersedes it and puts a fresh card (with a fresh impact preview) before the
    author."""
    meta = loop_meta(book)
    card = pending_card(book)
    if card is not None and card.approval_id and card.approval.status == "superseded":
        card = None
        if meta.status == LoopStatus.AWAITING_HUMAN:
            meta.status = LoopStatus.WORKING  # shown, not saved
    queued, more = bounded(
        reruns_of(book).filter(status=RerunStatus.QUEUED).values("id", "lens", "artifacts", "cost"), VIEW_PAGE
    )
    # Each re-run's slots are capped too (a cascade the author confirmed past the breaker may queue many).
    queued = [rerun_capped(book.pk, rerun) for rerun in queued]
    return {
        "book_id": book.pk,
        "meta": meta,
        "pending_card": card,
        "saturation": saturation_check(book),
        # A page of the queued re-runs (oldest first, as ``reruns_of``); ``more`` says whether others wait.
        "queued_reruns": queued,
        "more": {"queued_reruns": more},
        # The roster is bounded by construction: one row per lens of the fixed roster (``roster.py``).
        "roster": roster_status(book),
    }


def nodes_of(book: Book) -> QuerySet[PlanNode]:
    return PlanNode.objects.filter(book=book).order_by("depth", "created_at")


def candidates_of(node: PlanNode) -> QuerySet[Candidate]:
    return Candidate.objects.filter(node=node).order_by("created_at")


def questions_of(book: Book, status: str | None = None) -> QuerySet[OpenQuestion]:
    qs = OpenQuestion.objects.filter(book=book).order_by("created_at")
    return qs.filter(status=status) if status else qs


def trace_nodes_of(book: Book) -> QuerySet[TraceNode]:
    return TraceNode.objects.filter(book=book).select_related("artifact").order_by("created_at", "node_id")


def trace_edges_of(book: Book, active: bool | None = None) -> QuerySet[TraceEdge]:
    qs = TraceEdge.objects.filter(book=book).order_by("created_at")
    return qs if active is None else qs.filter(active=active)


def validation_plan_of(book: Book) -> QuerySet[ValidationPlanItem]:
    return ValidationPlanItem.objects.filter(book=book).order_by("created_at", "id")


def artifacts_of(book: Book) -> QuerySet[BlackboardArtifact]:
    return BlackboardArtifact.objects.filter(book=book).select_related("parent").order_by("slug")


def reviews_of(book: Book) -> QuerySet[LensReview]:
    return LensReview.objects.filter(book=book).order_by("created_at")


def cards_of(book: Book) -> QuerySet[OptionCard]:
    return OptionCard.objects.filter(book=book).order_by("-created_at")


def reruns_of(book: Book) -> QuerySet[LensRerun]:
    return LensRerun.objects.filter(book=book).order_by("created_at", "id")


def loop_link(book_id, route: str, **query) -> str:
    """The URL of a paged loop route from its second page (``limit`` and ``offset`` one page each)."""
    return rest_link(f"books/{book_id}/loop/{route}", **query)


def meta_constraints_page(meta: LoopMeta) -> tuple[list, int, str | None]:
    """The first ``VIEW_PAGE`` constraints the author recorded in the loop (oldest first), how many there are,
    and the paged route with the rest (``GET .../loop/constraints``), or None."""
    recorded = list(meta.constraints or [])
    link = loop_link(meta.book_id, "constraints") if len(recorded) > VIEW_PAGE else None
    return recorded[:VIEW_PAGE], len(recorded), link


# The author's words on a card that the next card answers: her steer (redirect) and her constraint.
AUTHOR_WORDS = ("steer", "constraint")
ANSWERING_CARDS = ("gate", "consent")


def open_author_words(meta: LoopMeta) -> list[dict]:
    """The steers and constraints the author gave on a card that no gate card raised since has answered, oldest
    first: the next card raised answers them (it names them, ``payload.answers``), whoever raises it."""
    given = [i for i in meta.constraints or [] if isinstance(i, dict) and i.get("kind") in AUTHOR_WORDS]
    if not given:
        return []
    newest = (
        OptionCard.objects.filter(book_id=meta.book_id, kind__in=ANSWERING_CARDS)
        .order_by("-created_at")
        .values_list("pk", flat=True)
        .first()
    )
    return [
        {"kind": i["kind"], "text": i.get("text", ""), "gate": i.get("gate", "")}
        for i in given
        if str(i.get("card")) == str(newest)
    ]


def gate_set_aside(meta: LoopMeta) -> str | None:
    """"park" or "abandon" when the author set the current gate's card aside with that verdict and has not spoken
    since: the controller does not ask for the gate again until her next turn (a parked decision waits while the
    rest of the discovery goes on; an abandoned line waits for her to say where the book goes now)."""
    card = (
        OptionCard.objects.filter(book_id=meta.book_id, gate=meta.gate, kind__in=ANSWERING_CARDS)
        .order_by("-created_at")
        .only("status", "verdict", "updated_at")
        .first()
    )
    if card is None or card.status != CardStatus.DECIDED or card.verdict not in ("park", "abandon"):
        return None
    spoke = Turn.objects.filter(
        session__book_id=meta.book_id, role__in=("author", "editor"), created_at__gt=card.updated_at
    ).exists()
    return None if spoke else card.verdict


def rerun_capped(book_id, rerun: dict) -> dict:
    """A re-run as a response carries it: the first ``VIEW_PAGE`` of its ``artifacts``, ``artifacts_count`` and
    ``next.artifacts``, the paged route with the rest (``GET .../loop/reruns/{id}/artifacts``)."""
    artifacts = list(rerun.get("artifacts") or [])
    more = len(artifacts) > VIEW_PAGE
    return {
        **rerun,
        "artifacts": artifacts[:VIEW_PAGE],
        "artifacts_count": len(artifacts),
        "next": {"artifacts": loop_link(book_id, f"reruns/{rerun['id']}/artifacts") if more else None},
    }


def impact_capped(book_id, impact: dict | None) -> dict | None:
    """A cascade preview as a response carries it: the first ``VIEW_PAGE`` affected slots, ``affected_count``,
    and ``next.affected``, the paged route with the rest (``GET .../loop/cascade-preview/affected?node=``)."""
    if not impact or "affected" not in impact:
        return impact
    count = len(impact["affected"])
    link = loop_link(book_id, "cascade-preview/affected", node=impact["seed"])
    return {
        **impact,
        "affected": impact["affected"][:VIEW_PAGE],
        "affected_count": count,
        "next": {"affected": link if count > VIEW_PAGE else None},
    }


def loop_state(book: Book) -> dict[str, dict]:
    """The six state files of the export as dicts (tests compare round trips with it). Reads only."""
    meta = LoopMeta.objects.get(book=book)
    nodes = list(nodes_of(book).order_by("depth", "created_at", "id"))
    root = next((n for n in nodes if n.is_root), None)
    return {
        "blackboard": {
            "schema_version": SCHEMA_VERSION,
            "artifacts": [ARTIFACT.record(a) for a in artifacts_of(book)],
            "lens_reviews": [REVIEW.record(r) for r in reviews_of(book).order_by("created_at", "id")],
            "reruns": [RERUN.record(r) for r in reruns_of(book).order_by("created_at", "id")],
        },
        "open-questions": {
            "schema_version": SCHEMA_VERSION,
            "questions": [QUESTION.record(q) for q in questions_of(book).order_by("created_at", "id")],
        },
        "traceability": {
            "schema_version": SCHEMA_VERSION,
            "root": meta.trace_root,
            "leaf_kind": meta.leaf_kind,
            "nodes": [TRACE_NODE.record(n) for n in trace_nodes_of(book)],
            "edges": [TRACE_EDGE.record(e) for e in trace_edges_of(book).order_by("created_at", "id")],
        },
        "decision-log": {
            "schema_version": SCHEMA_VERSION,
            "book_id": str(book.pk),
            "entries": [
                {
                    "schema_version": SCHEMA_VERSION,
                    "sequence": e.sequence,
                    "ts": format_ts(e.ts),
                    "gate": e.gate,
                    "decision": e.decision,
                    "subject_type": e.subject_type,
                    "subject_id": e.subject_id,
                    "ratified_by": e.ratified_by,
                    "reversibility_class": e.reversibility_class,
                    "rationale": e.rationale,
                    "detail": e.detail,
                    "prev_hash": e.prev_hash,
                    "hash": e.hash,
                    "seal": e.seal,
                }
                for e in decision_log_for(book)
            ],
        },
        "meta": {
            **META.record(meta),
            "option_cards": [CARD.record(c) for c in cards_of(book).order_by("created_at", "id")],
        },
        "plan-tree": {
            "schema_version": SCHEMA_VERSION,
            "root": str(root.pk) if root else None,
            "sub_ideas": {
                state: [str(n.pk) for n in nodes if n.sub_idea == state and not n.is_root]
                for state in ("open", "parked", "done")
            },
            "nodes": [PLAN_NODE.record(n) for n in nodes],
            "validation_plan": [VALIDATION_ITEM.record(v) for v in validation_plan_of(book)],
        },
    }


# --- Lint, saturation, the waiting card ------------------------------------------


def pending_card(book) -> OptionCard | None:
    return (
        OptionCard.objects.filter(book=book, status=CardStatus.PENDING)
        .select_related("approval")
        .order_by("created_at")
        .first()
    )


def lint_capped(book: Book, *, strict: bool) -> dict:
    """The lint as ``GET .../loop/lint`` answers it: ``findings`` is the first page (``counts`` counts them
    all), ``next.findings`` the paged route with the rest."""
    lint = trace_lint(book, strict=strict).as_dict()
    more = len(lint["findings"]) > VIEW_PAGE
    lint["findings"] = lint["findings"][:VIEW_PAGE]
    lint["next"] = {"findings": loop_link(book.pk, "lint/findings", strict=str(strict).lower()) if more else None}
    return lint


def trace_lint(book: Book, *, strict: bool) -> LintReport:
    meta = LoopMeta.objects.get(book=book)
    nodes = [
        {"id": node_id, "kind": kind, "label": label}
        for node_id, kind, label in TraceNode.objects.filter(book=book, status=TraceStatus.ACTIVE)
        .order_by("created_at", "node_id")
        .values_list("node_id", "kind", "label")
    ]
    edges = [
        {"from": a, "to": b}
        for a, b in TraceEdge.objects.filter(book=book, active=True)
        .order_by("created_at", "from_id", "to_id")
        .values_list("from_id", "to_id")
    ]
    return lint(nodes=nodes, edges=edges, root=meta.trace_root, leaf_kind=meta.leaf_kind, strict=strict)


def saturation_check(book: Book) -> dict:
    """Saturation = no open or routed questions, a clean strict lint, and a full round that invalidated nothing."""
    meta = LoopMeta.objects.get(book=book)
    reasons = []
    waiting = OpenQuestion.objects.filter(book=book, status__in=[QuestionStatus.OPEN, QuestionStatus.ROUTED]).count()
    if waiting:
        reasons.append(f"{waiting} open or routed question(s)")
    report = trace_lint(book, strict=True)
    if not report.ok:
        reasons.append(f"the strict lint fails ({len(report.failures)} finding(s))")
    if meta.round == 0 or not meta.last_round_clean:
        reasons.append("no full round has yet completed without invalidating anything")
    elif meta.round_invalidated:
        reasons.append("the current round invalidated slots")
    return {"holds": not reasons, "reasons": reasons}


def questions_waiting(books, user, limit: int) -> dict:
    """The inbox's section of the loop's questions routed or surfaced to the author, oldest first, each with the
    loop page's answer form. Two queries."""
    asked = (
        OpenQuestion.objects.filter(book__in=books.values("pk"), target_discipline="author")
        .exclude(status=QuestionStatus.RESOLVED)
        .select_related("book")
        .order_by("created_at", "id")
    )
    total = asked.count()
    items = [
        {
            "book": q.book,
            "text": q.question,
            "note": f"asked by {AGENT_NAMES.get(q.raised_by, q.raised_by)}"
            + (f" ({q.get_kind_display().lower()})" if q.kind != "question" else ""),
            "href": f"{reverse('loop:page', args=[q.book_id])}#question-{q.pk}",
            "action_label": "Answer",
            "confirm_url": "",
        }
        for q in asked[:limit]
    ]
    return {"key": "questions", "title": "Questions for the author", "items": items, "total": total}
