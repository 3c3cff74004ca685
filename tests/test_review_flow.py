"""The author's review flow in the browser: inbox, decision page, the book's decision log.

Pages are driven with the Django test client as the author and as an editor; each
test checks what the page shows and what the database holds afterwards.
"""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from approvals.models import Approval, DecisionLogEntry
from approvals.services import approval_request
from discovery.models import StoryCharter

from .approval_subjects import propose_charter, refs_to, sources_of
from .factories import BookFactory, StoryCharterFactory
from .log_tamper import guards_lifted, rewrite_entry

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def charter(book):
    return propose_charter(book)


@pytest.fixture
def approval(charter):
    return Approval.objects.get(pk=charter.approval_id)


def page(client, url, **extra):
    response = client.get(url, **extra)
    return response, response.content.decode()


def decide(client, approval, htmx: bool = False, **form):
    return client.post(f"/review/{approval.pk}/", form, **(HX if htmx else {}))


# --- Inbox -------------------------------------------------------------------


def test_the_inbox_lists_pending_decisions_newest_first_with_counts_per_book(author_browser, book, author):
    first = propose_charter(book, thrust="First thrust.")
    second = propose_charter(book, thrust="Second thrust.")
    other = BookFactory(owner=author, title="The Salt Road")
    third = propose_charter(other, thrust="Third thrust.")
    response, html = page(author_browser, "/review/")
    assert response.status_code == 200
    positions = [html.index(f"/review/{c.approval_id}/") for c in (third, second, first)]
    assert positions == sorted(positions)
    assert "3 pending" in html
    assert 'The Tide Clock</a> <span class="count">2</span>' in html
    assert 'The Salt Road</a> <span class="count">1</span>' in html
    assert 'aria-label="3 pending decisions"' in html  # the nav's Review link carries the count


def test_the_inbox_shows_superseded_approvals_in_their_own_list(author_browser, book, author, charter, approval):
    StoryCharter.objects.filter(pk=charter.pk).update(content=dict(charter.content, main_thrust="Edited later."))
    response = decide(author_browser, approval, verdict="approve", rationale="Looks right.")
    assert response.status_code == 409
    approval.refresh_from_db()
    assert approval.status == Approval.Status.SUPERSEDED
    _, html = page(author_browser, "/review/")
    pending = html[html.index('id="pending-heading"') : html.index('id="superseded-heading"')]
    superseded = html[html.index('id="superseded-heading"') :]
    assert f"/review/{approval.pk}/" not in pending and "No pending decisions." in pending
    assert f"/review/{approval.pk}/" in superseded and "superseded" in superseded


def test_the_inbox_fragment_is_served_to_htmx(author_browser, approval):
    response, html = page(author_browser, "/review/", **HX)
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="inbox"') and "<html" not in html
    assert f"/review/{approval.pk}/" in html
    _, html = page(author_browser, "/review/?compact=1", **HX)
    assert html.lstrip().startswith('<aside id="inbox-compact"') and f"/review/{approval.pk}/" in html


def test_an_editor_sees_the_books_pending_decisions_but_no_nav_count(editor_browser, approval):
    response, html = page(editor_browser, "/review/")
    assert response.status_code == 200
    assert f"/review/{approval.pk}/" in html
    assert "pending decision" not in html[: html.index("</header>")]


# --- Decision page -------------------------------------------------------------


def test_the_decision_page_shows_the_proposal_its_role_and_resolved_sources(author_browser, book):
    sources = sources_of(book)
    charter = propose_charter(book, source_refs=refs_to(sources))
    response, html = page(author_browser, f"/review/{charter.approval_id}/")
    assert response.status_code == 200
    assert "Story charter v1" in html and "A keeper must prove a drowning was murder." in html
    assert 'class="role role-sol">Sol</span>' in html
    assert "The tide tables disagree." in html  # the scratchpad entry
    assert "Mara lies to everyone, even to herself." in html  # the turn
    assert "Craft notes, fair play" in html  # the chunk's citation
    assert f'href="/library/chunks/{sources["chunk"].pk}/"' in html  # which opens the chunk in context
    assert 'data-testid="research-state">pending</span>' in html  # research with its admission state
    assert '<select id="verdict" name="verdict"' in html
    assert '<option value="approve"' in html and '<option value="reject"' in html
    assert '<option value="park"' not in html  # a charter takes approve or reject only
    assert '<textarea id="rationale" name="rationale" required' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert f'action="/review/{charter.approval_id}/"' in html and f'hx-post="/review/{charter.approval_id}/"' in html


def test_a_blank_rationale_shows_an_inline_error_and_changes_nothing(author_browser, book, charter, approval):
    for htmx in (False, True):
        response = decide(author_browser, approval, htmx=htmx, verdict="approve", rationale="   ")
        html = response.content.decode()
        assert response.status_code == 422  # in place or not, refused like the API
        assert 'role="alert"' in html and "a rationale is required" in html
        assert 'aria-invalid="true"' in html and '<option value="approve" selected>' in html
        assert "<form" in html  # the form is re-rendered for another try
    approval.refresh_from_db()
    charter.refresh_from_db()
    assert approval.status == Approval.Status.PENDING and charter.status == StoryCharter.Status.PROPOSED
    assert not DecisionLogEntry.objects.filter(book=book).exists()


def test_a_decision_in_place_shows_the_log_entry_and_refreshes_the_inbox(author_browser, book, charter, approval):
    response = decide(author_browser, approval, htmx=True, verdict="reject", rationale="Too quiet for a mystery.")
    assert response.status_code == 200
    assert json.loads(response["HX-Trigger"]) == {"approvals-changed": {}}
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="decision-panel"')
    entry = DecisionLogEntry.objects.get(book=book)
    assert f"Decision log entry #{entry.sequence}" in html and entry.hash in html
    assert "Too quiet for a mystery." in html and "ada, the author" in html and "author:ada" not in html
    charter.refresh_from_db()
    assert charter.status == StoryCharter.Status.REJECTED
    _, inbox = page(author_browser, "/review/", **HX)
    assert f"/review/{approval.pk}/" not in inbox and "No pending decisions." in inbox


def test_a_decision_without_javascript_redirects_to_the_page_showing_the_entry(author_browser, book, approval):
    response = decide(author_browser, approval, verdict="approve", rationale="The murder plot earns its lies.")
    assert response.status_code == 302 and response["Location"] == f"/review/{approval.pk}/"
    _, html = page(author_browser, response["Location"])
    entry = DecisionLogEntry.objects.get(book=book)
    assert 'data-testid="log-entry"' in html and entry.hash in html
    assert '<select id="verdict"' not in html  # decided: no form any more
    approval.refresh_from_db()
    assert approval.status == Approval.Status.DECIDED and approval.rationale == "The murder plot earns its lies."


def test_an_unknown_verdict_in_the_form_is_an_inline_error(author_browser, book, approval):
    response = decide(author_browser, approval, htmx=True, verdict="park", rationale="Later.")
    assert response.status_code == 422 and "takes approve, reject, not park" in response.content.decode()
    assert Approval.objects.get(pk=approval.pk).status == Approval.Status.PENDING


@pytest.mark.parametrize("word", ["approve it all", "APPROVE", ""])
def test_a_verdict_outside_the_choices_is_refused_alike_by_the_api_and_the_form(
    word, author_browser, author_api, book, charter, approval
):
    api = author_api.post(f"/approvals/{approval.pk}/verdict", {"verdict": word, "rationale": "Reads true."})
    assert api.status_code == 422 and api.json()["field"] == "verdict"
    assert api.json()["detail"].startswith("verdict: Input should be 'approve', 'reject', ")
    for htmx in (False, True):
        response = decide(author_browser, approval, htmx=htmx, verdict=word, rationale="Reads true.")
        html = response.content.decode()
        assert response.status_code == 422  # in place or not, refused like the API
        alert = html[html.index('id="decision-error">') + len('id="decision-error">') :]
        assert alert.startswith(escape(api.json()["detail"]) + "</p>")
        assert '<select id="verdict"' in html and 'aria-invalid="true"' in html
    approval.refresh_from_db()
    charter.refresh_from_db()
    assert approval.status == Approval.Status.PENDING and charter.status == StoryCharter.Status.PROPOSED
    assert not DecisionLogEntry.objects.filter(book=book).exists()


def test_an_editor_reads_the_decision_page_without_a_form_and_may_not_post(editor_browser, book, charter, approval):
    response, html = page(editor_browser, f"/review/{approval.pk}/")
    assert response.status_code == 200
    assert "Story charter v1" in html and 'data-testid="read-only"' in html
    assert '<select id="verdict"' not in html and 'name="rationale"' not in html
    refused = decide(editor_browser, approval, verdict="approve", rationale="I like it.")
    assert refused.status_code == 403 and "decision:make" in refused.content.decode()
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING
    assert not DecisionLogEntry.objects.filter(book=book).exists()


def test_a_post_without_the_csrf_token_is_refused(author, approval):
    from django.test import Client

    from .factories import PASSWORD

    client = Client(enforce_csrf_checks=True)
    assert client.login(username=author.username, password=PASSWORD)
    response = client.post(f"/review/{approval.pk}/", {"verdict": "approve", "rationale": "Yes."})
    assert response.status_code == 403
    assert Approval.objects.get(pk=approval.pk).status == Approval.Status.PENDING


def test_foreign_and_unknown_pages_are_404(author_browser, other_book, outsider):
    foreign = propose_charter(other_book)
    assert author_browser.get(f"/review/{foreign.approval_id}/").status_code == 404
    assert (
        author_browser.post(f"/review/{foreign.approval_id}/", {"verdict": "approve", "rationale": "x"}).status_code
        == 404
    )
    assert author_browser.get(f"/review/{uuid.uuid4()}/").status_code == 404
    assert author_browser.get(f"/review/books/{other_book.pk}/log/").status_code == 404
    assert Approval.objects.get(pk=foreign.approval_id).status == Approval.Status.PENDING


def test_the_pages_need_a_login(client, approval, book):
    for url in ("/review/", f"/review/{approval.pk}/", f"/review/books/{book.pk}/log/"):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]


# --- The book's decision log page ----------------------------------------------


def test_the_log_page_is_newest_first_verified_and_keeps_rejected_material(author_browser, book, author_api):
    rejected = propose_charter(book, thrust="A thrust the author turns down.")
    approved = propose_charter(book, thrust="The thrust she keeps.")
    author_api.post(f"/approvals/{rejected.approval_id}/verdict", {"verdict": "reject", "rationale": "Too tame."})
    author_api.post(f"/approvals/{approved.approval_id}/verdict", {"verdict": "approve", "rationale": "Sharp."})
    response, html = page(author_browser, f"/review/books/{book.pk}/log/")
    assert response.status_code == 200
    assert 'data-testid="log-badge">verified</span>' in html
    assert html.index("Sharp.") < html.index("Too tame.")  # newest first
    assert "decision-reject" in html and "Story charter v1: A thrust the author turns down." in html
    assert f"/api/v1/books/{book.pk}/decision-log/export" in html


def test_the_log_page_badge_names_the_broken_entry(author_browser, book, author_api):
    for i in range(3):
        charter = propose_charter(book, thrust=f"Thrust {i}.")
        author_api.post(f"/approvals/{charter.approval_id}/verdict", {"verdict": "reject", "rationale": f"No {i}."})
    with guards_lifted() as cursor:
        rewrite_entry(cursor, book, 2, rationale="Rewritten.")
    _, html = page(author_browser, f"/review/books/{book.pk}/log/")
    assert 'data-testid="log-badge">broken at entry 2</span>' in html
    assert "hash does not match" in html


def test_an_editor_reads_the_log_page(editor_browser, book):
    response, html = page(editor_browser, f"/review/books/{book.pk}/log/")
    assert response.status_code == 200 and "No decisions yet." in html


# --- Query counts stay flat as the data grows ----------------------------------


def bulk_approvals(book, count: int) -> None:
    charters = [StoryCharterFactory(book=book) for _ in range(count)]
    for charter in charters:
        approval_request(
            book=book,
            kind="story-charter",
            subject_type="charter",
            subject_id=charter.pk,
            summary=f"Story charter v{charter.version}",
            requested_by_role="sol",
        )


def queries_for(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


def test_inbox_and_log_page_query_counts_do_not_grow_with_the_data(author_browser, book, author_api):
    bulk_approvals(book, 3)
    first = Approval.objects.filter(book=book, status="pending").first()
    author_api.post(f"/approvals/{first.pk}/verdict", {"verdict": "reject", "rationale": "Not this one."})
    small_inbox = queries_for(author_browser, "/review/")
    small_log = queries_for(author_browser, f"/review/books/{book.pk}/log/")
    bulk_approvals(book, 60)
    for approval in Approval.objects.filter(book=book, status="pending")[:30]:
        author_api.post(f"/approvals/{approval.pk}/verdict", {"verdict": "reject", "rationale": "Not this one."})
    assert queries_for(author_browser, "/review/") == small_inbox
    assert queries_for(author_browser, f"/review/books/{book.pk}/log/") == small_log
    decision = Approval.objects.filter(book=book, status="pending").first()
    assert queries_for(author_browser, f"/review/{decision.pk}/") <= 20


def test_a_gate_decision_page_offers_the_seven_loop_verdicts_and_decides_in_place(book, sol_api, author_browser):
    from .loop_scenes import ask_gate, start_discovery, url

    start_discovery(book)  # the loop begins with the discovery
    assert sol_api.get(url(book)).status_code == 200
    approval = Approval.objects.get(pk=ask_gate(sol_api, book, "G0").json()["approval_id"])
    _, html = page(author_browser, f"/review/{approval.pk}/")
    for word in ("approve", "approve-with-constraint", "redirect", "explore-alternatives", "abandon", "park", "extend"):
        assert f'<option value="{word}"' in html
    assert '<option value="reject"' not in html
    missing = decide(author_browser, approval, htmx=True, verdict="extend", rationale="More rounds.", constraint="")
    assert missing.status_code == 422 and "extend needs what is granted" in missing.content.decode()
    assert not DecisionLogEntry.objects.filter(book=book).exists()
    done = decide(
        author_browser, approval, htmx=True, verdict="extend", rationale="More rounds.", constraint="round_cap=9"
    )
    assert done.status_code == 200 and "Decision log entry #1" in done.content.decode()
    assert DecisionLogEntry.objects.get(book=book).decision == "extend"


def test_the_nav_count_refreshes_after_a_decision(author_browser, approval):
    _, html = page(author_browser, "/review/")
    listens = 'hx-trigger="approvals-changed from:body, agents-finished from:body"'
    assert f'id="review-nav" hx-get="/review/?nav=1" {listens}' in html
    _, before = page(author_browser, "/review/?nav=1", **HX)
    assert before.startswith('<li id="review-nav"') and 'aria-label="1 pending decision"' in before
    decide(author_browser, approval, htmx=True, verdict="approve", rationale="Yes, this one.")
    _, after = page(author_browser, "/review/?nav=1", **HX)
    assert "pending decision" not in after and ">Review</a>" in after


def test_the_inbox_narrows_to_one_book_and_pages_through_older_decisions(author, author_browser, book):
    from approvals.views import PER_PAGE

    from .factories import ApprovalFactory, BookFactory

    second = BookFactory(owner=author, title="The Second Book")
    mine = {str(ApprovalFactory(book=book, summary=f"Tide note {i:03d}").pk) for i in range(PER_PAGE + 3)}
    ApprovalFactory(book=second, summary="Elsewhere")

    first = author_browser.get(f"/review/?book={book.pk}")
    older = author_browser.get(f"/review/?book={book.pk}&page=2")
    assert first.status_code == older.status_code == 200
    assert b"Elsewhere" not in first.content and b"Elsewhere" not in older.content

    def listed(response) -> set[str]:
        return {pk for pk in mine if f"/review/{pk}/".encode() in response.content}

    assert len(listed(first)) == PER_PAGE and len(listed(older)) == 3
    assert listed(first).isdisjoint(listed(older))
    assert f"book={book.pk}&amp;page=1".encode() in older.content  # the pager keeps the filter


def test_the_inbox_refuses_a_book_that_is_not_yours(author_browser, other_book):
    assert author_browser.get(f"/review/?book={other_book.pk}").status_code == 404
    assert author_browser.get("/review/?book=not-a-uuid").status_code == 404
