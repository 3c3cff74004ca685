"""The reads a book's pages share that reach beyond discovery's ground (its pending approvals, its research, the
log's decisions): the pages call these, and make no query of their own.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from django.db.models import Count, Q
from django.urls import reverse

from approvals.models import Approval, DecisionLogEntry
from library.models import ResearchItem
from novelgraph.core.errors import NotFound

from .book_nav import book_links
from .models import (
    CLAIM_STATEMENT,
    Book,
    Chapter,
    DiscoverySession,
    KnowledgeClaim,
    Observation,
    ScratchpadEntry,
    Series,
    SessionQuestion,
    StoryCharter,
    Turn,
)
from .selectors import VIEW_PAGE, bounded, canon_bases, observation_rows

RECENT_ACTIVITY = 12
# A decision's subject in words (the log stores the type's internal name).
SUBJECT_WORDS = {
    "charter": "the Story Charter",
    "claim": "a canon claim",
    "research": "research",
    "loop-option-card": "a gate card",
}

def recent_activity(book_ids: list) -> list[dict]:
    """The latest turns, scratchpad entries and decisions across these books (three queries)."""
    if not book_ids:
        return []
    turns = Turn.objects.filter(session__book_id__in=book_ids).select_related("session__book")
    entries = ScratchpadEntry.objects.filter(session__book_id__in=book_ids).select_related("session__book")
    decisions = DecisionLogEntry.objects.filter(book_id__in=book_ids).select_related("book")
    items = chain(
        (
            {
                "when": t.created_at,
                "book": t.session.book,
                "what": "turn",
                "who": t.role,
                "text": t.content,
                "href": f"{reverse('discovery:scratchpad', args=[t.session.book_id])}#turn-{t.pk}",
            }
            for t in turns.order_by("-created_at")[:RECENT_ACTIVITY]
        ),
        (
            {
                "when": e.created_at,
                "book": e.session.book,
                "what": e.kind,
                "who": e.agent_role,
                "text": e.content,
                "href": f"{reverse('discovery:scratchpad', args=[e.session.book_id])}#entry-{e.pk}",
            }
            for e in entries.order_by("-created_at")[:RECENT_ACTIVITY]
        ),
        (
            {
                "when": d.ts,
                "book": d.book,
                "what": "decision",
                "who": d.ratified_by.split(":", 1)[-1],
                "text": f"{d.get_decision_display()} {SUBJECT_WORDS.get(d.subject_type, 'a decision')}: {d.rationale}",
                "href": book_links(d.book_id)["log"],
            }
            for d in decisions.order_by("-ts")[:RECENT_ACTIVITY]
        ),
    )
    return sorted(items, key=lambda item: item["when"], reverse=True)[:RECENT_ACTIVITY]


def with_observations(turns: list[dict]) -> list[dict]:
    """Each turn of a page with its observations (one query; a turn carries at most a turn's worth)."""
    by_turn: dict[str, list[dict]] = {}
    for obs in observation_rows(Observation.objects.filter(turn_id__in=[t["id"] for t in turns])):
        by_turn.setdefault(str(obs["turn_id"]), []).append(obs)
    for turn in turns:
        turn["observations"] = by_turn.get(str(turn["id"]), [])
        turn["waiting"] = sum(1 for obs in turn["observations"] if obs["status"] == "working")
    return turns


def canon_claims_page(bases: list[dict], offset: int) -> tuple[list[dict], bool]:
    """A page of the approved claims of the canon bases among ``bases``, oldest first, with their base's name."""
    names = {b["id"]: b["name"] for b in canon_bases(bases)}
    claims = KnowledgeClaim.objects.filter(base_id__in=list(names), status=KnowledgeClaim.Status.APPROVED)
    page, more = bounded(claims.order_by("created_at", "id").values(*CLAIM_STATEMENT), VIEW_PAGE, offset)
    for claim in page:
        claim["base_name"] = names.get(str(claim["base_id"]), "")
    return page, more


def proposed_claim_count(bases: list[dict]) -> int:
    """How many claims wait for the author in these bases."""
    return KnowledgeClaim.objects.filter(
        base_id__in=[b["id"] for b in bases], status=KnowledgeClaim.Status.PROPOSED
    ).count()


def pending_approval_count(book: Book) -> int:
    return Approval.objects.filter(book=book, status=Approval.Status.PENDING).count()


def current_question(session: DiscoverySession | None) -> SessionQuestion | None:
    """The question Sol put last in the session (None before the first)."""
    return SessionQuestion.objects.filter(session=session).order_by("-sequence").first()


def research_counts(book: Book) -> dict[str, int]:
    """The book's research items by status."""
    return dict(
        ResearchItem.objects.filter(book=book).values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )


def opening_chapter(book: Book) -> Chapter | None:
    """Chapter 1, which the G3 hand-off makes from the decision brief."""
    return Chapter.objects.filter(book=book, number=1).first()


def conversation_turns(book: Book) -> list[Turn]:
    """Every turn of the book's sessions, in the conversation's order, each with ``waiting``: how many of its
    observations still wait for the author's act (one query)."""
    return list(
        Turn.objects.filter(session__book=book)
        .annotate(waiting=Count("observations", filter=Q(observations__status=Observation.Status.WORKING)))
        .order_by("session__created_at", "session_id", "ordinal")
    )


def book_observation_get(book: Book, observation_id: Any) -> Observation:
    """An observation of this book (404 otherwise)."""
    observation = Observation.objects.filter(pk=observation_id, session__book=book).first()
    if observation is None:
        raise NotFound("observation not found")
    return observation


def book_turn_get(book: Book, turn_id: Any) -> Turn:
    """A turn of this book (404 otherwise)."""
    turn = Turn.objects.filter(pk=turn_id, session__book=book).first()
    if turn is None:
        raise NotFound("turn not found")
    return turn


def series_of(user) -> Any:
    return Series.objects.filter(owner=user).order_by("title")


def charter_to_start_from(book: Book) -> StoryCharter | None:
    """The version a new one starts from: the approved one, else the newest."""
    charters = StoryCharter.objects.filter(book=book)
    return charters.filter(status=StoryCharter.Status.APPROVED).first() or charters.order_by("-version").first()


def charter_versions(book: Book) -> list[StoryCharter]:
    """Every version of the book's charter, newest first."""
    return list(StoryCharter.objects.filter(book=book).order_by("-version"))
