"""Library search (seed 001): the same contract in every mode the database offers.

On SQLite the modes are fts5 and like; on PostgreSQL, postgres and like. The index
must follow the chunk table whatever writes to it: the ORM, the admin, bulk
operations and raw SQL.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from library import search as search_module
from library.models import KnowledgeChunk, KnowledgeSource
from library.search import available_modes, query_words, search, search_terms
from library.seed import CURATED_ORIGIN, CURATED_TITLE, curated_entry_count, seed_curated_library

from .factories import PASSWORD, KnowledgeChunkFactory, KnowledgeSourceFactory, UserFactory

RANKED = "postgres" if connection.vendor == "postgresql" else "fts5"
MODES = [RANKED, "like"]


@pytest.fixture(params=MODES)
def mode(request, db):
    assert request.param in available_modes(), f"{request.param} should be available on {connection.vendor}"
    return request.param


@pytest.fixture
def curated(db):
    """The curated seed (migration 0002); restored if a transactional test flushed it."""
    seed_curated_library(KnowledgeSource, KnowledgeChunk)
    return KnowledgeSource.objects.get(origin=CURATED_ORIGIN, title=CURATED_TITLE)


@pytest.fixture
def source(db):
    return KnowledgeSourceFactory(title="Field notes on marsupials")


def citations(mode: str, query: str, **kwargs) -> list[str]:
    return [r["citation"] for r in search(query, mode=mode, **kwargs).results]


def chunk(source, content: str, topics=(), citation: str | None = None, **kwargs) -> KnowledgeChunk:
    return KnowledgeChunkFactory(
        source=source, content=content, topics=list(topics), citation=citation or content[:40], **kwargs
    )


# --- The curated seed and the result shape -----------------------------------


def test_causality_finds_scene_causality_through_its_topics(mode, curated):
    response = search("causality", mode=mode)  # a word no other curated passage uses (library/curated.py)

    assert response.mode == mode
    assert [r["citation"] for r in response.results] == ["Scene causality"]
    hit = response.results[0]
    assert "causality" in hit["topics"] and "pacing" in hit["topics"]
    assert hit["applicability"] == ["general"]
    assert hit["source_title"] == "NovelGraph Curated Craft Library"
    assert hit["chunk_id"] == str(curated.chunks.get(citation="Scene causality").pk)
    assert set(hit) == {"chunk_id", "content", "topics", "applicability", "citation", "source_title", "score"}


def test_every_curated_entry_is_found_by_one_of_its_topics(mode, curated):
    for topic, citation in [
        ("agency", "Character agency"),
        ("clues", "Fair-play mystery"),
        ("foreshadowing", "Promise and payoff"),
        ("conventions", "Reader expectations"),
    ]:
        assert citation in citations(mode, topic, limit=50), topic  # among the genre shelves' passages on it


def test_the_auto_mode_picks_the_ranked_search_and_the_setting_forces_like(db, settings):
    settings.NOVELGRAPH_SEARCH_MODE = "auto"
    assert search("pacing").mode == RANKED
    settings.NOVELGRAPH_SEARCH_MODE = "like"
    assert search("causality").mode == "like"


def test_an_unknown_mode_is_a_programming_error(db):
    with pytest.raises(ValueError, match="unknown search mode"):
        search("pacing", mode="grep")


# --- Ranking -----------------------------------------------------------------


def test_ranked_modes_order_by_relevance_and_like_by_newest(mode, source):
    once = chunk(source, "The quokka appears once in this rather long passage about island fauna and weather.")
    often = chunk(source, "Quokka, quokka, quokka: a short one.")

    response = search("quokka", mode=mode)

    ids = [r["chunk_id"] for r in response.results]
    if mode == "like":
        assert ids == [str(often.pk), str(once.pk)]  # newest first
        assert {r["score"] for r in response.results} == {1.0}  # one query word found in each
    else:
        assert ids == [str(often.pk), str(once.pk)]  # more occurrences in less text
        assert response.results[0]["score"] > response.results[1]["score"] > 0


def test_a_word_among_the_topics_outranks_the_same_word_in_the_content(mode, source):
    in_topics = chunk(source, "A small animal of Rottnest Island that seems to smile.", topics=["quokka", "fauna"])
    in_content = chunk(source, "A quokka is a small animal of Rottnest Island.", topics=["fauna"])

    ids = [r["chunk_id"] for r in search("quokka", mode=mode).results]

    if mode == "like":
        assert ids == [str(in_content.pk), str(in_topics.pk)]  # unranked: newest first
    else:
        assert ids == [str(in_topics.pk), str(in_content.pk)]


def test_limit_caps_the_results(mode, source):
    for n in range(12):
        chunk(source, f"Wombat note {n}.")
    assert len(search("wombat", mode=mode).results) == 8  # the default
    assert len(search("wombat", limit=3, mode=mode).results) == 3
    assert len(search("wombat", limit=500, mode=mode).results) == 12  # clamped to 50, only 12 exist


# --- Words ---------------------------------------------------------------------


@pytest.mark.parametrize("blank", ["", "   ", "\t\n", None, "\"'()*-:^", "🙂🙂", "% _ \\"])
def test_a_blank_query_or_one_without_words_finds_nothing(mode, curated, blank):
    response = search(blank, mode=mode)
    assert response.results == []
    assert response.mode == mode


def test_any_word_matches_and_chunks_with_more_of_the_words_rank_first(mode, source):
    both = chunk(source, "The quokka is a marsupial.")
    quokka = chunk(source, "The quokka smiles.")
    marsupial = chunk(source, "Every marsupial has a pouch.")
    chunk(source, "The zebra grazes.")

    for query in ["quokka marsupial", "marsupial   QUOKKA"]:  # any order, any case
        ids = [r["chunk_id"] for r in search(query, mode=mode).results]
        assert ids[0] == str(both.pk), query
        assert set(ids) == {str(both.pk), str(quokka.pk), str(marsupial.pk)}, query
    scores = [r["score"] for r in search("quokka marsupial", mode=mode).results]
    assert scores[0] > scores[1] > 0
    if mode == "like":
        assert scores == [2.0, 1.0, 1.0]  # how many of the words each chunk holds
    assert {r["chunk_id"] for r in search("quokka okapi", mode=mode).results} == {str(quokka.pk), str(both.pk)}
    assert search("okapi narwhal", mode=mode).results == []


def test_a_rare_word_outranks_a_common_one_in_fts5(mode, source):
    for n in range(6):
        chunk(source, f"The wombat digs burrow number {n}.")
    rare = chunk(source, "The bilby digs too.")
    common = chunk(source, "The wombat sleeps.")

    ids = [r["chunk_id"] for r in search("wombat bilby", limit=50, mode=mode).results]

    assert len(ids) == 8 and str(rare.pk) in ids and str(common.pk) in ids
    if mode == "fts5":  # BM25's IDF: the rare word's one match weighs more than a common word's
        assert ids[0] == str(rare.pk)
    # ts_rank has no corpus statistics (no IDF) and LIKE counts words: both only require the two to be found.


def test_stop_words_do_not_swamp_the_results(mode, source):
    target = chunk(source, "To feed a quoll, wait for dusk.")
    fillers = [chunk(source, f"How it was and what it is: note {n} of the things that are.") for n in range(5)]

    ids = [r["chunk_id"] for r in search("how do I feed a quoll?", mode=mode).results]

    assert ids == [str(target.pk)]  # "how", "do", "I" and "a" are not searched: only feed and quoll
    assert search_terms("how do I feed a quoll?") == ["feed", "quoll"]
    # A query made of stop words only still searches them.
    assert search_terms("The Who") == ["The", "Who"]
    assert {str(f.pk) for f in fillers} <= found(mode, "how it is")


def test_a_natural_question_finds_the_twist_and_fair_play_guidance(mode, curated):
    assert search_terms("how do I make a twist feel earned?") == ["twist", "feel", "earned"]
    top = citations(mode, "how do I make a twist feel earned?")

    assert top[0] == "Promise and payoff", top  # twist (a topic), feel, earned: "unearned payoffs feel like cheating"
    if mode == "like":  # substrings count: "feel" is also in Reader expectations' "feeling"
        assert "Fair-play mystery" in top[:3], top
    else:
        assert top[1] == "Fair-play mystery", top
    fair = citations(mode, "How can the reveal of my mystery be fair to the reader?")
    if mode == "like":  # the mystery shelf holds all four words too (fair-play contract, red herrings), newer: ties
        assert "Fair-play mystery" in fair[:3], fair
    else:
        assert fair[0] == "Fair-play mystery", fair


def test_words_may_come_from_content_and_topics_together(mode, source):
    split = chunk(source, "Notes on the smiling quokka.", topics=["marsupial"])
    assert [r["chunk_id"] for r in search("quokka marsupial", mode=mode).results] == [str(split.pk)]


def test_case_and_accents_fold_beyond_ascii(mode, source):
    cafe = chunk(source, "They meet at the café on the harbour at dawn.")
    upper = chunk(source, "ÉCOLE NORMALE is where she trained.")

    for query in ["CAFÉ", "Café", "café"]:
        assert [r["chunk_id"] for r in search(query, mode=mode).results] == [str(cafe.pk)], query
    assert [r["chunk_id"] for r in search("école", mode=mode).results] == [str(upper.pk)]


def test_like_wildcards_in_a_query_are_literal(mode, source):
    percent = chunk(source, "The code qx%zy is printed on the ticket.")
    underscore = chunk(source, "The code qx_zy is printed on the ticket.")
    chunk(source, "The code qxabzy is printed on the ticket.")  # what a wildcard would also match

    by_percent = [r["chunk_id"] for r in search("qx%zy", mode=mode).results]
    by_underscore = [r["chunk_id"] for r in search("qx_zy", mode=mode).results]

    if mode == "like":
        assert by_percent == [str(percent.pk)]
        assert by_underscore == [str(underscore.pk)]
    else:
        # Full-text modes read punctuation as a word break: "qx zy", never a wildcard.
        assert set(by_percent) == set(by_underscore) == {str(percent.pk), str(underscore.pk)}


def test_backslashes_are_literal_in_like(source):
    slashed = chunk(source, r"The path C:\quokka\notes is on the laptop.")
    chunk(source, "The path C:quokkanotes is elsewhere.")
    assert [r["chunk_id"] for r in search(r"quokka\notes", mode="like").results] == [str(slashed.pk)]


def test_query_words_trim_edge_punctuation_and_repeat_words():
    assert query_words('(pacing), "Scene" pacing PACING e-mail 50%') == ["pacing", "Scene", "e-mail", "50"]
    assert query_words("NEAR(a b)") == ["NEAR(a", "b"]
    assert query_words("x" * 20_000) == ["x" * 10_000]


HOSTILE_QUERIES = [
    '"',
    '""',
    '"pacing',
    "'",
    "(",
    ")",
    "(pacing",
    "pacing)",
    "*",
    "pacing*",
    "*pacing",
    "-",
    "-pacing",
    "pacing -scene",
    ":",
    "content:pacing",
    "topics : pacing",
    "^",
    "^pacing",
    "NEAR",
    "NEAR(pacing scene)",
    "NEAR(pacing scene, 2)",
    "pacing NEAR/2 scene",
    "AND",
    "OR",
    "NOT",
    "pacing AND",
    "OR pacing",
    "NOT pacing",
    "pacing OR scene NOT plot",
    "%",
    "_",
    "\\",
    "%%%",
    "_%_",
    "pac%ing",
    "pac_ing",
    "a\\%b",
    "🙂",
    "pacing 🙂",
    "👩‍👩‍👧‍👦 family",
    "{pacing}",
    "[pacing]",
    "pacing + scene",
    "pacing & scene | plot",
    "!pacing",
    "pacing <-> scene",
    "pac:*",
    "@@ pacing",
    "$$ pacing $$",
    "'; DROP TABLE library_knowledgechunk; --",
    '" OR 1=1 --',
    "pacing\x00scene",
    "lone \ud800 surrogate",
    "\u202e right-to-left",
    "x" * 10_000,
    ("pacing " * 2_000)[:10_000],
    " ".join(f"w{n}" for n in range(3_000))[:10_000],
    "é" * 10_000,
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES, ids=[f"q{n}" for n in range(len(HOSTILE_QUERIES))])
def test_hostile_queries_return_normally(mode, curated, query):
    response = search(query, mode=mode)

    assert response.mode == mode
    assert isinstance(response.results, list)
    assert KnowledgeChunk.objects.filter(source=curated).count() == 5  # nothing was dropped
    assert KnowledgeChunk.objects.filter(source__origin=CURATED_ORIGIN).count() == curated_entry_count()


def test_hostile_queries_that_contain_a_real_word_still_find_it(mode, curated):
    word = "causality"  # only Scene causality holds it
    for query in [f'"{word}"', f"({word})", f"{word}*", f"-{word}", f"^{word}", f"[{word}]", f"{word} " * 999]:
        assert citations(mode, query) == ["Scene causality"], query[:40]


def test_hostile_queries_through_the_api_are_answered(sol_api, curated):
    for query in HOSTILE_QUERIES:
        if "\x00" in query or "\ud800" in query:
            continue
        response = sol_api.get("/library/search", q=query)
        assert response.status_code == 200, (query[:40], response.content[:200])
        assert isinstance(response.json()["results"], list)


# --- Filters (beyond the seed; off by default) --------------------------------


def test_filters_by_applicability_and_topic(mode, source):
    general = chunk(source, "Dingo tracks in the sand.", topics=["tracks"], applicability=["general"])
    mystery = chunk(source, "Dingo tracks as a clue.", topics=["clues"], applicability=["mystery"])

    everything = {r["chunk_id"] for r in search("dingo", mode=mode).results}
    assert everything == {str(general.pk), str(mystery.pk)}
    assert [r["chunk_id"] for r in search("dingo", applicability="Mystery", mode=mode).results] == [str(mystery.pk)]
    assert [r["chunk_id"] for r in search("dingo", topic="tracks", mode=mode).results] == [str(general.pk)]
    assert search("dingo", topic="tracks", applicability="mystery", mode=mode).results == []


# --- The index follows the chunk table ---------------------------------------------


def found(mode: str, word: str) -> set[str]:
    return {r["chunk_id"] for r in search(word, mode=mode, limit=50).results}


def index_matches_chunks() -> None:
    """The ranked index holds exactly one entry per chunk."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(*) FROM library_knowledgechunk "
                "WHERE search_vector IS DISTINCT FROM library_chunk_tsvector(content, topics)"
            )
            assert cursor.fetchone()[0] == 0
        else:
            cursor.execute("SELECT count(*) FROM library_chunk_fts_map")
            mapped = cursor.fetchone()[0]
            cursor.execute(
                "SELECT count(*) FROM library_knowledgechunk c JOIN library_chunk_fts_map m ON m.chunk_id = c.id"
            )
            assert mapped == cursor.fetchone()[0] == KnowledgeChunk.objects.count()
            cursor.execute("INSERT INTO library_chunk_fts(library_chunk_fts) VALUES ('integrity-check')")


def test_save_and_delete_keep_the_index_in_step(mode, source):
    item = chunk(source, "The bilby digs.")
    assert found(mode, "bilby") == {str(item.pk)}

    item.content = "The bandicoot digs."
    item.save()
    assert found(mode, "bilby") == set()
    assert found(mode, "bandicoot") == {str(item.pk)}

    item.topics = ["burrow"]
    item.save()
    assert found(mode, "burrow") == {str(item.pk)}

    item.delete()
    assert found(mode, "bandicoot") == set()
    assert found(mode, "burrow") == set()
    index_matches_chunks()


def test_queryset_update_keeps_the_index_in_step(mode, source):
    a = chunk(source, "The numbat eats termites.")
    b = chunk(source, "The numbat has stripes.")

    KnowledgeChunk.objects.filter(pk__in=[a.pk, b.pk]).update(content="The echidna eats ants.")
    assert found(mode, "numbat") == set()
    assert found(mode, "echidna") == {str(a.pk), str(b.pk)}

    KnowledgeChunk.objects.filter(pk=a.pk).update(topics=["monotreme"])
    assert found(mode, "monotreme") == {str(a.pk)}
    index_matches_chunks()


def test_bulk_create_bulk_update_and_queryset_delete_keep_the_index_in_step(mode, source):
    made = KnowledgeChunk.objects.bulk_create(
        KnowledgeChunk(source=source, position=n, content=f"Platypus fact {n}.", citation=f"Fact {n}", topics=["egg"])
        for n in range(5)
    )
    assert found(mode, "platypus") == {str(c.pk) for c in made}

    for c in made[:2]:
        c.content = "A cassowary fact."
    KnowledgeChunk.objects.bulk_update(made[:2], ["content"])
    assert found(mode, "cassowary") == {str(c.pk) for c in made[:2]}
    assert found(mode, "platypus") == {str(c.pk) for c in made[2:]}

    KnowledgeChunk.objects.filter(pk__in=[c.pk for c in made[2:]]).delete()
    assert found(mode, "platypus") == set()
    assert found(mode, "egg") == {str(c.pk) for c in made[:2]}
    index_matches_chunks()


def test_deleting_a_source_removes_its_chunks_from_the_index(mode, source):
    chunk(source, "The wallaby hops.")
    source.delete()
    assert found(mode, "wallaby") == set()
    index_matches_chunks()


def test_raw_sql_writes_keep_the_index_in_step(mode, source):
    item = chunk(source, "The kookaburra laughs.")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE library_knowledgechunk SET content = %s WHERE id = %s",
            ["The lyrebird mimics.", item.pk.hex if connection.vendor == "sqlite" else item.pk],
        )
    assert found(mode, "kookaburra") == set()
    assert found(mode, "lyrebird") == {str(item.pk)}
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM library_knowledgechunk WHERE content = %s", ["The lyrebird mimics."])
    assert found(mode, "lyrebird") == set()
    index_matches_chunks()


@pytest.fixture
def staff_client(db):
    UserFactory(username="curator", is_staff=True, is_superuser=True)
    client = Client()
    assert client.login(username="curator", password=PASSWORD)
    return client


def test_admin_edits_keep_the_index_in_step(mode, staff_client, source):
    item = chunk(source, "The possum climbs.", topics=["trees"])

    response = staff_client.post(
        f"/admin/library/knowledgechunk/{item.pk}/change/",
        {
            "source": str(source.pk),
            "position": "3",
            "citation": "Possums § Climbing",
            "content": "The glider soars between trees.",
            "topics": "canopy,  night , canopy",
            "applicability": "general, nature writing",
        },
    )

    assert response.status_code == 302, response.content[:500]
    item.refresh_from_db()
    assert item.topics == ["canopy", "night"]
    assert item.applicability == ["general", "nature writing"]
    assert found(mode, "possum") == set()
    assert found(mode, "glider") == {str(item.pk)}
    assert found(mode, "canopy") == {str(item.pk)}

    response = staff_client.post(f"/admin/library/knowledgechunk/{item.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not KnowledgeChunk.objects.filter(pk=item.pk).exists()
    assert found(mode, "glider") == set()
    index_matches_chunks()


def test_a_source_added_in_admin_with_an_inline_chunk_is_searchable(mode, staff_client):
    response = staff_client.post(
        "/admin/library/knowledgesource/add/",
        {
            "title": "Desert notes",
            "origin": "in-house",
            "license_note": "CC BY 4.0",
            "version": "2.0",
            "chunks-TOTAL_FORMS": "1",
            "chunks-INITIAL_FORMS": "0",
            "chunks-MIN_NUM_FORMS": "0",
            "chunks-MAX_NUM_FORMS": "1000",
            "chunks-0-position": "1",
            "chunks-0-citation": "Desert notes § Thorny devil",
            "chunks-0-content": "The thorny devil drinks through its skin.",
            "chunks-0-topics": "reptile, desert",
            "chunks-0-applicability": "general",
        },
    )

    assert response.status_code == 302, response.content[:800]
    added = KnowledgeChunk.objects.get(citation="Desert notes § Thorny devil")
    assert added.topics == ["reptile", "desert"]
    assert found(mode, "thorny devil") == {str(added.pk)}
    assert found(mode, "reptile") == {str(added.pk)}


# --- Rebuilding --------------------------------------------------------------------


def _wipe_ranked_index() -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no pending FK checks may block the ALTER
            cursor.execute("ALTER TABLE library_knowledgechunk DISABLE TRIGGER library_chunk_search")
            cursor.execute("UPDATE library_knowledgechunk SET search_vector = NULL")
            cursor.execute("ALTER TABLE library_knowledgechunk ENABLE TRIGGER library_chunk_search")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        else:
            cursor.execute("INSERT INTO library_chunk_fts(library_chunk_fts) VALUES ('delete-all')")
            cursor.execute("DELETE FROM library_chunk_fts_map")


def test_rebuild_search_index_restores_a_wiped_index(curated, source, capsys):
    chunk(source, "The emu runs.")
    _wipe_ranked_index()
    assert search("causality", mode=RANKED).results == []

    call_command("rebuild_search_index")

    out = capsys.readouterr().out
    total = KnowledgeChunk.objects.count()
    assert f"Rebuilt the {RANKED} index: {total} of {total} chunks indexed." in out
    assert citations(RANKED, "causality") == ["Scene causality"]
    assert citations(RANKED, "emu") == ["The emu runs."]
    index_matches_chunks()


def test_rebuilding_twice_changes_nothing(curated):
    call_command("rebuild_search_index")
    call_command("rebuild_search_index")
    assert citations(RANKED, "causality") == ["Scene causality"]
    index_matches_chunks()


@pytest.fixture
def forget_fts_cache():
    yield
    search_module._fts_ready_cache.clear()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the FTS5 fallback is SQLite's")
def test_sqlite_without_the_fts5_index_searches_with_like_and_a_rebuild_brings_it_back(curated, forget_fts_cache):
    search_module.search_schema_remove(connection)

    assert available_modes() == ["like"]
    assert search("causality").mode == "like"
    assert citations("like", "causality") == ["Scene causality"]
    chunk(curated, "Written while the index was missing: the galah.", citation="Galah")  # no trigger fires

    report = search_module.search_index_rebuild()

    assert report.mode == "fts5"
    assert search("galah").mode == "fts5"
    assert citations("fts5", "galah") == ["Galah"]
    index_matches_chunks()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite table rebuilds drop triggers")
def test_post_migrate_reinstalls_triggers_a_table_rebuild_dropped(curated, forget_fts_cache):
    with connection.cursor() as cursor:
        for trigger in search_module.FTS_TRIGGERS:
            cursor.execute(f"DROP TRIGGER {trigger}")
    search_module._fts_ready_cache.clear()

    search_module.ensure_search_schema(using="default")

    assert search_module.fts_ready(connection)
    item = chunk(curated, "After the reinstall: the cockatoo.", citation="Cockatoo")
    assert found("fts5", "cockatoo") == {str(item.pk)}


def test_the_search_is_one_statement(source, django_assert_num_queries, monkeypatch):
    for n in range(20):
        chunk(source, f"Koala note {n}.", topics=["koala"])
    available_modes()  # the FTS5 check runs once per database, then is remembered
    for m in MODES:
        if m == "fts5":
            # The FTS5 path runs on the sqlite3 connection itself: count what SQLite executes.
            statements: list[str] = []
            connection.connection.set_trace_callback(statements.append)
            try:
                assert len(search("koala", limit=20, mode=m).results) == 20
            finally:
                connection.connection.set_trace_callback(None)
            statements = [sql for sql in statements if not sql.startswith("--")]  # FTS5's own internals
            assert len(statements) == 1, statements
            assert "MATCH" in statements[0] and "library_knowledgesource" in statements[0]
        elif m == "postgres":
            # The PostgreSQL path uses a psycopg cursor (server-side binding): count its executions.
            import psycopg

            executed: list[str] = []
            real_execute = psycopg.Cursor.execute

            def counting_execute(self, query, *args, _seen=executed, _real=real_execute, **kwargs):
                _seen.append(str(query))
                return _real(self, query, *args, **kwargs)

            monkeypatch.setattr(psycopg.Cursor, "execute", counting_execute)
            assert len(search("koala", limit=20, mode=m).results) == 20
            monkeypatch.undo()
            assert len(executed) == 1, executed
            assert "@@" in executed[0] and "library_knowledgesource" in executed[0]
        else:
            with django_assert_num_queries(1):
                assert len(search("koala", limit=20, mode=m).results) == 20


def test_non_ascii_topics_are_found_however_they_were_stored(mode, source):
    escaped = chunk(source, "A pastry note.", topics=["Éclair"])  # Django stores "\u00c9clair"
    raw = chunk(source, "A second pastry note.", topics=["placeholder"])
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE library_knowledgechunk SET topics = %s WHERE id = %s",
            ['["Mille-feuille", "ÉCLAIR"]', raw.pk.hex if connection.vendor == "sqlite" else raw.pk],
        )
    assert found(mode, "éclair") == {str(escaped.pk), str(raw.pk)}
    assert found(mode, "ECLAIR") == {str(escaped.pk), str(raw.pk)}
    assert found(mode, "mille-feuille") == {str(raw.pk)}


def test_seed_topics_added_later_reach_a_store_seeded_before_and_staff_topics_stay(curated):
    from library.seed import curated_topics_complete

    fair = curated.chunks.get(citation="Fair-play mystery")
    fair.topics = ["mystery", "clues", "locked room"]  # an older seed, plus a topic staff added
    fair.save()
    assert "Fair-play mystery" not in citations(RANKED, "twist")

    assert curated_topics_complete(KnowledgeSource, KnowledgeChunk) == 1
    assert curated_topics_complete(KnowledgeSource, KnowledgeChunk) == 0  # idempotent

    fair.refresh_from_db()
    assert fair.topics[:3] == ["mystery", "clues", "locked room"]
    assert {"fair play", "twist", "surprise"} <= set(fair.topics)
    assert "Fair-play mystery" in citations(RANKED, "twist")
