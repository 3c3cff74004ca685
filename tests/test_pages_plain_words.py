"""Internal words never show: subjects by name, structured values as lists, gate cards as fields,
each verdict with the sentence saying what it does, who ratified in people's words."""

from __future__ import annotations

import re

import pytest

from discovery.access import book_access
from discovery.models import KnowledgeClaim
from discovery.schemas import ClaimIn
from discovery.services import claim_propose, claim_request_approval, discovery_start
from discovery.services.knowledge import book_base
from novelgraph.core.auth import Principal

from .approval_subjects import propose_charter
from .loop_scenes import ask_gate, decide

pytestmark = pytest.mark.django_db

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def main_text(html: str) -> str:
    """The visible text of the page's main element (tags, attributes and links left out)."""
    main = html.split('<main id="main"', 1)[1].split("</main>", 1)[0]
    return re.sub(r"<[^>]+>", " ", main)


def test_a_charter_decision_names_its_subject_and_lists_the_promise(author_browser, book):
    charter = propose_charter(book)
    charter.content["reader_promise"] = ["a fair-play puzzle", "a keeper who lies"]
    charter.content["protagonist"] = {"name": "Mara", "flaw": "lies to protect"}
    charter.save(update_fields=["content"])
    html = author_browser.get(f"/review/{charter.approval_id}/").content.decode()
    text = main_text(html)
    assert not UUID.search(text), "no id shows as a subject or a value"
    assert re.search(r'data-testid="subject">Story charter v1<', html)
    assert "<pre>" not in html and "{&quot;" not in html and "[&quot;" not in html
    assert "<li>a fair-play puzzle</li><li>a keeper who lies</li>" in html
    assert "<dt>Name</dt><dd>Mara</dd>" in html
    assert "becomes the book&#x27;s binding Story Charter" in html and "never binds the book" in html


def test_a_gate_card_reads_as_fields_with_each_verdict_explained(author_browser, book, sol_api, author_api):
    assert author_api.post(f"/books/{book.pk}/discovery").status_code == 201  # the loop begins with it
    card = ask_gate(sol_api, book, "G0", summary="Ratify the premise as the value seed").json()
    html = author_browser.get(f"/review/{card['approval_id']}/").content.decode()
    fields = html.split('data-testid="card-fields"', 1)[1].split("</dl>", 1)[0]
    assert "<dt>What is asked</dt><dd>Ratify the premise</dd>" in fields, "the method's own name said plainly"
    assert "<dt>Decisions requested</dt><dd>ratify the slots</dd>" in fields
    assert "<dt>Raised by</dt><dd>Sol</dd>" in fields
    assert "schema_version" not in html and "<pre>" not in html
    helps = html.split('data-testid="verdict-help"', 1)[1].split("</dl>", 1)[0]
    assert helps.count("<dt>") == 7, "a gate card offers the seven loop verdicts, each explained"
    assert all(re.search(r"<dd>\w[^<]{20,}</dd>", row) for row in helps.split("<dt>")[1:])

    assert decide(author_api, book, card["approval_id"], "approve").status_code == 200
    html = author_browser.get(f"/review/{card['approval_id']}/").content.decode()
    assert "ada, the author" in html and "author:ada" not in html
    log = author_browser.get(f"/review/books/{book.pk}/log/").content.decode()
    assert "ratified by ada, the author" in log and "author:ada" not in log
    assert "loop-option-card" not in main_text(author_browser.get("/").content.decode())


def test_a_claim_is_shown_with_its_value(author_browser, book, author):
    access = book_access(Principal(user=author), book)
    discovery_start(access=access)
    claim = claim_propose(
        access=access,
        base=book_base(book),
        payload=ClaimIn(
            scope="book",
            scope_id=str(book.pk),
            subject="Ada",
            predicate="is the daughter of",
            value="Mara",
            provenance="author-stated",
        ),
    )
    sol = book_access(Principal(user=author, key_role="sol"), book)
    approval = claim_request_approval(access=sol, claim_id=claim.pk, note="")
    assert approval.summary == "Canon: Ada is the daughter of Mara"
    html = author_browser.get(f"/review/{approval.pk}/").content.decode()
    assert re.search(r'data-testid="subject">Ada is the daughter of Mara<', html)
    assert KnowledgeClaim.objects.get(pk=claim.pk).status == "proposed"
