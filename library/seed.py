"""The curated craft library seeded once per store (seed 001).

Original editorial guidance written for NovelGraph and licensed with it (:data:`CURATED_LICENSE`), in
sources ("shelves") of origin ``novelgraph-curated``, each version 1.0.0: the first five passages
(:data:`CURATED_ENTRIES`, applicability general), then the foundations and one shelf per genre
(``library/curated.py``). ``seed_curated_library`` is idempotent, shelf by shelf; the data migrations
(0002, 0005), the ``seed_library`` command and ``post_migrate`` all call it.
"""

from __future__ import annotations

from novelgraph.core.db import tables_exist

from .curated import SHELVES
from .models import KnowledgeChunk, KnowledgeSource

CURATED_ORIGIN = "novelgraph-curated"
CURATED_TITLE = "NovelGraph Curated Craft Library"
CURATED_VERSION = "1.0.0"
CURATED_LICENSE = "Original editorial guidance by the NovelGraph team; free to use within NovelGraph."
# Every passage is the NovelGraph team's own writing, under the project's licence (the README's library section).

CURATED_ENTRIES: list[dict] = [
    {
        "title": "Scene causality",
        "topics": ["scene", "causality", "pacing", "plot"],
        "content": (
            "Each scene should change the situation it inherits, and that change should cause the next "
            "scene. Link scenes with 'therefore' and 'but' rather than 'and then': a character wants "
            "something, acts, meets resistance, and the outcome creates the pressure that drives what "
            "follows. When a scene could be cut without the story noticing, it is usually describing a "
            "state rather than turning one. Check pacing by asking what is different at the end of each "
            "scene and whether the reader can feel why."
        ),
    },
    {
        "title": "Character agency",
        "topics": ["character", "agency", "protagonist", "choice"],
        "content": (
            "Readers invest in characters who choose. Give the protagonist decisions with a cost, taken "
            "under pressure, that visibly shape the plot; let coincidence make trouble but never solve it. "
            "A protagonist who is only carried by events reads as a camera. Track, scene by scene, what the "
            "character wants, what they do about it, and what it costs them, and make sure the climax "
            "turns on a choice only this character could make."
        ),
    },
    {
        "title": "Fair-play mystery",
        "topics": ["mystery", "fair play", "clues", "evidence", "reveal", "twist", "surprise"],
        "content": (
            "In a fair-play mystery the solution must be supported by discoverable evidence placed on the "
            "page before the reveal. The reader should be able, in principle, to reach the answer from "
            "clues the detective also sees; withheld evidence, late-arriving twins and undisclosed "
            "expertise break the contract. Plan each decisive clue's first visible appearance, how it is "
            "camouflaged, and who could have noticed it, and keep that plan beside the outline."
        ),
    },
    {
        "title": "Promise and payoff",
        "topics": ["promise", "payoff", "setup", "foreshadowing", "structure", "twist"],
        "content": (
            "Every opening makes promises about the kind of story, the questions it will answer and the "
            "emotions it will deliver. Each promise needs a payoff, and each significant payoff needs a "
            "setup the reader can look back on. Keep a ledger: when you plant an object, a skill, a threat "
            "or a question, note where it pays off; when a payoff arrives, check that it was earned. "
            "Unpaid promises feel like loose threads; unearned payoffs feel like cheating."
        ),
    },
    {
        "title": "Reader expectations",
        "topics": ["reader", "expectations", "genre", "trust", "conventions"],
        "content": (
            "Genre is a contract with the reader. Know which conventions your readers expect (a body in "
            "a mystery, a happy ending in a romance, escalating stakes in a thriller) and decide "
            "deliberately which to honour and which to subvert. A subversion works when it delivers the "
            "feeling the convention exists to produce by a different route; it fails when it withholds "
            "the feeling. Signal early which contract is in force so that trust is earned, not ambushed."
        ),
    },
]


def curated_shelves() -> list[dict]:
    """Every curated source to seed, in order: the first five passages, then ``library/curated.py``'s shelves."""
    first = {"title": CURATED_TITLE, "applicability": ["general"], "entries": CURATED_ENTRIES}
    return [first, *SHELVES]


def curated_entry_count() -> int:
    return sum(len(shelf["entries"]) for shelf in curated_shelves())


def seed_curated_library(KnowledgeSource, KnowledgeChunk) -> bool:
    """Ensure every curated source and its chunks exist (a shelf already present, by title, is left as it is).

    True when anything was created; seeding again adds nothing.
    """
    present = set(KnowledgeSource.objects.filter(origin=CURATED_ORIGIN).values_list("title", flat=True))
    created = False
    for shelf in curated_shelves():
        if shelf["title"] in present:
            continue
        source = KnowledgeSource.objects.create(
            title=shelf["title"],
            origin=CURATED_ORIGIN,
            license_note=CURATED_LICENSE,
            version=CURATED_VERSION,
        )
        KnowledgeChunk.objects.bulk_create(
            KnowledgeChunk(
                source=source,
                position=position,
                content=entry["content"],
                topics=list(entry["topics"]),
                applicability=list(shelf["applicability"]),
                citation=entry["title"],
            )
            for position, entry in enumerate(shelf["entries"], start=1)
        )
        created = True
    return created


def curated_topics_complete(KnowledgeSource, KnowledgeChunk) -> int:
    """Add to the curated chunks any seed topic they lack (topics staff added stay). Chunks updated.

    Topics added to the seed after a store was seeded reach it this way (migration 0004).
    """
    source = KnowledgeSource.objects.filter(origin=CURATED_ORIGIN, title=CURATED_TITLE).first()
    if source is None:
        return 0
    wanted = {entry["title"]: entry["topics"] for entry in CURATED_ENTRIES}
    updated = 0
    for chunk in KnowledgeChunk.objects.filter(source=source, citation__in=list(wanted)):
        topics = list(chunk.topics) if isinstance(chunk.topics, list) else []
        missing = [t for t in wanted[chunk.citation] if t not in topics]
        if missing:
            chunk.topics = topics + missing
            chunk.save(update_fields=["topics"])
            updated += 1
    return updated


def seed_curated_library_after_migrate(sender, using: str = "default", **kwargs) -> None:
    """``post_migrate``: the curated library is present (after a flush in tests, too)."""
    if not tables_exist(using, "library_knowledgesource", "library_knowledgechunk"):
        return
    seed_curated_library(KnowledgeSource, KnowledgeChunk)
