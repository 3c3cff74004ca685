"""Library sources and chunks: the API, the import (service, command, admin form), the admin
curation tools and the search page."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from library.models import KnowledgeChunk, KnowledgeSource
from library.schemas import SourceImportIn
from library.search import search
from library.seed import seed_curated_library
from library.services import source_import, split_document
from novelgraph.core.auth import principal_for_user
from novelgraph.core.errors import Conflict, Forbidden

from .factories import PASSWORD, KnowledgeChunkFactory, KnowledgeSourceFactory, UserFactory

DATA = Path(__file__).parent / "data"
MARKDOWN = DATA / "fair_play_notes.md"
PLAIN = DATA / "plain_notes.txt"
SOURCE_BODY = {"title": "On Clues", "origin": "in-house", "license_note": "CC BY 4.0", "version": "1.0"}


def import_document(principal, progress=None, **fields):
    """Import a document as the admin and the command do: fields through the import schema."""
    return source_import(principal=principal, payload=SourceImportIn(**fields), progress=progress)


@pytest.fixture
def curated(db):
    seed_curated_library(KnowledgeSource, KnowledgeChunk)


@pytest.fixture
def staff(db):
    return UserFactory(username="curator", is_staff=True, is_superuser=True)


@pytest.fixture
def staff_client(staff):
    client = Client()
    assert client.login(username=staff.username, password=PASSWORD)
    return client


# --- Search API --------------------------------------------------------------------


def test_an_agent_searches_the_library(sol_api, curated):
    response = sol_api.get("/library/search", q="causality")

    assert response.status_code == 200
    body = response.json()
    assert body["mode"] in {"fts5", "postgres"}
    assert [r["citation"] for r in body["results"]] == ["Scene causality"]
    assert body["results"][0]["source_title"] == "NovelGraph Curated Craft Library"


def test_search_limit_and_filters_are_validated(sol_api, curated):
    assert sol_api.get("/library/search", q="the", limit=2).json()["results"].__len__() == 2
    for bad in [0, 51, -1, "x"]:
        response = sol_api.get("/library/search", q="pacing", limit=bad)
        assert response.status_code == 422, bad
        assert response.json()["field"] == "limit"
    response = sol_api.get("/library/search", q="x" * 10_001)
    assert response.status_code == 422
    assert response.json()["field"] == "q"
    assert sol_api.get("/library/search", q="  ").json()["results"] == []
    assert sol_api.get("/library/search").json()["results"] == []


def test_search_needs_authentication(anonymous_api):
    response = anonymous_api.get("/library/search", q="pacing")
    assert response.status_code == 401


def test_the_search_mode_setting_reaches_the_api(sol_api, curated, settings):
    settings.NOVELGRAPH_SEARCH_MODE = "like"
    body = sol_api.get("/library/search", q="pacing").json()
    assert body["mode"] == "like"
    assert body["results"][0]["score"] == 1  # like scores by the number of query words found


# --- Sources and chunks API -------------------------------------------------------------


def test_an_author_key_adds_a_source_and_a_cited_chunk_that_search_finds(author_api):
    response = author_api.post("/library/sources", SOURCE_BODY)
    assert response.status_code == 201, response.content
    source_id = response.json()["id"]
    assert KnowledgeSource.objects.filter(pk=source_id, title="On Clues").exists()

    response = author_api.post(
        f"/library/sources/{source_id}/chunks",
        {
            "content": "A clue must be visible before the reveal: the cormorant feather.",
            "topics": ["clues", " fair play ", "clues"],
            "applicability": ["mystery"],
            "citation": "On Clues § Visibility",
        },
    )

    assert response.status_code == 201, response.content
    chunk = KnowledgeChunk.objects.get(pk=response.json()["id"])
    assert chunk.topics == ["clues", "fair play"]
    assert chunk.position == 1
    assert [r["chunk_id"] for r in author_api.get("/library/search", q="cormorant").json()["results"]] == [
        str(chunk.pk)
    ]

    detail = author_api.get(f"/library/sources/{source_id}").json()
    assert detail["title"] == "On Clues"
    assert [c["citation"] for c in detail["chunks"]] == ["On Clues § Visibility"]


def test_a_browser_session_may_write_to_the_library(staff_client):
    response = staff_client.post("/api/v1/library/sources", SOURCE_BODY, content_type="application/json")
    assert response.status_code == 201


@pytest.mark.parametrize("agent", ["sol_api", "terra_api", "luna_api"])
def test_agents_only_read_the_library(agent, request):
    api = request.getfixturevalue(agent)
    source = KnowledgeSourceFactory()

    response = api.post("/library/sources", SOURCE_BODY)
    assert response.status_code == 403
    assert "literary:write" in response.json()["detail"]
    response = api.post(f"/library/sources/{source.pk}/chunks", {"content": "x", "citation": "y"})
    assert response.status_code == 403
    assert "literary:write" in response.json()["detail"]
    assert not KnowledgeSource.objects.filter(title="On Clues").exists()
    assert source.chunks.count() == 0

    assert api.get("/library/sources").status_code == 200
    assert api.get(f"/library/sources/{source.pk}").status_code == 200


def test_sources_are_listed_with_pagination(author_api, curated):
    for n in range(3):
        KnowledgeSourceFactory(title=f"Paged {n}")
    body = author_api.get("/library/sources", limit=2).json()
    assert body["count"] == KnowledgeSource.objects.count()
    assert len(body["items"]) == 2
    assert author_api.get("/library/sources", limit=201).status_code == 422


def test_source_errors_are_clear(author_api):
    author_api.post("/library/sources", SOURCE_BODY)
    response = author_api.post("/library/sources", SOURCE_BODY)
    assert response.status_code == 409
    assert response.json()["code"] == "duplicate_source"
    assert KnowledgeSource.objects.filter(title="On Clues").count() == 1

    response = author_api.post("/library/sources", {**SOURCE_BODY, "title": "   "})
    assert response.status_code == 422
    assert response.json()["field"] == "title"

    assert author_api.get("/library/sources/8d2f7a1e-0000-4000-8000-000000000000").status_code == 404
    assert author_api.get("/library/sources/not-a-uuid").status_code == 422

    source = KnowledgeSourceFactory()
    response = author_api.post(f"/library/sources/{source.pk}/chunks", {"content": " ", "citation": "c"})
    assert response.status_code == 422
    assert response.json()["field"] == "content"
    response = author_api.post(
        f"/library/sources/{source.pk}/chunks", {"content": "c", "citation": "c", "topics": ["x" * 101]}
    )
    assert response.status_code == 422
    assert response.json()["field"] == "topics.0"  # the one topic that is too long
    assert source.chunks.count() == 0


# --- Import ------------------------------------------------------------------------


def test_a_markdown_file_splits_into_one_cited_chunk_per_heading(author):
    source = import_document(
        principal_for_user(author),
        title="Fair-play notes",
        origin="in-house",
        license_note="CC BY 4.0",
        version="1.0",
        text=MARKDOWN.read_text(),
        topics="mystery, clues",
        applicability=["mystery"],
    )

    chunks = list(source.chunks.order_by("position"))
    assert [c.citation for c in chunks] == [
        "Fair-play notes § Notes on the Fair-Play Mystery",
        "Fair-play notes § Planting clues",
        "Fair-play notes § The detective's knowledge",
        "Fair-play notes § Specialist expertise",
        "Fair-play notes § A long section about fairness, part 1",
        "Fair-play notes § A long section about fairness, part 2",
        "Fair-play notes § A long section about fairness, part 3",
        "Fair-play notes § Red herrings",
        "Fair-play notes § Closing thoughts",
    ]
    assert [c.position for c in chunks] == list(range(1, 10))
    assert all(c.topics == ["mystery", "clues"] and c.applicability == ["mystery"] for c in chunks)
    assert all(len(c.content) <= 2_000 + 100 for c in chunks)
    planting = chunks[1]
    assert planting.content.startswith("Planting clues\n\nEvery decisive clue needs a first visible appearance.")
    assert "Camouflage is not concealment." in planting.content
    assert "# This line is code, not a heading" in chunks[7].content  # fenced code is not a heading
    hits = search("bitter almonds").results
    assert [h["citation"] for h in hits] == ["Fair-play notes § The detective's knowledge"]


def test_plain_text_splits_into_paragraph_groups_cited_by_part(author):
    source = import_document(
        principal_for_user(author),
        title="Choices",
        origin="in-house",
        license_note="CC0",
        version="1",
        text=PLAIN.read_text(),
    )

    chunks = list(source.chunks.order_by("position"))
    assert [c.citation for c in chunks] == ["Choices, part 1", "Choices, part 2"]
    assert all(1_200 <= len(c.content) <= 2_000 for c in chunks)
    assert chunks[0].content.startswith("Paragraph 1.")
    assert chunks[1].content.startswith("Paragraph 5.")
    assert "\n\n" in chunks[0].content  # paragraphs are kept whole


def test_a_long_paragraph_is_cut_at_sentences():
    text = " ".join(f"Sentence number {n} is here." for n in range(400))
    pieces = split_document(text, "Long")
    assert len(pieces) > 2
    assert all(len(content) <= 2_000 for content, _ in pieces)
    assert all(content.endswith(".") for content, _ in pieces)


def test_a_failing_import_leaves_nothing(author):
    KnowledgeSourceFactory(title="Clash", origin="in-house", version="1")
    before = (KnowledgeSource.objects.count(), KnowledgeChunk.objects.count())

    with pytest.raises(Conflict):
        import_document(
            principal_for_user(author),
            title="Clash",
            origin="in-house",
            license_note="x",
            version="1",
            text=MARKDOWN.read_text(),
        )

    assert (KnowledgeSource.objects.count(), KnowledgeChunk.objects.count()) == before


def test_a_failure_mid_import_rolls_back_the_chunks_already_written(author):
    before = (KnowledgeSource.objects.count(), KnowledgeChunk.objects.count())
    written = []

    def interrupted(n: int) -> None:
        written.append(n)
        if len(written) == 3:
            raise RuntimeError("the import was interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        import_document(
            principal_for_user(author),
            title="Interrupted",
            origin="in-house",
            license_note="x",
            version="1",
            text=MARKDOWN.read_text(),
            progress=interrupted,
        )

    assert len(written) == 3  # three chunks were written before the failure...
    assert (KnowledgeSource.objects.count(), KnowledgeChunk.objects.count()) == before  # ...and none remain
    assert search("bitter almonds").results == []


def test_an_agent_may_not_import(author, sol_api):
    from novelgraph.core.auth import principal_for_key

    principal = principal_for_key(sol_api.key)
    with pytest.raises(Forbidden, match="literary:write"):
        import_document(principal, title="t", origin="o", license_note="l", version="1", text="Some text.")


def test_the_import_source_command_imports_with_citations(db, capsys):
    call_command(
        "import_source",
        str(MARKDOWN),
        "--title",
        "Fair-play notes",
        "--origin",
        "in-house",
        "--license-note",
        "CC BY 4.0",
        "--version",
        "2.1",
        "--topics",
        "mystery,clues",
    )

    source = KnowledgeSource.objects.get(title="Fair-play notes", version="2.1")
    assert source.chunks.count() == 9
    assert source.chunks.get(position=2).citation == "Fair-play notes § Planting clues"
    assert source.chunks.get(position=2).applicability == ["general"]
    assert source.chunks.get(position=2).topics == ["mystery", "clues"]
    assert "as 9 chunks" in capsys.readouterr().out


def test_the_import_source_command_reports_a_bad_file(db, tmp_path):
    empty = tmp_path / "empty.md"
    empty.write_text("   \n")
    with pytest.raises(CommandError, match="file: the document is empty"):
        call_command(
            "import_source", str(empty), "--title", "t", "--origin", "o", "--license-note", "l", "--version", "1"
        )
    with pytest.raises(CommandError, match="cannot read"):
        call_command(
            "import_source", str(tmp_path / "missing.md"), "--title", "t", "--origin", "o", "--license-note", "l",
            "--version", "1",
        )  # fmt: skip
    assert not KnowledgeSource.objects.filter(title="t").exists()


# --- Admin -------------------------------------------------------------------------


def test_staff_import_a_document_through_the_admin_form(staff_client):
    changelist = staff_client.get("/admin/library/knowledgesource/")
    assert changelist.status_code == 200
    assert b"/admin/library/knowledgesource/import/" in changelist.content

    form = staff_client.get("/admin/library/knowledgesource/import/")
    assert form.status_code == 200
    assert b'name="topics"' in form.content and b"Comma-separated" in form.content

    response = staff_client.post(
        "/admin/library/knowledgesource/import/",
        {
            "file": SimpleUploadedFile("notes.md", MARKDOWN.read_bytes(), content_type="text/markdown"),
            "title": "Admin notes",
            "origin": "in-house",
            "license_note": "CC BY 4.0",
            "version": "1.0",
            "topics": "mystery, clues",
            "applicability": "mystery",
        },
    )

    source = KnowledgeSource.objects.get(title="Admin notes")
    assert response.status_code == 302
    assert response["Location"] == f"/admin/library/knowledgesource/{source.pk}/change/"
    assert source.chunks.count() == 9
    assert all(c.applicability == ["mystery"] and c.topics == ["mystery", "clues"] for c in source.chunks.all())


def test_the_admin_import_form_refuses_bad_files_inline(staff_client):
    response = staff_client.post(
        "/admin/library/knowledgesource/import/",
        {
            "file": SimpleUploadedFile("notes.pdf", b"%PDF-1.4", content_type="application/pdf"),
            "title": "Bad",
            "origin": "o",
            "license_note": "l",
            "version": "1",
        },
    )
    assert response.status_code == 200
    assert b"Upload a .md or .txt file." in response.content

    response = staff_client.post(
        "/admin/library/knowledgesource/import/",
        {
            "file": SimpleUploadedFile("notes.txt", b"\xff\xfe\x00bad", content_type="text/plain"),
            "title": "Bad",
            "origin": "o",
            "license_note": "l",
            "version": "1",
        },
    )
    assert b"not UTF-8" in response.content
    assert not KnowledgeSource.objects.filter(title="Bad").exists()


def test_the_admin_lists_filters_and_searches_sources(staff_client, curated):
    KnowledgeChunkFactory(source=KnowledgeSourceFactory(title="Tides"), content="The spring tide floods the quay.")
    page = staff_client.get("/admin/library/knowledgesource/")
    for label in [b"By origin", b"By license note", b"By version"]:
        assert label in page.content

    found = staff_client.get("/admin/library/knowledgesource/", {"q": "quay"})
    assert b"Tides" in found.content and b"NovelGraph Curated Craft Library" not in found.content
    by_citation = staff_client.get("/admin/library/knowledgesource/", {"q": "Scene causality"})
    assert b"NovelGraph Curated Craft Library" in by_citation.content

    change = staff_client.get(f"/admin/library/knowledgesource/{KnowledgeSource.objects.get(title='Tides').pk}/change/")
    assert change.status_code == 200
    assert b'value="tension, conflict"' in change.content  # topics shown as a comma-separated list


def test_the_reindex_action_rebuilds_the_selected_sources(staff_client, curated):
    source = KnowledgeSource.objects.get(title="NovelGraph Curated Craft Library")
    response = staff_client.post(
        "/admin/library/knowledgesource/",
        {"action": "reindex_sources", "_selected_action": [str(source.pk)]},
        follow=True,
    )
    assert response.status_code == 200
    assert b"Re-indexed 5 chunks of 1 sources" in response.content
    assert [r["citation"] for r in search("causality").results] == ["Scene causality"]


def test_research_is_read_only_in_the_admin(staff_client):
    from .factories import ResearchItemFactory

    item = ResearchItemFactory()
    assert staff_client.get("/admin/library/researchitem/").status_code == 200
    page = staff_client.get(f"/admin/library/researchitem/{item.pk}/change/")
    assert page.status_code == 200
    assert b'name="status"' not in page.content
    response = staff_client.post(f"/admin/library/researchitem/{item.pk}/change/", {"status": "admitted"})
    assert response.status_code == 403
    item.refresh_from_db()
    assert item.status == "pending"
    assert staff_client.get("/admin/library/researchitem/add/").status_code == 403


# --- The search page ---------------------------------------------------------------


def test_the_search_page_works_without_javascript(editor_browser, curated):
    response = editor_browser.get("/library/", {"q": "pacing"})

    assert response.status_code == 200
    html = response.content.decode()
    assert '<form class="library-search" method="get" action="/library/"' in html
    assert 'hx-trigger="input changed delay:300ms, search"' in html
    assert "Scene causality" in html
    assert "NovelGraph Curated Craft Library" in html
    assert "Search mode: <strong>" in html
    assert ">pacing<" in html  # the topic badge
    assert ">general<" in html  # the applicability badge
    assert 'href="/library/" aria-current="page">Library</a>' in html


def test_the_search_page_answers_htmx_with_the_results_fragment(author_browser, curated):
    response = author_browser.get("/library/", {"q": "agency"}, HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="library-results"')
    assert "<html" not in html
    assert "Character agency" in html


def test_the_search_page_says_when_nothing_matches_and_survives_hostile_text(author_browser, curated):
    html = author_browser.get("/library/", {"q": 'NEAR("a" OR *) %_\\ 🙂'}).content.decode()
    assert "No passage contains any of" in html
    assert author_browser.get("/library/", {"q": "x" * 20_000}).status_code == 200


def test_the_search_page_needs_a_login(db):
    response = Client().get("/library/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_like_mode_says_how_it_ranks_on_the_page(author_browser, curated, settings):
    settings.NOVELGRAPH_SEARCH_MODE = "like"
    html = author_browser.get("/library/", {"q": "pacing scene"}).content.decode()
    assert "<strong>like</strong>" in html and "ranked by how many of your words" in html
    assert "2 of your words" in html  # Scene causality holds both


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite only")
def test_sqlite_like_mode_uses_the_registered_fold_function(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT library_fold(%s, %s)", ["CAFÉ Straße", '["\\u00c9COLE"]'])
        assert cursor.fetchone()[0] == "cafe strasse ecole"


def test_the_curated_library_is_curated_by_staff_not_by_any_author(author_api, author):
    curated = KnowledgeSource.objects.get(origin="novelgraph-curated", title="NovelGraph Curated Craft Library")
    before = curated.chunks.count()
    response = author_api.post(
        f"/library/sources/{curated.pk}/chunks", {"content": "Mine now.", "citation": "Hijack", "topics": []}
    )
    assert response.status_code == 403
    assert response.json()["code"] == "curated_by_staff"
    created = author_api.post(
        "/library/sources",
        {"title": "Lookalike", "origin": "novelgraph-curated", "license_note": "x", "version": "1"},
    )
    assert created.status_code == 403
    assert curated.chunks.count() == before
    author.is_staff = True
    author.save()
    response = author_api.post(
        f"/library/sources/{curated.pk}/chunks",
        {"content": "A staff addition.", "citation": "Staff note", "topics": []},
    )
    assert response.status_code == 201
