"""What the current gate still needs (issue 26): one rule (``discovery.loop.requirements``), read by the gate that
refuses, the book page, the loop page, ``GET .../loop/missing`` and the MCP tool ``loop_missing``. Each item has
its action beside it: a button that queues the in-app run that supplies it, the hand-off, or a link."""

from __future__ import annotations

import re

import pytest

from discovery.agents.models import AgentRun

from .loop_scenes import (
    a_governing_charter,
    ask_gate,
    clean_chain,
    pass_gate,
    reach_g2,
    review,
    saturate,
    started_book,  # noqa: F401 (the book, its discovery started)
    url,
)
from .pages_support import csrf_browser, submit

pytestmark = pytest.mark.django_db


def missing(api, book) -> dict:
    r = api.get(url(book, "/missing"))
    assert r.status_code == 200, r.json()
    return r.json()


def codes(body: dict) -> list[str]:
    return [item["code"] for item in body["missing"]]


def run_buttons(html: str) -> list[str]:
    """The tasks of the missing list's run buttons on a page."""
    block = html.split('data-testid="gate-missing"', 1)[1].split("</ul>", 1)[0]
    return re.findall(r'name="task" value="([^"]+)"', block)


def test_at_g2_the_list_is_the_gates_own_refusal_with_an_action_beside_each_item(book, sol_api, author_api, author):
    reach_g2(sol_api, author_api, book)
    body = missing(author_api, book)
    assert body["gate"] == "G2" and body["started"] is True
    assert codes(body) == ["charter", "lens-review", "lens-review", "lint", "round"]
    whats = [item["what"] for item in body["missing"]]
    assert "Terra's canon-integrity review" in whats and "Luna's reader-trust review" in whats
    # The same rule the gate refuses by: every reason the 409 gives is on the list (the round inside saturation).
    refused = ask_gate(sol_api, book, "G2")
    assert refused.status_code == 409
    reasons = [item["reason"] for item in body["missing"]]
    assert refused.json()["reasons"][:-1] == reasons[:-1]
    assert refused.json()["reasons"][-1] == f"saturation does not hold: {reasons[-1]}"
    actions = {item["code"]: item["action"] for item in body["missing"]}
    assert actions["charter"] == {
        "kind": "run",
        "task": "charter",
        "label": "Ask Terra for a charter draft",
        "href": "",
    }
    assert [a["action"]["task"] for a in body["missing"] if a["code"] == "lens-review"] == [
        "canon-review",
        "trust-review",
    ]
    assert actions["round"]["task"] == "next-question"

    browser = csrf_browser(author)
    for page in (f"/books/{book.pk}/", f"/books/{book.pk}/loop/"):
        html = browser.get(page).content.decode()
        assert "Still missing before G2 can pass" in html
        assert "Terra&#x27;s canon-integrity review" in html and "Luna&#x27;s reader-trust review" in html
        assert run_buttons(html) == ["charter", "canon-review", "trust-review", "brief", "next-question"], page
    # The button queues the in-app run that supplies the item, and she comes back to the page she was on.
    page = f"/books/{book.pk}/loop/"
    r = submit(browser, page, f"/books/{book.pk}/agents/start/", {"task": "canon-review", "next": page})
    assert r.status_code == 302 and r["Location"] == page
    run = AgentRun.objects.get(book=book, task="canon-review")
    assert (run.role, run.requested_by_role) == ("terra", "author")


def test_the_list_shrinks_as_the_items_arrive_and_ends_with_asking_for_the_gate(
    book, sol_api, author_api, luna_api, terra_api
):
    reach_g2(sol_api, author_api, book)
    a_governing_charter(book)
    review(terra_api, book, "canon-integrity")
    assert codes(missing(author_api, book)) == ["lens-review", "lint", "round"]
    review(luna_api, book, "reader-trust")
    clean_chain(sol_api, book)
    assert codes(missing(author_api, book)) == ["round"]
    assert sol_api.post(url(book, "/rounds"), {}).status_code == 200
    body = missing(author_api, book)
    assert codes(body) == ["ask-gate"] and body["missing"][0]["action"]["task"] == "next-question"
    card = ask_gate(sol_api, book, "G2").json()
    body = missing(author_api, book)
    assert codes(body) == ["decision"]
    assert body["missing"][0]["action"]["href"] == f"/review/{card['approval_id']}/"


def test_at_g3_a_ratified_brief_and_asking_for_g3_with_the_hand_off_button(
    book, sol_api, author_api, luna_api, terra_api, author
):
    reach_g2(sol_api, author_api, book)
    saturate(sol_api, luna_api, terra_api, book)
    pass_gate(sol_api, author_api, book, "G2")
    body = missing(author_api, book)
    assert body["gate"] == "G3" and codes(body) == ["brief"]
    assert body["missing"][0]["action"]["task"] == "brief"
    r = sol_api.post(
        url(book, "/artifacts"),
        {"slug": "decision-brief", "type": "decision-brief", "content": {"success_metrics": ["fair play by ch. 20"]}},
    )
    assert r.status_code == 201, r.json()
    body = missing(author_api, book)
    assert codes(body) == ["brief-ratified", "ask-gate"]
    assert body["missing"][1]["action"]["kind"] == "hand-off"
    browser = csrf_browser(author)
    html = browser.get(f"/books/{book.pk}/loop/").content.decode()
    block = html.split('data-testid="gate-missing"', 1)[1].split("</ul>", 1)[0]
    assert f'action="/books/{book.pk}/loop/hand-off/"' in block and "Hand off to drafting" in block
    # The hand-off puts the brief on the G3 card; approving there hands off, and nothing is missing any more.
    r = submit(browser, f"/books/{book.pk}/loop/", f"/books/{book.pk}/loop/hand-off/", {})
    assert r.status_code == 302 and r["Location"].startswith("/review/")
    assert codes(missing(author_api, book)) == ["decision"]


def test_an_editor_sees_what_is_missing_without_the_authors_hand_off(book, sol_api, author_api, editor_api, editor):
    reach_g2(sol_api, author_api, book)
    assert codes(missing(editor_api, book)) == codes(missing(author_api, book))
    html = csrf_browser(editor).get(f"/books/{book.pk}/loop/").content.decode()
    assert "Still missing before G2 can pass" in html


def test_before_the_discovery_starts_nothing_is_listed(author_api, other_book_unstarted):
    body = missing(author_api, other_book_unstarted)
    assert body == {"gate": None, "status": None, "started": False, "missing": []}


@pytest.fixture
def other_book_unstarted(author):
    from .factories import BookFactory

    return BookFactory(owner=author, title="Not yet")
