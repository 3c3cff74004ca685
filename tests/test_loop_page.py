"""The loop page: gate stepper, pending card linking to the review page, counters, SVG pictures, questions."""

from __future__ import annotations

import re

import pytest

from discovery.loop.svg import layers

from .loop_scenes import (
    ask_gate,
    started_book,  # noqa: F401 (the book, its discovery started)
    trace,
    url,
)

pytestmark = pytest.mark.django_db


def test_layers_are_longest_paths_from_the_root():
    depth = layers(["r", "a", "b", "c", "x"], [("r", "a"), ("a", "b"), ("r", "b"), ("b", "c"), ("c", "a")], "r")
    assert (depth["r"], depth["a"], depth["b"], depth["c"]) == (0, 1, 2, 3)
    assert depth["x"] > depth["c"]  # not reachable from the root: drawn after it


def test_the_loop_page_shows_the_stepper_the_card_the_pictures_and_the_questions(
    book, author_browser, sol_api, luna_api
):
    trace(
        sol_api,
        book,
        [("premise", "premise"), ("sq", "story-question"), ("ch1", "chapter"), ("stray", "clue")],
        [("premise", "sq"), ("sq", "ch1")],
    )
    luna_api.post(url(book, "/questions"), {"question": "Which <tide> table?", "target_discipline": "research"})
    card = ask_gate(sol_api, book, "G0", summary="the value seed").json()
    r = author_browser.get(f"/books/{book.pk}/loop/")
    assert r.status_code == 200
    html = r.content.decode()
    assert 'aria-current="step"' in html and "G0" in html and "G3" in html
    assert "Awaiting the author" in html
    assert f'href="/review/{card["approval_id"]}/"' in html
    assert html.count("<svg") >= 2
    assert '<title id="plan-tree-svg-title">Plan-tree</title>' in html
    assert '<title id="trace-svg-title">Traceability graph</title>' in html
    # The orphan is outlined and labelled, not told by colour alone.
    assert re.search(r'class="loop-node tr-active lint-orphan".*?>not linked</text>', html, re.S)
    assert "Which &lt;tide&gt; table?" in html
    assert "<script" not in html.split("</head>")[1]
    assert 'style="' not in html and " onclick=" not in html
    partial = author_browser.get(f"/books/{book.pk}/loop/", HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and "<html" not in partial.content.decode()


def test_the_loop_page_is_only_for_people_of_the_book(book, client, outsider):
    from django.test import Client

    from .factories import PASSWORD

    assert client.get(f"/books/{book.pk}/loop/").status_code == 302
    other = Client()
    assert other.login(username=outsider.username, password=PASSWORD)
    assert other.get(f"/books/{book.pk}/loop/").status_code == 404


def test_the_editor_sees_the_loop_page(book, editor_browser):
    assert editor_browser.get(f"/books/{book.pk}/loop/").status_code == 200
