"""Big reads are bounded (issues 19 and 20): the discovery view, the book page and dossiers carry at most a page
of each collection, with a working link to the rest.

Each scene is a book with more items in every collection than the page size (``VIEW_PAGE``, the API's default
page of 50), made through the factories; the rest is then read through the link the response gives.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from discovery.models import KnowledgeBase
from discovery.selectors import VIEW_PAGE

from .discovery_support import start
from .factories import (
    KnowledgeBaseFactory,
    KnowledgeClaimFactory,
    KnowledgeLinkFactory,
    ObservationFactory,
    ScratchpadEntryFactory,
    StoryCharterFactory,
    ThrustCandidateFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db
EXTRA = 5  # items beyond one page
MORE = VIEW_PAGE + EXTRA


@pytest.fixture
def big_book(author_api, book):
    """A started book with MORE turns (each with an observation), thrusts, scratchpad entries and charters,
    and more than a page of knowledge bases."""
    session = start(author_api, book)
    for ordinal in range(1, MORE + 1):
        ObservationFactory(turn=TurnFactory(session=session, ordinal=ordinal), key=f"k{ordinal}")
        ScratchpadEntryFactory(session=session, sequence=ordinal)
        ThrustCandidateFactory(session=session)
        StoryCharterFactory(book=book, session=session, version=ordinal)
    for n in range(MORE):
        base = KnowledgeBaseFactory(scope=KnowledgeBase.Scope.SERIES, name=f"Series base {n:03}")
        KnowledgeLinkFactory(book=book, base=base, relation="series-canon")
    return book, session


def _api_path(url: str) -> tuple[str, dict]:
    """An absolute API link as (path under /api/v1, query)."""
    parts = urlsplit(url)
    assert parts.path.startswith("/api/v1/"), url
    return parts.path[len("/api/v1") :], {k: v[0] for k, v in parse_qs(parts.query).items()}


COLLECTIONS = {
    # name in the view -> what identifies an item (to check the rest follows the page with no gap nor repeat)
    "turns": "ordinal",
    "observations": "key",
    "thrusts": "id",
    "scratchpad": "sequence",
    "charters": "version",
    "knowledge_bases": "id",
}


def test_the_discovery_view_gives_a_page_of_each_collection_and_a_working_link_to_the_rest(author_api, big_book):
    book, _ = big_book
    response = author_api.get(f"/books/{book.pk}/discovery")
    assert response.status_code == 200
    view = response.json()
    assert view["limit"] == VIEW_PAGE

    for name, ident in COLLECTIONS.items():
        assert len(view[name]) == VIEW_PAGE, name
        assert view["next"][name], f"{name}: more follow, so a link"
        path, query = _api_path(view["next"][name])
        assert query == {"limit": str(VIEW_PAGE), "offset": str(VIEW_PAGE)}, name
        rest = author_api.get(path, **query)
        assert rest.status_code == 200, (name, rest.content)
        page = rest.json()
        total = MORE + (3 if name == "knowledge_bases" else 0)  # the literary, book and run bases besides
        assert page["count"] == total, name
        assert len(page["items"]) == total - VIEW_PAGE, name
        seen = [item[ident] for item in view[name]] + [item[ident] for item in page["items"]]
        assert len(set(map(str, seen))) == total, f"{name}: the page and the rest cover every item once"

    assert [t["ordinal"] for t in view["turns"]] == list(range(1, VIEW_PAGE + 1))
    assert [c["version"] for c in view["charters"]] == list(range(MORE, EXTRA, -1)), "newest first"


def test_a_book_within_one_page_gets_everything_and_no_links(author_api, book):
    session = start(author_api, book)
    TurnFactory(session=session, ordinal=1)

    view = author_api.get(f"/books/{book.pk}/discovery").json()

    assert len(view["turns"]) == 1
    assert view["next"] == {name: None for name in ("sessions", *COLLECTIONS)}


def test_luna_reads_a_bounded_view_and_her_bases_stay_role_scoped(luna_api, big_book):
    book, _ = big_book
    view = luna_api.get(f"/books/{book.pk}/discovery").json()

    assert {b["relation"] for b in view["knowledge_bases"]} <= {"literary-guidance", "book-canon", "run"}
    assert view["next"]["knowledge_bases"] is None, "series canon is withheld from Luna, so one page holds hers"
    for name in ("turns", "scratchpad"):
        assert len(view[name]) == VIEW_PAGE and view["next"][name]
        path, query = _api_path(view["next"][name])
        assert len(luna_api.get(path, **query).json()["items"]) == EXTRA
    assert luna_api.get(f"/books/{book.pk}/knowledge-bases").json()["count"] == len(view["knowledge_bases"])


def test_the_discovery_view_stays_the_same_size_when_the_book_grows(author_api, big_book):
    book, session = big_book
    before = author_api.get(f"/books/{book.pk}/discovery").content
    for ordinal in range(MORE + 1, MORE + 40):
        ObservationFactory(turn=TurnFactory(session=session, ordinal=ordinal), key=f"k{ordinal}")
        ScratchpadEntryFactory(session=session, sequence=ordinal)
    after = author_api.get(f"/books/{book.pk}/discovery").content
    assert len(after) == len(before)


def test_the_rest_of_a_collection_is_refused_to_a_caller_who_may_not_read_the_book(outsider, big_book):
    from django.test import Client

    from novelgraph.core.services import api_key_create

    from .conftest import Api

    book, session = big_book
    stranger = Api(Client(), api_key_create(owner=outsider, role="author")[1])
    for path in (
        f"/sessions/{session.pk}/turns",
        f"/sessions/{session.pk}/observations",
        f"/sessions/{session.pk}/thrusts",
        f"/books/{book.pk}/turns",
        f"/books/{book.pk}/observations",
        f"/books/{book.pk}/thrusts",
        f"/books/{book.pk}/scratchpad",
        f"/books/{book.pk}/charters",
        f"/books/{book.pk}/knowledge-bases",
    ):
        assert stranger.get(path).status_code == 404, path


# --- The book page ----------------------------------------------------------------------------------------


def _show_more(html: str, section: str) -> str | None:
    match = re.search(r'hx-get="([^"]*more=' + section + r'[^"]*)"', html)
    return match.group(1).replace("&amp;", "&") if match else None


PAGE_ITEMS = {  # section -> how each item shows on the page
    "turns": r'id="turn-[0-9a-f-]+"',
    "thrusts": r'<article class="thrust" aria-labelledby="thrust-[0-9a-f-]+"',
    "charters": r'id="charter-[0-9a-f-]+"',
    "claims": r'id="claim-[0-9a-f-]+"',
}


@pytest.fixture
def big_canon(big_book, author):
    """MORE approved claims in the book's own canon base (one decided promotion stands for them)."""
    from django.utils import timezone

    from .factories import ApprovalFactory

    book, _ = big_book
    base = KnowledgeBase.objects.get(scope=KnowledgeBase.Scope.BOOK, owner_id=str(book.pk))
    approval = ApprovalFactory(
        book=book,
        kind="canon-promotion",
        subject_type="claim",
        status="decided",
        verdict="approve",
        rationale="Canon.",
        decided_by=author,
        decided_at=timezone.now(),
    )
    for n in range(MORE):
        KnowledgeClaimFactory(base=base, subject=f"Subject {n}", status="approved", approval=approval)
    return big_book


def test_the_book_page_shows_a_page_of_each_collection_and_show_more_brings_the_rest(author_browser, big_canon):
    book, _ = big_canon
    response = author_browser.get(f"/books/{book.pk}/")
    assert response.status_code == 200
    html = response.content.decode()

    for section, item in PAGE_ITEMS.items():
        assert len(re.findall(item, html)) == VIEW_PAGE, section
        url = _show_more(html, section)
        assert url, f"{section}: a show-more link"
        rest = author_browser.get(url, HTTP_HX_REQUEST="true")
        assert rest.status_code == 200, section
        fragment = rest.content.decode()
        assert "<html" not in fragment, "HTMX gets the items alone"
        assert len(re.findall(item, fragment)) == EXTRA, section
        assert _show_more(fragment, section) is None, f"{section}: nothing after the last page"
        assert not set(re.findall(item.replace("[0-9a-f-]+", "([0-9a-f-]+)"), fragment)) & set(
            re.findall(item.replace("[0-9a-f-]+", "([0-9a-f-]+)"), html)
        ), f"{section}: the next page repeats nothing"
        whole = author_browser.get(url)  # without JavaScript: a page of its own
        assert whole.status_code == 200 and "<html" in whole.content.decode()
        assert len(re.findall(item, whole.content.decode())) == EXTRA, section

    assert _show_more(html, "bases"), "more knowledge bases than a page"
    assert "50+ entries" in html


def test_the_book_page_stays_the_same_size_when_the_book_grows(author_browser, big_book):
    book, session = big_book
    before = len(author_browser.get(f"/books/{book.pk}/").content)
    for ordinal in range(MORE + 1, MORE + 30):
        ObservationFactory(turn=TurnFactory(session=session, ordinal=ordinal), key=f"k{ordinal}")
        ThrustCandidateFactory(session=session)
    after = len(author_browser.get(f"/books/{book.pk}/").content)
    assert abs(after - before) < 200, (before, after)  # a timestamp or a count may differ by a few bytes


@pytest.mark.parametrize("offset", ["-5", "abc", "99999999999999999999999"])
def test_a_bad_offset_on_the_book_page_is_no_error(author_browser, big_book, offset):
    book, _ = big_book
    response = author_browser.get(f"/books/{book.pk}/?more=turns&offset={offset}", HTTP_HX_REQUEST="true")
    assert response.status_code == 200


def test_another_persons_book_page_sections_are_not_found(client, outsider, big_book):
    from .factories import PASSWORD

    book, _ = big_book
    client.login(username=outsider.username, password=PASSWORD)
    assert client.get(f"/books/{book.pk}/?more=turns&offset=50").status_code == 404


# --- Dossiers -------------------------------------------------------------------------------------------


DOSSIER_COLLECTIONS = {"claims": "id", "scratchpad": "id", "observations": "id"}


def test_a_dossier_holds_a_page_of_each_collection_and_links_to_the_rest(author_api, sol_api, big_canon):
    book, _ = big_canon
    created = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol"})
    assert created.status_code == 201, created.content
    content = sol_api.get(f"/dossiers/{created.json()['id']}").json()["content"]
    assert content["limit"] == VIEW_PAGE

    for name, ident in DOSSIER_COLLECTIONS.items():
        assert len(content[name]) == VIEW_PAGE, name
        path, query = _api_path(content["more"][name])
        rest = sol_api.get(path, **query)
        assert rest.status_code == 200, (name, rest.content)
        items = rest.json()["items"]
        assert len(items) == EXTRA and rest.json()["count"] == MORE, name
        assert not {str(i[ident]) for i in items} & {str(i[ident]) for i in content[name]}, name


def test_a_dossier_of_a_small_book_holds_everything_and_links_nowhere(author_api, book):
    session = start(author_api, book)
    ScratchpadEntryFactory(session=session, sequence=1)
    content = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol"}).json()["content"]
    assert len(content["scratchpad"]) == 1
    collections = ("claims", "scratchpad", "observations", "author_constraints", "knowledge_bases")
    assert content["more"] == dict.fromkeys(collections)


def test_a_dossier_stored_before_the_bound_is_read_capped_with_its_links(author_api, author, book):
    from .factories import ContextDossierFactory

    session = start(author_api, book)
    entries = [{"id": str(n), "sequence": n} for n in range(MORE)]
    dossier = ContextDossierFactory(
        book=book, session=session, agent_role="sol", content={"session_id": str(session.pk), "scratchpad": entries}
    )

    content = author_api.get(f"/dossiers/{dossier.pk}").json()["content"]

    assert [e["sequence"] for e in content["scratchpad"]] == list(range(VIEW_PAGE))
    assert content["more"]["scratchpad"].endswith(f"/books/{book.pk}/scratchpad?limit=50&offset=50")
    dossier.refresh_from_db()
    assert len(dossier.content["scratchpad"]) == MORE, "the stored snapshot is never changed"


def test_the_dossier_page_shows_the_snapshots_page_and_links_to_the_rest(author_api, author_browser, big_canon):
    book, _ = big_canon
    dossier_id = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol"}).json()["id"]

    html = author_browser.get(f"/books/{book.pk}/dossiers/{dossier_id}/").content.decode()

    assert html.count('class="entry"') == VIEW_PAGE
    assert f"the first {VIEW_PAGE}" in html
    url = _show_more(html, "claims")
    assert url
    assert url.endswith(f"offset={VIEW_PAGE}")
    fragment = author_browser.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert len(re.findall(PAGE_ITEMS["claims"], fragment)) == EXTRA, "the claims past the snapshot's"
    assert _show_more(fragment, "claims") is None


def test_the_dossier_takes_the_same_statements_and_size_at_any_size(author_api, big_canon):
    from discovery.services.dossiers import dossier_content

    from .sqltrace import sql_trace

    book, session = big_canon
    with sql_trace() as small:
        before = dossier_content(book=book, session=session, agent_role="sol")
    for ordinal in range(MORE + 1, MORE + 30):
        ObservationFactory(turn=TurnFactory(session=session, ordinal=ordinal), key=f"k{ordinal}")
        ScratchpadEntryFactory(session=session, sequence=ordinal)
    with sql_trace() as large:
        after = dossier_content(book=book, session=session, agent_role="sol")
    assert len(small) == len(large)
    assert {k: len(v) for k, v in before.items() if isinstance(v, list)} == {
        k: len(v) for k, v in after.items() if isinstance(v, list)
    }


def test_the_dossiers_page_lists_a_page_of_snapshots_per_role_and_links_to_older_ones(author_browser, author, book):
    from datetime import timedelta

    from django.utils import timezone

    from .factories import ContextDossierFactory

    now = timezone.now()
    for n in range(MORE):
        ContextDossierFactory(book=book, agent_role="luna", created_at=now - timedelta(minutes=n))
    ContextDossierFactory(book=book, agent_role="sol")

    html = author_browser.get(f"/books/{book.pk}/dossiers/").content.decode()

    luna = html[html.index('id="dossiers-list-luna"') :]
    luna = luna[: luna.index("</section>")]
    assert luna.count("Snapshot of") == VIEW_PAGE
    older = re.search(r'hx-get="([^"]+)"', luna).group(1).replace("&amp;", "&")
    rest = author_browser.get(older, HTTP_HX_REQUEST="true").content.decode()
    section = rest[rest.index('id="dossiers-list-luna"') :]
    section = section[: section.index("</section>")]
    assert section.count("Snapshot of") == EXTRA
    assert "Older snapshots" not in section
    sol = html[html.index('id="dossiers-list-sol"') :]
    assert sol[: sol.index("</section>")].count("Snapshot of") == 1


# --- Other collections in API responses --------------------------------------------------------------------


def test_a_library_source_gives_a_page_of_its_chunks_and_a_link_to_the_rest(sol_api, db):
    from .factories import KnowledgeChunkFactory, KnowledgeSourceFactory

    source = KnowledgeSourceFactory()
    for position in range(MORE):
        KnowledgeChunkFactory(source=source, position=position)

    detail = sol_api.get(f"/library/sources/{source.pk}").json()

    assert [c["position"] for c in detail["chunks"]] == list(range(VIEW_PAGE))
    path, query = _api_path(detail["chunks_next"])
    rest = sol_api.get(path, **query).json()
    assert [c["position"] for c in rest["items"]] == list(range(VIEW_PAGE, MORE)) and rest["count"] == MORE


def test_an_as_of_dossier_holds_a_page_of_the_canon_then_and_links_to_the_codex_as_of_then(
    author_api, sol_api, big_canon
):
    """Both features at once (canon x bounded): the as-of dossier's story rows are capped like the others, and
    their rest is the codex as of the same chapter (a reveal first shown later stays withheld there too)."""
    from discovery.models import KnowledgeClaim

    book, _ = big_canon
    later = KnowledgeClaim.objects.filter(base__owner_id=str(book.pk), subject="Subject 0").get()
    KnowledgeClaim.objects.filter(pk=later.pk).update(reveal="twist", first_shown_chapter=9)

    created = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol", "as_of_chapter": 3})
    assert created.status_code == 201, created.content
    content = sol_api.get(f"/dossiers/{created.json()['id']}").json()["content"]

    assert content["as_of_chapter"] == 3
    assert len(content["claims"]) == VIEW_PAGE
    assert str(later.pk) not in {c["id"] for c in content["claims"]}, "a later reveal is withheld as of chapter 3"
    assert content["scratchpad"] == [] and content["observations"] == []
    assert content["more"]["scratchpad"] is None and content["more"]["observations"] is None
    path, query = _api_path(content["more"]["claims"])
    # The codex caps its claims too (tests/test_capped_lists.py): the rest is its paged claims as of chapter 3.
    assert path.endswith(f"/books/{book.pk}/codex/claims")
    assert query == {"as_of_chapter": "3", "limit": str(VIEW_PAGE), "offset": str(VIEW_PAGE)}
    rest = sol_api.get(path, **query)
    assert rest.status_code == 200, rest.content
    assert rest.json()["count"] == MORE - 1
    codex = sol_api.get(f"/books/{book.pk}/codex/claims", as_of_chapter=3, limit=MORE).json()["items"]
    ids = [c["id"] for c in codex]
    assert len(ids) == MORE - 1 and str(later.pk) not in ids
    assert ids[:VIEW_PAGE] == [c["id"] for c in content["claims"]], "the dossier holds the codex's first page"
    assert ids[VIEW_PAGE:] == [c["id"] for c in rest.json()["items"]], "and the link gives the rest"


def test_the_rest_of_the_view_reads_every_session_of_the_book_as_one_record(author_api, book):
    """Two sessions (an older round and the current one): the view's first page and its next link walk the
    book's turns across both, in the view's order, with nothing left out or repeated."""
    from discovery.models import DiscoverySession

    older = DiscoverySession.objects.create(book=book, status=DiscoverySession.Status.CLOSED)
    for ordinal in range(1, 31):
        TurnFactory(session=older, ordinal=ordinal)
    current = start(author_api, book)
    for ordinal in range(1, 31):
        TurnFactory(session=current, ordinal=ordinal)

    view = author_api.get(f"/books/{book.pk}/discovery").json()
    path, query = _api_path(view["next"]["turns"])
    rest = author_api.get(path, **query).json()

    walked = [(t["session_id"], t["ordinal"]) for t in view["turns"] + rest["items"]]
    assert len(view["sessions"]) == 2 and rest["count"] == 60
    assert walked == [(str(older.pk), n) for n in range(1, 31)] + [(str(current.pk), n) for n in range(1, 31)]
