"""Finding things in the library: a citation opens its chunk in context; browsing by topic and by source."""

from __future__ import annotations

import uuid

import pytest

from library.models import KnowledgeChunk, KnowledgeSource

from .factories import KnowledgeChunkFactory, KnowledgeSourceFactory, ScratchpadEntryFactory


@pytest.fixture
def notes(db):
    source = KnowledgeSourceFactory(title="Harbour notes", origin="in-house", version="2")
    chunks = [
        KnowledgeChunkFactory(
            source=source, position=n, content=f"Harbour passage {n}.", citation=f"Harbour § {n}", topics=["tides"]
        )
        for n in range(1, 8)
    ]
    return source, chunks


def test_a_chunk_page_shows_the_chunk_with_its_source_topics_and_neighbours(author_browser, notes):
    source, chunks = notes
    middle = chunks[3]
    middle.topics = ["tides", "Fog"]
    middle.save()

    page = author_browser.get(f"/library/chunks/{middle.pk}/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "Harbour § 4" in html and "Harbour passage 4." in html
    assert f'href="/library/sources/{source.pk}/"' in html and "Harbour notes" in html
    assert 'href="/library/topics/Fog/"' in html and 'href="/library/topics/tides/"' in html
    for near in (chunks[1], chunks[2], chunks[4], chunks[5]):  # two before, two after
        assert f'href="/library/chunks/{near.pk}/"' in html
    assert (
        f'href="/library/chunks/{chunks[0].pk}/"' not in html and f'href="/library/chunks/{chunks[6].pk}/"' not in html
    )
    assert html.index("Harbour § 3") < html.index("Harbour passage 4.") < html.index("Harbour § 5")


def test_an_unknown_chunk_is_a_404_page_and_a_malformed_id_an_inline_message(author_browser, notes):
    missing = author_browser.get(f"/library/chunks/{uuid.uuid4()}/")
    assert missing.status_code == 404
    assert "No passage with this id is in the library" in missing.content.decode()

    bad = author_browser.get("/library/chunks/not-an-id/")
    assert bad.status_code == 422
    assert "is not a chunk id" in bad.content.decode()


def test_the_old_chunk_query_link_opens_the_chunk_page(author_browser, notes):
    chunk = notes[1][0]

    response = author_browser.get(f"/library/?chunk={chunk.pk}")
    assert response.status_code == 302 and response["Location"] == f"/library/chunks/{chunk.pk}/"

    for bad in ["nope", "", "%00"]:
        response = author_browser.get(f"/library/?chunk={bad}")
        assert response.status_code == 422, bad
        assert "not a chunk id" in response.content.decode()


def test_citation_links_in_the_scratchpad_and_search_results_open_the_chunk_page(author_browser, book, notes):
    chunk = notes[1][0]
    from .factories import DiscoverySessionFactory

    session = DiscoverySessionFactory(book=book)
    ScratchpadEntryFactory(
        session=session, agent_role="luna", kind="question", source_refs=[{"type": "chunk", "id": str(chunk.pk)}]
    )

    scratchpad = author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()
    assert f'href="/library/chunks/{chunk.pk}/"' in scratchpad
    assert "?chunk=" not in scratchpad

    results = author_browser.get("/library/", {"q": "harbour passage"}).content.decode()
    assert f'href="/library/chunks/{chunk.pk}/"' in results


def test_topics_are_listed_with_counts_and_each_topic_lists_its_chunks(author_browser, notes):
    page = author_browser.get("/library/topics/")
    assert page.status_code == 200
    html = page.content.decode() + author_browser.get("/library/topics/", {"page": 2}).content.decode()  # 100 a page
    assert 'href="/library/topics/tides/"' in html and 'href="/library/topics/pacing/"' in html  # the curated seed too

    tides = author_browser.get("/library/topics/TIDES/")  # any case
    html = tides.content.decode()
    assert tides.status_code == 200
    assert "7 passages." in html
    assert all(f'href="/library/chunks/{c.pk}/"' in html for c in notes[1])

    none = author_browser.get("/library/topics/no-such-topic/")
    assert none.status_code == 200 and "No passage lists the topic" in none.content.decode()


def test_topic_and_source_lists_are_paged_and_htmx_gets_only_the_list(author_browser, notes):
    source, _ = notes
    KnowledgeChunk.objects.bulk_create(
        KnowledgeChunk(
            source=source, position=100 + n, content=f"More {n}.", citation=f"More § {n:02d}", topics=["tides"]
        )
        for n in range(20)
    )

    first = author_browser.get(f"/library/sources/{source.pk}/").content.decode()
    assert "Page 1 of 2" in first and "?page=2" in first and "More § 12" in first and "More § 13" not in first

    second = author_browser.get(f"/library/sources/{source.pk}/", {"page": 2}, HTTP_HX_REQUEST="true")
    html = second.content.decode()
    assert second.status_code == 200
    assert html.lstrip().startswith('<section id="browse-list"') and "<html" not in html
    assert "More § 19" in html and "Page 2 of 2" in html

    assert "Page 2 of 2" in author_browser.get("/library/topics/tides/", {"page": 99}).content.decode()  # nearest page
    assert "Page 1 of 2" in author_browser.get("/library/topics/tides/", {"page": "x"}).content.decode()


def test_sources_are_listed_with_their_passage_counts(author_browser, notes):
    html = author_browser.get("/library/sources/").content.decode()
    assert "Harbour notes" in html and "7 passages" in html
    assert "NovelGraph Curated Craft Library" in html
    assert author_browser.get(f"/library/sources/{uuid.uuid4()}/").status_code == 404
    assert KnowledgeSource.objects.exclude(origin="novelgraph-curated").count() == 1


def test_library_pages_need_a_login(client, notes):
    for path in ["/library/topics/", "/library/sources/", f"/library/chunks/{notes[1][0].pk}/"]:
        response = client.get(path)
        assert response.status_code == 302 and "/login" in response["Location"], path


def test_any_topic_text_has_a_working_link_and_odd_topics_never_fail(author_browser, notes):
    source, _ = notes
    odd = KnowledgeChunkFactory(
        source=source, content="Odd topics.", citation="Odd", topics=["cause/effect", "50% off", "  ", "é?#"]
    )

    html = author_browser.get(f"/library/chunks/{odd.pk}/").content.decode()
    for href in ["/library/topics/cause%2Feffect/", "/library/topics/50%25%20off/", "/library/topics/%C3%A9%3F%23/"]:
        assert f'href="{href}"' in html, href
        page = author_browser.get(href)
        assert page.status_code == 200 and 'href="/library/chunks/' in page.content.decode(), href
    assert 'href="/library/topics/%20%20/"' not in html  # a blank topic gets no link
    assert 'href="/library/topics/cause%2Feffect/"' in author_browser.get("/library/topics/").content.decode()

    nul = author_browser.get("/library/topics/a%00b/")
    assert nul.status_code == 422 and "form-error" in nul.content.decode()
