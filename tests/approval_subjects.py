"""Real subjects for approval tests: charters, claims and research proposed through their services."""

from __future__ import annotations

from discovery.access import BookAccess, book_access
from discovery.models import Book, StoryCharter
from discovery.schemas import CharterIn
from discovery.services.charters import charter_propose
from library.schemas import ResearchIn
from library.services import research_propose
from novelgraph.core.auth import Principal

from .factories import DiscoverySessionFactory, KnowledgeChunkFactory, ScratchpadEntryFactory, TurnFactory

CHARTER = {
    "main_thrust": "A keeper must prove a drowning was murder.",
    "reader_promise": ["a fair-play puzzle"],
    "protagonist": {"name": "Mara", "want": "to be believed"},
    "central_conflict": "The harbour master wants the case closed.",
}


def as_sol(book: Book) -> BookAccess:
    return book_access(Principal(user=book.owner, key_role="sol"), book)


def sources_of(book: Book) -> dict:
    """A turn, a scratchpad entry, a library chunk and a pending research item of the book."""
    session = DiscoverySessionFactory(book=book)
    turn = TurnFactory(session=session, ordinal=1, content="Mara lies to everyone, even to herself.")
    entry = ScratchpadEntryFactory(
        session=session, sequence=1, agent_role="luna", kind="observation", content="The tide tables disagree."
    )
    chunk = KnowledgeChunkFactory(citation="Craft notes, fair play", content="Show the reader every clue.")
    research = research_propose(
        access=as_sol(book),
        payload=ResearchIn(
            url="https://example.org/tides",
            title="Tide tables of the northern coast",
            claim="High tide that morning was at 06:12.",
            citation="Coastal Almanac 2025, p. 14",
        ),
    )
    return {"turn": turn, "entry": entry, "chunk": chunk, "research": research}


def refs_to(sources: dict) -> list[dict]:
    return [{"type": kind, "id": str(obj.pk)} for kind, obj in sources.items()]


def propose_charter(book: Book, *, source_refs: list | None = None, thrust: str | None = None) -> StoryCharter:
    """Sol proposes a charter through the discovery service: it comes with a pending approval."""
    data = dict(CHARTER, main_thrust=thrust or CHARTER["main_thrust"])
    return charter_propose(access=as_sol(book), payload=CharterIn(**data, source_refs=source_refs or []))
