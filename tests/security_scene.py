"""A book with one of everything an API path can name, for the fuzzer and the authorisation matrix.

Built with the factories (plain rows) plus the loop API (its objects come from its services).
``scene_ids(...)`` answers ``{path parameter name: value}`` for every path parameter the API has.
"""

from __future__ import annotations

from discovery.loop.models import LoopMeta  # noqa: F401  (the loop app must be installed)
from discovery.loop.services import loop_ensure
from discovery.models import Chapter, ChapterRevision, CodexEntry, ContinuityFinding

from .factories import (
    AgentRunFactory,
    ApprovalFactory,
    ContextDossierFactory,
    DiscoverySessionFactory,
    HandoffFactory,
    KnowledgeBaseFactory,
    KnowledgeClaimFactory,
    KnowledgeSourceFactory,
    ObservationFactory,
    ResearchItemFactory,
    StoryCharterFactory,
    TurnFactory,
)


def build_scene(book, sol_api) -> dict:
    """Objects of ``book`` for every path parameter; ``sol_api`` builds the loop objects through the API."""
    session = DiscoverySessionFactory(book=book)
    charter = StoryCharterFactory(book=book)
    base = KnowledgeBaseFactory(scope="book", owner_id=str(book.pk))
    claim = KnowledgeClaimFactory(base=base)
    dossier = ContextDossierFactory(book=book)
    handoff = HandoffFactory(book=book, session=session, dossier=dossier)
    research = ResearchItemFactory(book=book)
    approval = ApprovalFactory(book=book)
    source = KnowledgeSourceFactory()
    ids = {
        "book_id": book.pk,
        "series_id": book.series_id,
        "session_id": session.pk,
        "charter_id": charter.pk,
        "claim_id": claim.pk,
        "dossier_id": dossier.pk,
        "handoff_id": handoff.pk,
        "research_id": research.pk,
        "approval_id": approval.pk,
        "source_id": source.pk,
        "gate": "G0",
        "run_id": AgentRunFactory(book=book).pk,
        "observation_id": ObservationFactory(turn=TurnFactory(session=session)).pk,
        "turn_id": TurnFactory(session=session).pk,  # a turn with nothing waiting: confirming all of it changes nothing
    }
    # The manuscript (issue 28): chapter 1 with a revision, an entry, a finding of Luna's check.
    chapter = Chapter.objects.create(book=book, number=1, title="The Bell")
    text = "Mara rang the bell for Hale."
    revision = ChapterRevision.objects.create(chapter=chapter, number=1, text=text, words=6, created_by="author")
    ids["number"] = 1
    ids["entry_id"] = CodexEntry.objects.create(book=book, name="Mara", kind="person").pk
    ids["finding_id"] = ContinuityFinding.objects.create(
        chapter=chapter,
        revision=revision,
        kind="not-in-canon",
        key="name:hale",
        span_start=23,
        span_end=27,
        quote="Hale",
        message="“Hale” is named here, and no codex entry or alias knows it.",
    ).pk
    loop = f"/books/{book.pk}/loop"
    # The session above is a factory row, so the book's loop is begun as discovery_start begins it (reads never do).
    loop_ensure(book=book)
    nodes = sol_api.get(f"{loop}/nodes").json()
    items = nodes["items"] if isinstance(nodes, dict) and "items" in nodes else nodes
    if items:
        ids["node_id"] = items[0]["id"]
    question = sol_api.post(f"{loop}/questions", {"question": "Who lit the lamp?", "target_discipline": "sol"})
    if question.status_code == 201:
        ids["question_id"] = question.json()["id"]
    return ids
