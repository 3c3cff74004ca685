"""The curated craft library (issue 26, "something for Luna to read"): enough passages, genre by genre, for every
question the agents ask the library; seeded once (a re-run adds nothing); found by the real search; and the
agents' look-ups prefer the passages of the book's genre."""

from __future__ import annotations

import importlib
import io

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.db import connection

from discovery.agents.context import LIBRARY_HITS, library_hits, role_access
from discovery.agents.providers.offline import FIELD_LABEL, FIELD_TOPICS, GUIDANCE_DECISION
from discovery.models import ScratchpadEntry
from library.curated import SHELF_GENRES, SHELVES, genres_of
from library.models import KnowledgeChunk, KnowledgeSource
from library.search import search
from library.seed import CURATED_LICENSE, CURATED_ORIGIN, CURATED_TITLE, curated_entry_count, seed_curated_library

from .agents_support import start_run, work_off_queue
from .factories import BookFactory

pytestmark = pytest.mark.django_db

RANKED = "postgres" if connection.vendor == "postgresql" else "fts5"
# A book's genre as an author might type it, for each shelf.
GENRE_NAMES = {
    "mystery": "Cozy mystery",
    "romance": "Romance",
    "fantasy": "Epic fantasy",
    "thriller": "Psychological thriller",
    "literary": "Literary fiction",
    "science-fiction": "Sci-fi",
    "horror": "Gothic horror",
    "young-adult": "Young adult",
    "historical": "Historical fiction",
}
# What the agents ask the library: Luna's search per charter field, as Sol hands it to her.
FIELD_QUESTIONS = {f: GUIDANCE_DECISION.format(label=FIELD_LABEL[f], topics=FIELD_TOPICS[f]) for f in FIELD_TOPICS}
# What an author sends Luna to look for ("Send Luna to look for guidance on…"), the craft topics of the issue.
AUTHOR_TOPICS = [
    "the premise",
    "the protagonist's want and need",
    "the central conflict",
    "raising the stakes",
    "point of view",
    "structure in acts",
    "planting clues before the reveal",
    "fair play",
    "the reader promise",
    "pacing",
    "setting",
    "series continuity",
    "secrets and who knows what",
    "endings",
    "theme",
    "voice",
]


def curated_chunks():
    return KnowledgeChunk.objects.filter(source__origin=CURATED_ORIGIN)


def hits_for(book, question: str) -> dict:
    return library_hits(role_access(book, "luna"), question)


def shelf_of(genre: str) -> dict:
    return next(s for s in SHELVES if s["applicability"] == [genre])


# --- What the library holds ------------------------------------------------------------------------------------


def test_the_curated_library_holds_at_least_sixty_passages_each_titled_and_grouped_in_a_licensed_source():
    chunks = list(curated_chunks().select_related("source"))

    assert len(chunks) == curated_entry_count() >= 60
    assert all(c.citation and c.topics and len(c.content) > 200 for c in chunks)
    assert len({c.citation for c in chunks}) == len(chunks)  # every title names one passage
    sources = KnowledgeSource.objects.filter(origin=CURATED_ORIGIN)
    assert sources.count() == 1 + len(SHELVES)
    assert {s.license_note for s in sources} == {CURATED_LICENSE} and "NovelGraph" in CURATED_LICENSE
    # The first five stay as they were (the demo and the tour cite them); each genre shelf applies to its genre.
    assert list(sources.get(title=CURATED_TITLE).chunks.order_by("position").values_list("citation", flat=True)) == [
        "Scene causality",
        "Character agency",
        "Fair-play mystery",
        "Promise and payoff",
        "Reader expectations",
    ]
    for genre in SHELF_GENRES:
        shelf = sources.get(title=shelf_of(genre)["title"])
        assert shelf.chunks.count() >= 6, genre
        assert all(c.applicability == [genre] and genre.replace("-", " ") in c.topics for c in shelf.chunks.all())
    assert set(SHELF_GENRES) == set(GENRE_NAMES)


@pytest.mark.parametrize(
    ("typed", "genres"),
    [
        ("Cozy mystery", ["mystery"]),
        ("YA fantasy", ["fantasy", "young-adult"]),
        ("Sci-Fi", ["science-fiction"]),
        ("Historical romance", ["romance", "historical"]),
        ("adult fiction", ["adult-fiction"]),
        ("Western", ["western"]),
        ("", []),
        ("  ", []),
    ],
)
def test_a_books_genre_in_the_authors_words_names_the_shelves_it_reads(typed, genres):
    assert genres_of(typed) == genres


# --- Seeding -------------------------------------------------------------------------------------------------


def test_seeding_twice_adds_nothing():
    before = (KnowledgeSource.objects.count(), KnowledgeChunk.objects.count())

    assert seed_curated_library(KnowledgeSource, KnowledgeChunk) is False
    call_command("seed_library", stdout=io.StringIO())
    migration = importlib.import_module("library.migrations.0005_curated_genre_shelves")
    migration.seed(django_apps, None)

    assert (KnowledgeSource.objects.count(), KnowledgeChunk.objects.count()) == before


def test_a_store_seeded_with_the_first_five_gets_the_shelves_once_and_keeps_what_staff_changed():
    """A database seeded before the shelves existed (only the first five passages): the migration adds them."""
    KnowledgeSource.objects.filter(origin=CURATED_ORIGIN).exclude(title=CURATED_TITLE).delete()
    first = KnowledgeSource.objects.get(origin=CURATED_ORIGIN, title=CURATED_TITLE)
    first.chunks.filter(citation="Scene causality").update(content="Edited by staff: scenes change things.")
    assert curated_chunks().count() == 5
    migration = importlib.import_module("library.migrations.0005_curated_genre_shelves")

    migration.seed(django_apps, None)
    assert curated_chunks().count() == curated_entry_count()
    migration.seed(django_apps, None)  # a re-run adds nothing
    assert curated_chunks().count() == curated_entry_count()

    assert first.chunks.get(citation="Scene causality").content.startswith("Edited by staff")
    assert [r["citation"] for r in search("herring", mode=RANKED).results][:1] == ["Red herrings that play fair"]


# --- The real search finds them -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [RANKED, "like"])
def test_the_search_finds_the_new_passages_by_their_words_topics_and_genre(mode):
    def citations(query, **kwargs):
        return [r["citation"] for r in search(query, mode=mode, **kwargs).results]

    assert "Red herrings that play fair" in citations("herring")  # like: ties go to the newest
    assert "Magic with rules and costs" in citations("magic costs", applicability="fantasy")
    assert "Research without the lecture" in citations("anachronism")
    dread = search("dread", mode=mode, applicability="horror")
    assert dread.mode == mode and dread.results
    assert all(r["applicability"] == ["horror"] for r in dread.results)
    romance = search("romance", mode=mode, limit=50).results
    assert {r["citation"] for r in romance} >= {e["title"] for e in shelf_of("romance")["entries"]}  # its topic
    # A natural question reaches the new shelves too.
    limit = 50 if mode == "like" else 8  # like: "story" is in most passages ("history" too), ties go to the newest
    assert "Choosing a point of view" in citations("whose point of view should tell my story?", limit=limit)


def test_the_ranked_search_answers_with_the_database_index():
    assert search("worldbuilding").mode == RANKED


# --- What the agents ask finds passages of each genre -------------------------------------------------------


@pytest.mark.parametrize("genre", sorted(GENRE_NAMES))
def test_every_charter_field_luna_searches_finds_a_passage_of_the_books_genre(genre):
    book = BookFactory(genre_pack=GENRE_NAMES[genre])

    for field, question in FIELD_QUESTIONS.items():
        found = hits_for(book, question)
        assert found["genres"] == [genre]
        ours = [h for h in found["hits"] if h["of_book_genre"]]
        assert ours, f"{genre}: nothing of the genre for {field} ({found['query_words']})"
        assert all(h["applicability"] == [genre] for h in ours)
        # Among the three Luna draws on (the offline provider cites hits[:3]).
        assert any(h["of_book_genre"] for h in found["hits"][:3]), f"{genre}/{field}: {found['hits'][:3]}"


@pytest.mark.parametrize("topic", AUTHOR_TOPICS)
def test_every_craft_topic_an_author_sends_luna_to_finds_guidance(topic):
    book = BookFactory(genre_pack="")

    found = hits_for(book, f"Look in the library for guidance on {topic}")

    assert found["hits"], topic
    assert found["hits"][0]["applicability"] == ["general"], (topic, found["hits"][0]["citation"])


# --- Genre preference -----------------------------------------------------------------------------------------


def test_the_same_question_prefers_each_books_genre_and_a_book_without_one_the_general_passages():
    question = FIELD_QUESTIONS["ending_horizon"]
    tops = {}
    for typed in ("Cozy mystery", "Romance", "Gothic horror", ""):
        found = hits_for(BookFactory(genre_pack=typed), question)
        tops[typed] = found["hits"][0]
        assert len(found["hits"]) == LIBRARY_HITS

    assert tops["Cozy mystery"]["source_title"] == shelf_of("mystery")["title"]
    assert tops["Romance"]["source_title"] == shelf_of("romance")["title"]
    assert tops["Gothic horror"]["source_title"] == shelf_of("horror")["title"]
    assert tops[""]["applicability"] == ["general"] and not tops[""]["of_book_genre"]
    # Another genre's passages give way to the book's: a romance book hears of the romance ending first.
    romance = [h["applicability"][0] for h in hits_for(BookFactory(genre_pack="Romance"), question)["hits"]]
    ours = [n for n, a in enumerate(romance) if a == "romance"]
    others = [n for n, a in enumerate(romance) if a not in ("general", "romance")]
    assert ours[0] == 0 and all(n > max(ours) for n in others), romance


def test_a_book_of_two_genres_reads_both_shelves():
    found = hits_for(BookFactory(genre_pack="YA fantasy"), FIELD_QUESTIONS["protagonist"])

    assert found["genres"] == ["fantasy", "young-adult"]
    assert {h["applicability"][0] for h in found["hits"] if h["of_book_genre"]} == {"fantasy", "young-adult"}


def test_a_genre_passage_is_preferred_even_where_general_passages_crowd_a_words_results():
    """Ten general passages on 'pacing' fill that word's results; the book's genre is searched on its own too."""
    source = KnowledgeSource.objects.create(title="Pacing notes", origin="in-house", license_note="ours", version="1")
    KnowledgeChunk.objects.bulk_create(
        KnowledgeChunk(
            source=source,
            position=n,
            content=f"Pacing pacing pacing note {n}.",
            topics=["pacing"],
            applicability=["general"],
            citation=f"Pacing note {n}",
        )
        for n in range(12)
    )
    KnowledgeChunk.objects.create(
        source=source,
        content="Pacing a western: ride, camp, ride.",
        topics=["pacing"],
        applicability=["western"],
        citation="Pacing a western",
        position=20,
    )

    found = hits_for(BookFactory(genre_pack="Western"), "pacing")

    assert found["hits"][0]["citation"] == "Pacing a western" and found["hits"][0]["of_book_genre"]
    general_only = hits_for(BookFactory(genre_pack=""), "pacing")["hits"]
    assert "Pacing a western" not in [h["citation"] for h in general_only]


# --- Luna, in a run, cites the passages of the book's genre ---------------------------------------------------


def test_lunas_guidance_for_a_romance_cites_the_romance_shelf(author_api, author):
    book = BookFactory(owner=author, genre_pack="Romance", title="Letters to Harbour Street")
    author_api.post(f"/books/{book.pk}/discovery")

    start_run(author_api, book, "guidance", topic="the ending and its payoff")
    work_off_queue()

    cited = [
        KnowledgeChunk.objects.select_related("source").get(pk=ref["id"])
        for entry in ScratchpadEntry.objects.filter(session__book=book, provenance="literary-guidance").order_by(
            "created_at"
        )
        for ref in entry.source_refs
        if ref["type"] == "chunk"
    ]
    assert cited and cited[0].source.title == shelf_of("romance")["title"]
