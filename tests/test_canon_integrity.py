"""Canon integrity (issue 12): no key, role, second author or staff account makes canon behind the author's back.

Each test drives the route an attacker would use and then checks the database: nothing was decided,
nothing was logged, nothing leaked. The decision log's own tamper evidence lives in test_decision_log*.py.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from approvals.models import Approval, DecisionLogEntry
from approvals.services import approval_request
from discovery.models import Book, KnowledgeBase, KnowledgeClaim, KnowledgeLink, StoryCharter
from novelgraph.core.models import ApiKey
from novelgraph.core.services import api_key_create, api_key_revoke

from .conftest import Api
from .discovery_support import charter_body, start
from .factories import (
    PASSWORD,
    ApprovalFactory,
    BookFactory,
    KnowledgeClaimFactory,
    KnowledgeLinkFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

RATIONALE = "This is the book I want to write."


def _propose_charter(sol_api, book) -> dict:
    response = sol_api.post(f"/books/{book.pk}/charters", charter_body())
    assert response.status_code == 201, response.content
    return response.json()


# --- 1. A key limited to some books touches those and nothing else ------------------------------------


def test_a_personal_key_limited_to_one_book_decides_nothing_in_the_authors_other_books(author, book, sol_api):
    second = BookFactory(owner=author, title="The Second Book")
    charter = _propose_charter(sol_api, second)
    scoped = Api(Client(), api_key_create(owner=author, role="author", books=[book])[1])

    refused = scoped.post(f"/charters/{charter['id']}/resolve", {"approved": True, "rationale": RATIONALE})
    verdict = scoped.post(f"/approvals/{charter['approval_id']}/verdict", {"verdict": "approve", "rationale": "x"})

    assert refused.status_code == 404 and verdict.status_code == 404
    assert StoryCharter.objects.get(pk=charter["id"]).status == "proposed"
    assert not DecisionLogEntry.objects.exists()
    assert [b["id"] for b in scoped.get("/books").json()["items"]] == [str(book.pk)]
    assert scoped.get(f"/books/{second.pk}").status_code == 404
    assert str(second.pk) not in scoped.get("/approvals").content.decode()
    assert scoped.post("/books", {"title": "A new book"}).status_code == 403  # a limited key creates nothing new
    assert not Book.objects.filter(title="A new book").exists()


def test_an_agent_key_limited_to_one_book_cannot_reach_the_other(author, book):
    second = BookFactory(owner=author, title="The Second Book")
    sol = Api(Client(), api_key_create(owner=author, role="sol", books=[book])[1])
    assert sol.post(f"/books/{second.pk}/charters", charter_body()).status_code == 404
    assert sol.post(f"/books/{book.pk}/charters", charter_body()).status_code == 201
    assert not StoryCharter.objects.filter(book=second).exists()


# --- 2. Literary guidance is staff-curated: no author's verdict reaches it, or reaches another author -----


def _literary_claim(status="proposed", book=None):
    base = KnowledgeBase.objects.get(scope="literary", owner_id="global")
    if status == "approved":
        approval = ApprovalFactory(book=book, kind="canon-promotion", status="decided", verdict="approve",
                                   rationale="Before the library was staff's.", decided_by=book.owner)  # fmt: skip
        return KnowledgeClaimFactory(base=base, subject="Fair play", predicate="requires", value="visible clues",
                                     status=status, approval=approval)  # fmt: skip
    return KnowledgeClaimFactory(base=base, subject="Fair play", predicate="requires", value="visible clues",
                                 status=status)  # fmt: skip


def test_no_author_decides_a_literary_claim_so_nothing_crosses_between_authors(author, outsider, book, other_book):
    claim = _literary_claim()  # a proposal left from before literary guidance became staff's
    literary = KnowledgeBase.objects.get(scope="literary")
    for each in (book, other_book):
        KnowledgeLinkFactory(book=each, base=literary, relation="literary-guidance")
    alices = approval_request(
        book=book, kind="canon-promotion", subject_type="claim", subject_id=claim.pk, summary="s", requested_by_role="x"
    )
    mallory = Api(Client(), api_key_create(owner=outsider, role="author")[1])
    alice = Api(Client(), api_key_create(owner=author, role="author")[1])

    through_own_book = mallory.post(f"/claims/{claim.pk}/reject", {"book_id": str(other_book.pk), "rationale": "No."})
    through_alices = mallory.post(f"/approvals/{alices.pk}/verdict", {"verdict": "reject", "rationale": "No."})
    alice_herself = alice.post(f"/approvals/{alices.pk}/verdict", {"verdict": "approve", "rationale": "Yes."})

    assert through_own_book.status_code == 403 and through_own_book.json()["code"] == "curated_by_staff"
    assert through_alices.status_code == 404
    assert alice_herself.status_code == 403 and alice_herself.json()["code"] == "curated_by_staff"
    claim.refresh_from_db()
    assert claim.status == "proposed"
    assert Approval.objects.get(pk=alices.pk).status == "pending"
    assert not DecisionLogEntry.objects.exists()


def test_an_approved_literary_claim_is_never_shown_as_a_books_canon(author, book, author_api, author_browser):
    _literary_claim(status="approved", book=book)
    start(author_api, book)
    dossier = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol"}).json()["content"]
    assert dossier["claims"] == []
    assert "Fair play" not in author_browser.get(f"/books/{book.pk}/").content.decode()


# --- 7. Luna reads no series canon, not through approvals and not through the log -----------------------


@pytest.fixture
def series_claim(book):
    base = KnowledgeBase.objects.create(scope="series", owner_id=str(book.series_id), name="Series canon")
    KnowledgeLink.objects.create(book=book, base=base, relation="series-canon")
    return KnowledgeClaimFactory(base=base, subject="Ines", predicate="is the sister of", value="Mara Lowe")


def _everything(response) -> str:
    return response.content.decode()


def test_luna_reads_a_series_promotion_only_as_withheld_through_every_route(
    book, series_claim, sol_api, luna_api, author_api
):
    requested = sol_api.post(f"/claims/{series_claim.pk}/request-approval", {"book_id": str(book.pk)})
    assert requested.status_code == 201
    approval_id = requested.json()["approval_id"]
    secret = ("Ines", "sister", "Mara Lowe")

    detail = luna_api.get(f"/approvals/{approval_id}")
    listed = luna_api.get("/approvals")
    assert detail.status_code == 200 and listed.status_code == 200
    assert detail.json()["proposal"] == {"withheld": True, "title": "withheld: series canon (luna lacks series:read)"}
    assert listed.json()["items"][0]["summary"] == "withheld: series canon (luna lacks series:read)"
    for response in (detail, listed):
        assert not any(word in _everything(response) for word in secret)

    approved = author_api.post(f"/approvals/{approval_id}/verdict", {"verdict": "approve", "rationale": RATIONALE})
    assert approved.status_code == 200
    log = luna_api.get(f"/books/{book.pk}/decision-log")
    export = luna_api.get(f"/books/{book.pk}/decision-log/export")
    entry = log.json()["items"][0]
    assert entry["withheld"] is True and entry["detail"] == {} and entry["rationale"].startswith("withheld:")
    line = json.loads(b"".join(export.streaming_content).decode().splitlines()[0])
    assert line["withheld"].startswith("withheld:") and line["rationale"] == "" and line["detail"] == {}
    for text in (json.dumps(log.json()), json.dumps(line)):
        assert not any(word in text for word in secret)
    # Sol, who holds series:read, reads all of it.
    assert "Mara Lowe" in _everything(sol_api.get(f"/approvals/{approval_id}"))


def test_a_charter_citing_series_canon_shows_luna_the_citation_withheld(book, series_claim, sol_api, luna_api):
    body = charter_body(source_refs=[{"type": "claim", "id": str(series_claim.pk)}])
    charter = sol_api.post(f"/books/{book.pk}/charters", body)
    assert charter.status_code == 201
    shown = luna_api.get(f"/approvals/{charter.json()['approval_id']}").json()
    assert shown["source_refs"] == [
        {
            "type": "claim",
            "id": str(series_claim.pk),
            "label": "withheld: series canon (luna lacks series:read)",
            "exists": True,
            "withheld": True,
            "detail": {},
        }
    ]


# --- 8. Staff curate the library; they do not own books ---------------------------------------------------


@pytest.fixture
def superuser_browser(db):
    UserFactory(username="root", is_staff=True, is_superuser=True)
    client = Client()
    assert client.login(username="root", password=PASSWORD)
    return client


def test_staff_cannot_take_a_book_relink_its_canon_or_widen_a_key(superuser_browser, author, book, outsider):
    key, _ = api_key_create(owner=author, role="luna", books=[book])
    other = BookFactory(owner=author, title="Another")
    base = KnowledgeBase.objects.create(scope="book", owner_id=str(book.pk), name="Book canon")
    link = KnowledgeLinkFactory(
        book=other, base=KnowledgeBase.objects.get(scope="literary"), relation="literary-guidance"
    )

    attempts = [
        (f"/admin/discovery/book/{book.pk}/change/", {"title": book.title, "owner": outsider.pk, "slug": book.slug}),
        (f"/admin/discovery/knowledgebase/{base.pk}/change/", {"scope": "literary", "owner_id": "x", "name": "n"}),
        ("/admin/discovery/knowledgelink/add/", {"book": book.pk, "base": base.pk, "relation": "series-canon"}),
        (f"/admin/discovery/knowledgelink/{link.pk}/change/", {"book": book.pk, "base": base.pk, "relation": "x"}),
        (f"/admin/novelgraph/apikey/{key.pk}/change/", {"name": "k", "books": [book.pk, other.pk]}),
    ]
    for url, data in attempts:
        assert superuser_browser.post(url, data).status_code == 403, url

    book.refresh_from_db()
    assert book.owner == author
    assert KnowledgeBase.objects.get(pk=base.pk).scope == "book"
    assert KnowledgeLink.objects.filter(book=book, base=base).count() == 0
    assert list(ApiKey.objects.get(pk=key.pk).books.all()) == [book]
    # What staff do curate, they can: the library.
    assert superuser_browser.get("/admin/library/knowledgesource/add/").status_code == 200


# --- 10. Provenance says who stated it; a bad key is a 401 ---------------------------------------------------


def test_an_agent_never_labels_its_words_author_stated(book, author_api, sol_api):
    session = start(author_api, book)
    turn = sol_api.post(
        f"/sessions/{session.pk}/turns",
        {"role": "sol", "content": "Who wrote it?", "observations": [
            {"key": "k", "value": "v", "provenance": "author-stated"}]},
    )  # fmt: skip
    claim = sol_api.post(
        "/claims",
        {"scope": "book", "scope_id": str(book.pk), "subject": "Mara", "predicate": "is", "value": "the keeper",
         "provenance": "author-stated"},
    )  # fmt: skip
    assert turn.status_code == 422 and turn.json()["field"] == "observations[0].provenance"
    assert claim.status_code == 422 and claim.json()["field"] == "provenance"
    assert not KnowledgeClaim.objects.exists()
    mine = author_api.post(
        f"/sessions/{session.pk}/turns",
        {"role": "author", "content": "Mara is the keeper.", "observations": [
            {"key": "role", "value": "keeper", "provenance": "author-stated"}]},
    )  # fmt: skip
    assert mine.status_code == 201


@pytest.mark.parametrize("which", ["unknown", "revoked"])
def test_a_bad_or_revoked_bearer_key_on_a_post_is_a_401_even_beside_a_session(author, book, author_browser, which):
    if which == "unknown":
        raw = "ng_not-a-key"
    else:
        key, raw = api_key_create(owner=author, role="author")
        api_key_revoke(key=key)
    for client in (Client(), author_browser):
        response = client.post(
            f"/api/v1/books/{book.pk}/charters",
            json.dumps(charter_body()),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {raw}",
        )
        assert response.status_code == 401, response.content
        assert response.json()["code"] == "not_authenticated"
    assert not StoryCharter.objects.exists()
