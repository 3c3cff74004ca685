"""The discovery pages: dashboard, book, scratchpad, dossiers and research, for each persona."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from approvals.models import Approval, DecisionLogEntry
from discovery.access import book_access
from discovery.models import ContextDossier, Turn
from library.models import ResearchItem
from library.schemas import ResearchIn
from library.services import research_propose
from novelgraph.core.auth import principal_for_user

from .factories import (
    PASSWORD,
    ApprovalFactory,
    BookFactory,
    ContextDossierFactory,
    DiscoverySessionFactory,
    KnowledgeBaseFactory,
    KnowledgeClaimFactory,
    KnowledgeLinkFactory,
    ObservationFactory,
    ResearchItemFactory,
    ScratchpadEntryFactory,
    StoryCharterFactory,
    ThrustCandidateFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(book):
    return DiscoverySessionFactory(book=book, current_question="Who does the reader trust at the end?")


@pytest.fixture
def scene(book, session):
    """A book in mid-discovery: a turn with an observation, entries from each agent, a thrust, a charter."""
    turn = TurnFactory(session=session, ordinal=1, content="The keeper lies to protect her sister.")
    ObservationFactory(turn=turn, session=session, key="protagonist-flaw", value="lies to protect")
    first = ScratchpadEntryFactory(
        session=session,
        sequence=1,
        agent_role="luna",
        kind="observation",
        content="Luna noticed the sister.",
        source_refs=[{"type": "turn", "id": str(turn.pk)}],
    )
    ScratchpadEntryFactory(
        session=session,
        sequence=2,
        agent_role="luna",
        kind="question",
        content="Does the sister know about the letter?",
        source_refs=[{"type": "entry", "id": str(first.pk)}],
    )
    ScratchpadEntryFactory(
        session=session,
        sequence=3,
        agent_role="terra",
        kind="hypothesis",
        content="Terra thinks the lie is the engine.",
    )
    ScratchpadEntryFactory(
        session=session,
        sequence=4,
        agent_role="sol",
        kind="question",
        content="Sol asks which ending the author wants.",
    )
    ThrustCandidateFactory(session=session, title="The lying keeper")
    charter = StoryCharterFactory(book=book, version=1)
    ApprovalFactory(book=book, subject_id=str(charter.pk))
    base = KnowledgeBaseFactory(scope="series", owner_id=str(book.series_id), name="Drowned City canon")
    KnowledgeLinkFactory(book=book, base=base, relation="series-canon")
    approval = ApprovalFactory(
        book=book, kind="canon-promotion", status="decided", verdict="approve", rationale="Fits.", decided_by=book.owner
    )
    KnowledgeClaimFactory(
        base=base, subject="The harbour", predicate="floods", value="every spring", status="approved", approval=approval
    )
    return {"turn": turn, "first": first}


PAGES = ["", "scratchpad/", "dossiers/", "research/"]


@pytest.mark.parametrize("page", PAGES)
def test_each_book_page_is_a_404_for_an_outsider(page, book, outsider):
    client = Client()
    client.login(username=outsider.username, password=PASSWORD)
    assert client.get(f"/books/{book.pk}/{page}").status_code == 404


@pytest.mark.parametrize("page", PAGES)
def test_each_book_page_sends_anonymous_visitors_to_log_in(page, book, client):
    response = client.get(f"/books/{book.pk}/{page}")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_an_unknown_book_is_a_404(author_browser):
    assert author_browser.get("/books/00000000-0000-0000-0000-000000000000/").status_code == 404


# --- Dashboard ---------------------------------------------------------------


def test_dashboard_lists_her_books_and_those_she_edits_with_pending_counts(author, editor, book, scene):
    edited = BookFactory(title="Someone else's saga", editors=[author])
    ApprovalFactory(book=edited)
    client = Client()
    client.login(username=author.username, password=PASSWORD)
    html = client.get("/").content.decode()
    assert "The Tide Clock" in html and "Someone else&#x27;s saga" in html
    assert ">editor</span>" in html and ">author</span>" in html
    assert '<span class="count">1</span> pending decision' in html
    assert "Recent activity" in html
    assert "The keeper lies to protect her sister." in html  # the latest turn
    assert "Sol asks which ending the author wants." in html  # the latest entry


def test_dashboard_has_a_constant_number_of_queries(author_browser, author, scene):
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert author_browser.get("/").status_code == 200
        return len(ctx.captured_queries)

    before = count()
    for n in range(3):
        extra = BookFactory(owner=author, title=f"Extra {n}")
        s = DiscoverySessionFactory(book=extra)
        TurnFactory(session=s, ordinal=1)
        ScratchpadEntryFactory(session=s, sequence=1)
        ApprovalFactory(book=extra)
    assert count() == before


def test_dashboard_empty_state_offers_to_start_a_book(author_browser):
    html = author_browser.get("/").content.decode()
    assert "Start a new book" in html and "/api/v1/books" not in html


# --- Book page -----------------------------------------------------------------


def test_book_page_shows_the_discovery_at_a_glance(author_browser, book, scene):
    response = author_browser.get(f"/books/{book.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert book.premise in html
    assert "Who does the reader trust at the end?" in html
    assert "The keeper lies to protect her sister." in html
    assert "protagonist-flaw" in html
    assert "The lying keeper" in html
    assert "Version 1" in html and ">proposed</span>" in html
    assert "Drowned City canon" in html and "series-canon" in html
    assert "The harbour</strong> floods every spring" in html
    for link in ("scratchpad/", "dossiers/", "research/"):
        assert f'href="/books/{book.pk}/{link}"' in html


def test_an_editor_reads_the_book_page(editor_browser, book, scene):
    response = editor_browser.get(f"/books/{book.pk}/")
    assert response.status_code == 200
    assert "You are the editor" in response.content.decode()


# --- Scratchpad ------------------------------------------------------------------


def test_scratchpad_lists_entries_in_creation_order_with_linked_sources(author_browser, book, scene):
    html = author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()
    positions = [html.index(text) for text in ("Luna noticed", "Does the sister", "Terra thinks", "Sol asks")]
    assert positions == sorted(positions)
    assert f'href="/books/{book.pk}/scratchpad/#turn-{scene["turn"].pk}"' in html
    assert f'href="/books/{book.pk}/scratchpad/#entry-{scene["first"].pk}"' in html


def test_scratchpad_filters_by_kind_and_role(author_browser, book, scene):
    html = author_browser.get(f"/books/{book.pk}/scratchpad/", {"kind": "question", "role": "luna"}).content.decode()
    assert "Does the sister know about the letter?" in html
    assert "Sol asks" not in html and "Luna noticed" not in html and "Terra thinks" not in html
    assert '<option value="question" selected>' in html


def test_scratchpad_filter_over_htmx_answers_only_the_list(author_browser, book, scene):
    response = author_browser.get(f"/books/{book.pk}/scratchpad/", {"kind": "question"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="entries"')
    assert "<nav" not in html
    assert "Does the sister" in html and "Sol asks" in html and "Terra thinks" not in html


def test_an_unknown_filter_value_shows_everything(author_browser, book, scene):
    html = author_browser.get(f"/books/{book.pk}/scratchpad/", {"kind": "gossip"}).content.decode()
    assert "Terra thinks" in html and "Sol asks" in html


def test_scratchpad_empty_states(author_browser, book):
    assert "Discovery has not started" in author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()
    DiscoverySessionFactory(book=book)
    assert "The scratchpad is empty" in author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()


# --- Dossiers ----------------------------------------------------------------------


def test_dossier_pages_show_what_a_role_was_and_was_not_given(author_browser, editor_browser, book):
    dossier = ContextDossierFactory(
        book=book,
        agent_role="luna",
        content={
            "capabilities": ["discovery:read", "scratchpad:write"],
            "knowledge_bases": [{"name": "Book canon", "relation": "book-canon"}],
            "withheld": ["series canon (luna lacks series:read)"],
            "claims": [],
            "scratchpad": [{"sequence": 1, "agent_role": "luna", "kind": "observation", "content": "seen"}],
        },
    )
    listing = author_browser.get(f"/books/{book.pk}/dossiers/").content.decode()
    assert f'href="/books/{book.pk}/dossiers/{dossier.pk}/"' in listing
    assert "No snapshot for Sol yet." in listing
    for client in (author_browser, editor_browser):
        html = client.get(f"/books/{book.pk}/dossiers/{dossier.pk}/").content.decode()
        assert ">given</span> <code>scratchpad:write</code>" in html
        assert ">not given</span> <code>series:read</code>" in html
        assert "series canon (luna lacks series:read)" in html


def test_a_dossier_of_another_book_is_a_404(author_browser, book, other_book):
    dossier = ContextDossierFactory(book=other_book)
    assert author_browser.get(f"/books/{book.pk}/dossiers/{dossier.pk}/").status_code == 404


# --- Research ------------------------------------------------------------------------


@pytest.fixture
def pending_research(book):
    item = ResearchItemFactory(book=book)
    approval = ApprovalFactory(
        book=book, kind="research-admission", subject_type="research", subject_id=str(item.pk), summary=item.title
    )
    ResearchItem.objects.filter(pk=item.pk).update(approval=approval)
    item.refresh_from_db()
    return item


def test_research_page_offers_the_author_admit_and_reject(author_browser, book, pending_research):
    html = author_browser.get(f"/books/{book.pk}/research/").content.decode()
    assert "Tide tables of the northern coast" in html
    assert 'value="approve">Admit</button>' in html and 'value="reject"' in html


def test_an_editor_sees_research_but_no_decision_buttons(editor_browser, book, pending_research):
    html = editor_browser.get(f"/books/{book.pk}/research/").content.decode()
    assert "Tide tables of the northern coast" in html
    assert "Admit</button>" not in html and "<textarea" not in html


def test_research_empty_state(author_browser, book):
    html = author_browser.get(f"/books/{book.pk}/research/").content.decode()
    assert "No research waits for admission." in html


def test_an_editor_posting_a_verdict_anyway_is_refused_and_nothing_changes(editor_browser, book, pending_research):
    response = editor_browser.post(
        f"/books/{book.pk}/research/{pending_research.pk}/decide/", {"verdict": "approve", "rationale": "Sure."}
    )
    assert response.status_code == 403
    pending_research.refresh_from_db()
    assert pending_research.status == "pending"
    assert Approval.objects.get(pk=pending_research.approval_id).status == "pending"


# --- Writes from the pages ---------------------------------------------------------------


def test_the_composer_adds_the_authors_turn_in_place(author_browser, book, session):
    response = author_browser.post(
        f"/books/{book.pk}/turns/", {"content": "The sister wrote the letter."}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="conversation"')
    assert "The sister wrote the letter." in html
    turn = Turn.objects.get(session=session)
    assert (turn.ordinal, turn.role, turn.written_by_id) == (1, "author", book.owner_id)


def test_the_composer_without_javascript_redirects_to_the_new_turn(author_browser, book, session):
    response = author_browser.post(f"/books/{book.pk}/turns/", {"content": "Plain form post."})
    turn = Turn.objects.get(session=session)
    assert response.status_code == 302
    assert response["Location"].endswith(f"#turn-{turn.pk}")


def test_an_empty_turn_shows_an_inline_error_and_adds_nothing(author_browser, book, session):
    response = author_browser.post(f"/books/{book.pk}/turns/", {"content": "   "}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    html = response.content.decode()
    assert 'class="form-error" role="alert"' in html and 'aria-invalid="true"' in html
    assert not Turn.objects.filter(session=session).exists()


def test_an_editor_writes_turns_as_the_editor(editor_browser, book, session):
    editor_browser.post(f"/books/{book.pk}/turns/", {"content": "Editor's note."})
    assert Turn.objects.get(session=session).role == "editor"


def test_an_outsider_cannot_post_a_turn(book, session, outsider):
    client = Client()
    client.login(username=outsider.username, password=PASSWORD)
    assert client.post(f"/books/{book.pk}/turns/", {"content": "Sneaky."}).status_code == 404
    assert not Turn.objects.exists()


def test_the_author_starts_the_discovery_from_the_book_page(author_browser, book):
    html = author_browser.get(f"/books/{book.pk}/").content.decode()
    assert "Start the discovery" in html
    response = author_browser.post(f"/books/{book.pk}/discovery/start/")
    assert response.status_code == 302
    assert book.sessions.get().status == "active"


def test_an_editor_cannot_start_the_discovery(editor_browser, book):
    assert "Start the discovery" not in editor_browser.get(f"/books/{book.pk}/").content.decode()
    assert editor_browser.post(f"/books/{book.pk}/discovery/start/").status_code == 403
    assert not book.sessions.exists()


def test_the_author_takes_a_dossier_snapshot_for_luna(author_browser, book, scene):
    response = author_browser.post(f"/books/{book.pk}/dossiers/new/", {"agent_role": "luna"})
    dossier = ContextDossier.objects.get(book=book)
    assert response.status_code == 302
    assert response["Location"] == f"/books/{book.pk}/dossiers/{dossier.pk}/"
    html = author_browser.get(response["Location"]).content.decode()
    assert ">not given</span> <code>series:read</code>" in html
    assert "series canon (luna lacks series:read)" in html
    assert "Drowned City canon" not in html  # Luna's snapshot carries no series canon


def test_an_editor_sees_no_snapshot_button_and_is_refused(editor_browser, book, scene):
    assert "Take snapshot" not in editor_browser.get(f"/books/{book.pk}/dossiers/").content.decode()
    response = editor_browser.post(f"/books/{book.pk}/dossiers/new/", {"agent_role": "sol"})
    assert response.status_code == 403
    assert not ContextDossier.objects.exists()


def test_an_unknown_role_snapshot_is_an_inline_error(author_browser, book, scene):
    response = author_browser.post(f"/books/{book.pk}/dossiers/new/", {"agent_role": "mars"})
    assert response.status_code == 422
    assert 'id="snapshot-error"' in response.content.decode()
    assert not ContextDossier.objects.exists()


def test_admitting_research_without_a_rationale_is_an_inline_error(author_browser, book, pending_research):
    response = author_browser.post(
        f"/books/{book.pk}/research/{pending_research.pk}/decide/",
        {"verdict": "approve", "rationale": " "},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 422
    assert "rationale" in response.content.decode()
    pending_research.refresh_from_db()
    assert pending_research.status == "pending"
    assert not DecisionLogEntry.objects.filter(book=book).exists()


def test_the_author_admits_research_with_a_rationale(author_browser, book):
    item = research_propose(
        access=book_access(principal_for_user(book.owner), book),
        payload=ResearchIn(
            url="https://example.org/tides",
            title="Tide tables",
            claim="High tide at 06:12.",
            citation="Coastal Almanac",
        ),
    )
    response = author_browser.post(
        f"/books/{book.pk}/research/{item.pk}/decide/",
        {"verdict": "approve", "rationale": "The almanac is authoritative."},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert ">admitted</span>" in html
    # The item moved from "Waiting" to "Decided" in the swapped lists.
    waiting, decided = html.split('id="decided-title"')
    assert "Tide tables" not in waiting and "Tide tables" in decided
    assert "No research waits for admission." in waiting
    item.refresh_from_db()
    assert item.status == "admitted"
    entry = DecisionLogEntry.objects.get(book=book)
    assert entry.rationale == "The almanac is authoritative."


def test_book_page_shows_where_the_loop_stands(author_browser, book):
    from discovery.loop.services import loop_ensure

    loop_ensure(book=book)
    html = author_browser.get(f"/books/{book.pk}/").content.decode()
    assert 'aria-current="step"><strong>G0</strong>' in html
    assert "Loop: <strong>Working</strong>" in html
    assert "Still missing before G0 can pass" in html and "Ask Sol to raise G0" in html
    assert f'href="/books/{book.pk}/loop/"' in html
