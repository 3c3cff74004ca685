"""Issue 26: the traceability graph's premise root exists when the loop starts, and the lint's findings read in
words and say how to fix them (on the loop page and through the API)."""

from __future__ import annotations

import html as html_lib
import re

import pytest

from discovery.loop.models import TraceNode
from discovery.models import Book

from .loop_scenes import trace, url

pytestmark = pytest.mark.django_db


def _start_in_the_browser(author_browser, author) -> Book:
    made = author_browser.post(
        "/books/new/", {"title": "The Salt Ledger", "premise": "A clerk finds a forged tide table."}
    )
    assert made.status_code == 302, made.content[:500]
    book = Book.objects.get(owner=author, title="The Salt Ledger")
    assert author_browser.post(f"/books/{book.pk}/discovery/start/").status_code == 302
    return book


def _page(author_browser, book) -> str:
    response = author_browser.get(f"/books/{book.pk}/loop/")
    assert response.status_code == 200
    return html_lib.unescape(response.content.decode())


def test_the_premise_root_is_drawn_when_the_loop_starts(author, author_browser, author_api):
    book = _start_in_the_browser(author_browser, author)

    root = TraceNode.objects.get(book=book)
    assert (root.node_id, root.kind, root.label, root.status) == ("premise", "premise", "The premise", "active")
    lint = author_api.get(url(book, "/lint"), strict="true").json()
    assert lint["root"] == "premise"
    messages = [f["message"] for f in lint["findings"]]
    assert not any("is not drawn as the root" in m or "not a node" in m for m in messages), messages
    # The root alone leads to no chapter yet: that is the one thing the lint asks for.
    assert messages == ["“The premise” (premise) is not connected: it leads to no chapter."]
    assert lint["findings"][0]["fix"].startswith("Link it to what it feeds (a chapter, or a part that leads to one)")


def test_the_first_lens_that_draws_the_root_takes_it_and_a_second_draw_is_refused(
    author, author_browser, terra_api, luna_api
):
    book = _start_in_the_browser(author_browser, author)

    drawn = terra_api.post(url(book, "/trace/nodes"), {"node_id": "premise", "kind": "premise", "label": "The ledger"})
    assert drawn.status_code == 201, drawn.content
    assert drawn.json()["produced_by"] == "terra"
    again = luna_api.post(url(book, "/trace/nodes"), {"node_id": "premise", "kind": "premise"})
    assert again.status_code == 409 and again.json()["code"] == "exists"
    assert list(TraceNode.objects.filter(book=book).values_list("node_id", "label", "produced_by")) == [
        ("premise", "The ledger", "terra")
    ]
    # Now hers, Terra may withdraw it; Luna may not.
    assert luna_api.post(url(book, "/trace/nodes/premise/withdraw"), {}).status_code == 403
    assert terra_api.post(url(book, "/trace/nodes/premise/withdraw"), {}).status_code == 200


def test_a_well_linked_graph_from_the_root_is_clean_on_the_loop_page(author, author_browser, sol_api):
    book = _start_in_the_browser(author_browser, author)
    trace(sol_api, book, [("sq", "story-question"), ("ch1", "chapter")], [("premise", "sq"), ("sq", "ch1")])

    assert "Everything is connected." in _page(author_browser, book)


def test_the_loop_page_says_each_lint_finding_in_words_with_its_fix(author, author_browser, sol_api, author_api):
    book = _start_in_the_browser(author_browser, author)
    for node_id, kind, label in (
        ("sq", "story-question", "Who forged the table?"),
        ("ch1", "chapter", "Chapter 1"),
        ("stray", "clue", "The torn page"),
        ("a", "subplot", "The debt"),
        ("b", "subplot", "The loan"),
    ):
        made = sol_api.post(url(book, "/trace/nodes"), {"node_id": node_id, "kind": kind, "label": label})
        assert made.status_code == 201, made.content
    for a, b in (("premise", "sq"), ("sq", "ch1"), ("sq", "ghost"), ("a", "b"), ("b", "a"), ("b", "ch1")):
        assert sol_api.post(url(book, "/trace/edges"), {"from_id": a, "to_id": b}).status_code == 201

    page = _page(author_browser, book)

    said = {
        "The link from “Who forged the table?” (sq) to 'ghost' points at 'ghost', which is not drawn": (
            "Draw 'ghost' as a node, or withdraw the link from “Who forged the table?” (sq) to 'ghost'."
        ),
        "“The debt” (a) and “The loan” (b) lead back to one another in a circle": (
            "Withdraw one of the links in the circle"
        ),
        "“The torn page” (stray) is not connected: nothing leads to it and it leads to no chapter.": (
            "Link it from the part it grows out of (the root or a part that traces back to it) and link it to what "
            "it feeds (a chapter, or a part that leads to one); or withdraw it if the book no longer needs it."
        ),
        "“The debt” (a) is cut off: what leads to it does not trace back to the root ('premise').": (
            "Link the first part of its chain from the root or from a part that traces back to it."
        ),
    }
    for message, fix in said.items():
        assert message in page, message
        assert fix in page, fix
    assert "To fix before G2:" in page
    section = page.split('id="trace-h"')[1].split("</section>")[0]
    # The finding codes sit only in the collapsed Technical details.
    section = re.sub(r'<details class="technical">.*?</details>', " ", section, flags=re.S)
    shown = re.sub(r"<[^>]+>", " ", section)  # what she reads: the text, the picture's labels and titles
    assert "not linked" in shown and "missing: not drawn" in shown and "circle" in shown
    for jargon in ("dangling", "orphan", "unreachable", "(failure)", "has no producer", "->"):
        assert jargon not in shown, jargon
    # The API carries the same words, and the codes for programs.
    findings = author_api.get(url(book, "/lint"), strict="true").json()["findings"]
    assert {f["code"] for f in findings} == {"dangling", "cycle", "orphan", "unreachable"}
    assert all(f["message"] and f["fix"] for f in findings)
