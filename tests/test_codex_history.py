"""The codex as a place (issue 15): canon grouped by knowledge base and subject, and each claim's whole
history one click away (every version, its sources, each decision with who, when, verdict and rationale),
on the page and at ``GET /books/{id}/codex/claims/{claim_id}/history``; read in a fixed number of queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from approvals.models import DecisionLogEntry
from approvals.services import decision_log_append
from approvals.views import PER_PAGE as LOG_PER_PAGE
from discovery.access import book_access
from discovery.models import KnowledgeBase, KnowledgeClaim
from discovery.selectors import codex_view
from novelgraph.core.auth import principal_for_key

from .discovery_support import start
from .factories import PASSWORD, BookFactory, KnowledgeChunkFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(author_api, book):
    return start(author_api, book)


def canon(author_api, book, subject, predicate, value, *, scope="book", **extra) -> str:
    scope_id = str(book.series_id if scope == "series" else book.pk)
    made = author_api.post(
        "/claims",
        {
            "scope": scope,
            "scope_id": scope_id,
            "subject": subject,
            "predicate": predicate,
            "value": value,
            "provenance": "author-stated",
            **extra,
        },
    )
    assert made.status_code == 201, made.content
    promoted = author_api.post(f"/claims/{made.json()['id']}/promote", {"book_id": str(book.pk), "rationale": "So."})
    assert promoted.status_code == 200, promoted.content
    return made.json()["id"]


def superseded_twice_then_retracted(sol_api, author_api, book) -> tuple[list[str], object]:
    """Tova's father: cited to a craft passage, made canon, superseded twice, then retracted."""
    chunk = KnowledgeChunkFactory(citation="Fair play, section 2")
    made = sol_api.post(
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": "Tova",
            "predicate": "is the daughter of",
            "value": "the harbour pilot",
            "provenance": "agent-inferred",
            "source_refs": [{"type": "chunk", "id": str(chunk.pk)}],
        },
    )
    assert made.status_code == 201, made.content
    first = made.json()["id"]
    done = author_api.post(f"/claims/{first}/promote", {"book_id": str(book.pk), "rationale": "The pilot, yes."})
    assert done.status_code == 200, done.content
    ids = [first]
    for value, why in (("the lighthouse keeper", "The keeper raised her."), ("a drowned smuggler", "Darker.")):
        new = author_api.post(
            f"/claims/{ids[-1]}/supersede", {"book_id": str(book.pk), "value": value, "rationale": why}
        )
        assert new.status_code == 200, new.content
        ids.append(new.json()["id"])
    gone = author_api.post(f"/claims/{ids[-1]}/retract", {"book_id": str(book.pk), "rationale": "Nobody's daughter."})
    assert gone.status_code == 200, gone.content
    return ids, chunk


# --- Grouping ---------------------------------------------------------------------------------------


def test_the_codex_groups_canon_by_knowledge_base_then_subject_by_name(author_api, author_browser, book, session):
    canon(author_api, book, "the coast", "drowns", "a street a year", scope="series")
    canon(author_api, book, "Tova", "fears", "deep water", true_from_chapter=3)
    canon(author_api, book, "ada", "keeps", "the tide clock")
    canon(author_api, book, "Tova", "reads", "the sea", true_from_chapter=1)

    html = author_browser.get(f"/books/{book.pk}/codex/").content.decode()
    records = html.split('id="records-h"')[1]
    # The book's own base first, then the series', each named (never by an id).
    own, series = f"{book.title}: book canon", f"{book.series.title}: series canon"
    assert records.index(own) < records.index(series)
    assert "(this book&#x27;s own canon)" in records and "(shared by every book of the series)" in records
    # Subjects alphabetically (case aside) within the book's base; then the series' subject.
    order = [records.index(f'data-testid="codex-subject">{s}</h4>') for s in ("ada", "Tova", "the coast")]
    assert order == sorted(order)
    # Within a subject, by the chapter each fact becomes true from: "reads" (ch 1) before "fears" (ch 3).
    tova = records.split('data-testid="codex-subject">Tova</h4>')[1].split("codex-subject")[0]
    assert tova.index("reads") < tova.index("fears")
    # Predicate and value in plain words, the subject as its heading: no UUID stands for a subject.
    assert "reads <strong>the sea</strong>" in tova


def test_luna_sees_no_series_group_and_the_editor_sees_both_without_decision_buttons(
    author_api, luna_api, editor_browser, book, session
):
    canon(author_api, book, "the coast", "drowns", "a street a year", scope="series")
    own = canon(author_api, book, "Tova", "fears", "deep water")
    groups = luna_codex_groups(luna_api, book)
    assert groups == [("book", ["Tova"])], "Luna's codex: her book's canon only"
    gone = canon(author_api, book, "the coast", "floods", "every spring", scope="series")
    assert author_api.post(f"/claims/{gone}/retract", {"book_id": str(book.pk), "rationale": "No."}).status_code == 200
    assert codex_view(book_access(principal_for_key(luna_api.key), book))["retracted"] == []
    assert [c["id"] for c in codex_view(book_access(principal_for_key(author_api.key), book))["retracted"]] == [gone]
    html = editor_browser.get(f"/books/{book.pk}/codex/").content.decode()
    assert "series canon" in html and "Supersede with this value" not in html
    assert f"/books/{book.pk}/codex/claims/{own}/" in html, "the history is one click away for the editor too"


def luna_codex_groups(luna_api, book) -> list[tuple[str, list[str]]]:
    """Luna reads the codex through the API: the grouping is the selector's, shared with the page."""
    view = codex_view(book_access(principal_for_key(luna_api.key), book))
    return [(g["base"]["scope"], [s["subject"] for s in g["subjects"]]) for g in view["groups"]]


# --- History ----------------------------------------------------------------------------------------


def test_a_claims_history_holds_every_version_decision_rationale_and_source(
    sol_api, author_api, author_browser, book, session
):
    ids, chunk = superseded_twice_then_retracted(sol_api, author_api, book)
    # The history is the same whichever version it is asked from.
    histories = [author_api.get(f"/books/{book.pk}/codex/claims/{pk}/history").json() for pk in ids]
    assert {tuple(v["id"] for v in h["versions"]) for h in histories} == {tuple(ids)}
    history = histories[0]
    assert history["canon"] is None, "retracted: nothing of it is canon now"
    versions = history["versions"]
    assert [(v["number"], v["value"], v["status"]) for v in versions] == [
        (1, "the harbour pilot", "revised"),
        (2, "the lighthouse keeper", "revised"),
        (3, "a drowned smuggler", "retracted"),
    ]
    assert [v["revises_number"] for v in versions] == [None, 1, 2]
    assert [v["revised_by_numbers"] for v in versions] == [[2], [3], []]
    decided = [[(d["decision"], d["rationale"]) for d in v["decisions"]] for v in versions]
    assert decided == [
        [("approve", "The pilot, yes.")],
        [("approve", "The keeper raised her.")],
        [("approve", "Darker."), ("abandon", "Nobody's daughter.")],
    ]
    log = {e.sequence: e for e in DecisionLogEntry.objects.filter(book=book)}
    for version in versions:
        for d in version["decisions"]:
            entry = log[d["sequence"]]
            assert (entry.subject_id, entry.rationale, entry.ratified_by) == (
                version["id"],
                d["rationale"],
                d["ratified_by"],
            )
            assert d["log_url"] == f"/review/books/{book.pk}/log/?entry={entry.sequence}#entry-{entry.sequence}"
    assert versions[2]["decisions"][1]["approval_id"] is None  # a retraction decides no approval
    assert versions[0]["source_refs"][0]["label"] == "Fair play, section 2"

    page = author_browser.get(f"/books/{book.pk}/codex/claims/{ids[1]}/")
    assert page.status_code == 200
    html = page.content.decode()
    for text in ("the harbour pilot", "the lighthouse keeper", "a drowned smuggler", "not canon now"):
        assert text in html
    for rationale in ("The pilot, yes.", "The keeper raised her.", "Darker.", "Nobody&#x27;s daughter."):
        assert rationale in html
    assert html.count('data-testid="decision-rationale"') == 4
    assert "retracted it from canon" in html and f"{book.owner.username}, the author" in html
    assert f"/library/chunks/{chunk.pk}/" in html, "the citation is one click away"
    assert f"/review/{KnowledgeClaim.objects.get(pk=ids[0]).approval_id}/" in html
    retraction = max(log)
    assert f"?entry={retraction}#entry-{retraction}" in html
    # The log page opens on the entry's page, with the entry anchored.
    assert (
        f'id="entry-{retraction}"'
        in author_browser.get(f"/review/books/{book.pk}/log/?entry={retraction}").content.decode()
    )
    # The codex lists the retracted claim, one click from its history.
    codex = author_browser.get(f"/books/{book.pk}/codex/").content.decode()
    retracted = codex.split('data-testid="codex-retracted"')[1]
    assert "a drowned smuggler" in retracted and f"/books/{book.pk}/codex/claims/{ids[2]}/" in retracted


def test_retracting_from_the_codex_opens_the_claims_history(author_api, author_browser, book, session):
    pk = canon(author_api, book, "Tova", "fears", "deep water")
    done = author_browser.post(f"/books/{book.pk}/codex/claims/{pk}/retract/", {"rationale": "She swims."}, follow=True)
    assert done.redirect_chain[-1][0] == f"/books/{book.pk}/codex/claims/{pk}/"
    html = done.content.decode()
    assert "Claim retracted; the decision is in the log." in html and "She swims." in html


def test_the_codex_claim_history_is_readable_only_where_the_claim_is(
    author_api, luna_api, editor_browser, outsider, book, other_book, session
):
    series = canon(author_api, book, "the coast", "drowns", "a street a year", scope="series")
    own = canon(author_api, book, "Tova", "fears", "deep water")
    assert editor_browser.get(f"/books/{book.pk}/codex/claims/{own}/").status_code == 200
    assert editor_browser.get(f"/books/{book.pk}/codex/claims/{series}/").status_code == 200
    # Luna lacks series:read: the series claim's history does not exist for her (not even its value).
    refused = luna_api.get(f"/books/{book.pk}/codex/claims/{series}/history")
    assert refused.status_code == 404 and "a street a year" not in refused.content.decode()
    assert luna_api.get(f"/books/{book.pk}/codex/claims/{own}/history").json()["canon"]["value"] == "deep water"
    # Another author: neither the book nor its claims.
    other = Client()
    assert other.login(username=outsider.username, password=PASSWORD)
    assert other.get(f"/books/{book.pk}/codex/claims/{own}/").status_code == 404
    # A claim of another book, asked through this book: not found here.
    assert author_api.get(f"/books/{other_book.pk}/codex/claims/{own}/history").status_code == 404
    foreign = KnowledgeClaim.objects.create(
        base=KnowledgeBase.objects.create(scope="book", owner_id=str(other_book.pk), name="Elsewhere: book canon"),
        subject="Otto",
        predicate="owns",
        value="a boat",
        provenance="author-stated",
        proposed_by="author",
    )
    assert author_api.get(f"/books/{book.pk}/codex/claims/{foreign.pk}/history").status_code == 404


def test_series_canon_decided_in_another_book_of_the_series_shows_its_decision_without_a_link_into_it(
    author, author_api, author_browser, book, session
):
    series = canon(author_api, book, "the coast", "drowns", "a street a year", scope="series")
    sibling = BookFactory(owner=author, series=book.series, title="The Second Tide", planned_order=2)
    start(author_api, sibling)
    history = author_api.get(f"/books/{sibling.pk}/codex/claims/{series}/history").json()
    [decision] = history["versions"][0]["decisions"]
    assert (decision["decision"], decision["rationale"], decision["in_this_book"]) == ("approve", "So.", False)
    assert decision["log_url"] is None and decision["approval_id"] is None
    html = author_browser.get(f"/books/{sibling.pk}/codex/claims/{series}/").content.decode()
    assert "Decided in the log of another book of the series" in html and str(book.pk) not in html
    # From the book where it was decided, the same decision links to its log entry.
    [here] = author_api.get(f"/books/{book.pk}/codex/claims/{series}/history").json()["versions"][0]["decisions"]
    assert here["in_this_book"] and here["log_url"].startswith(f"/review/books/{book.pk}/log/?entry=")


def test_a_log_entry_link_opens_the_log_page_that_holds_it(author, author_browser, book):
    for n in range(LOG_PER_PAGE + 3):
        decision_log_append(
            book=book,
            decision="park",
            subject_type="book",
            subject_id=book.pk,
            rationale=f"Decision {n + 1}.",
            ratified_by_user=author,
        )
    newest = author_browser.get(f"/review/books/{book.pk}/log/?entry={LOG_PER_PAGE + 3}").content.decode()
    assert f'id="entry-{LOG_PER_PAGE + 3}"' in newest and 'id="entry-1"' not in newest
    oldest = author_browser.get(f"/review/books/{book.pk}/log/?entry=1").content.decode()
    assert 'id="entry-1"' in oldest and "Page 2 of 2" in oldest
    assert author_browser.get(f"/review/books/{book.pk}/log/?entry=999").status_code == 200


# --- Bounded: the history's queries do not grow with it --------------------------------------------------


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, response.content
    return len(ctx.captured_queries)


def test_the_history_page_and_route_take_the_same_queries_for_one_version_or_four(
    sol_api, author_api, author_browser, book, session
):
    chunk = KnowledgeChunkFactory()
    lone = canon(author_api, book, "Mara", "fears", "deep water", source_refs=[{"type": "chunk", "id": str(chunk.pk)}])
    ids, _ = superseded_twice_then_retracted(sol_api, author_api, book)
    page = f"/books/{book.pk}/codex/claims/{{}}/"
    api = f"/api/v1/books/{book.pk}/codex/claims/{{}}/history"
    headers = {"HTTP_AUTHORIZATION": f"Bearer {author_api.key}"}
    _queries(author_browser, page.format(lone))  # warm the session and caches
    small, large = _queries(author_browser, page.format(lone)), _queries(author_browser, page.format(ids[0]))
    # Pinned: session and user (2), the book (1), its bases (3: links, sessions, owned), the versions in one
    # recursive query (1), their decisions (1), their chunk citations (1), the review badge's count (1).
    assert small == large == PAGE_QUERIES, (small, large)
    counted = []
    for pk in (lone, lone, ids[0]):  # the first call warms the key's once-a-minute use record
        with CaptureQueriesContext(connection) as ctx:
            assert Client().get(api.format(pk), **headers).status_code == 200
        counted.append(len(ctx.captured_queries))
    assert counted[1] == counted[2], counted


PAGE_QUERIES = 10
