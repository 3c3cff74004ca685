"""The author's main pages speak her language (issue 26): for a book in discovery, no internal word is shown
outside a collapsed "Technical details" part: no UUID, hash or digest, no loop state name, no search engine's
name, no provider's model name, no capability name, no "value seed". Only the text a reader sees counts
(attributes such as links and form values are not read); a <details> whose summary is "Technical details" is
skipped whole."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from approvals.models import Approval
from discovery.agents.models import AgentRun
from discovery.models import Book
from novelgraph.core.roles import Cap

from .agents_support import work_off_queue
from .factories import UserFactory

pytestmark = pytest.mark.django_db
DEMO_PASSWORD = "novelgraph-author"

INTERNAL = [
    ("a UUID", re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)),
    ("a hash", re.compile(r"\b[0-9a-f]{16,}\b", re.I)),
    # A content or chain digest (the scratchpad's "digest" entries, summaries of earlier entries, are seed 000's word).
    ("a digest", re.compile(r"\b(content|card|chain|canon)[ _]digest\b|sha-?256", re.I)),
    ("a loop state name", re.compile(r"awaiting-human|stalled-at-cap|paused-at-bound|handed-off")),
    ("the search engine", re.compile(r"\bfts5\b|\bBM25\b", re.I)),
    ("the provider's model", re.compile(r"rules-1|offline ·")),
    ("a capability name", re.compile("|".join(re.escape(cap.value) for cap in Cap))),
    ("the value seed", re.compile(r"value seed", re.I)),
]


class VisibleText(HTMLParser):
    """The text a reader sees, without <details> blocks summarised "Technical details", scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.stack: list[str] = []  # open details: "tech" or "plain"
        self.pending_details = False
        self.in_summary = False
        self.summary = ""
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "template"):
            self.skip += 1
        elif tag == "details":
            self.stack.append("?")
        elif tag == "summary" and self.stack and self.stack[-1] == "?":
            self.in_summary, self.summary = True, ""

    def handle_endtag(self, tag):
        if tag in ("script", "style", "template"):
            self.skip = max(0, self.skip - 1)
        elif tag == "summary" and self.in_summary:
            self.in_summary = False
            self.stack[-1] = "tech" if self.summary.strip().lower() == "technical details" else "plain"
            if self.stack[-1] == "plain" and not self.hidden:
                self.parts.append(self.summary)
        elif tag == "details" and self.stack:
            self.stack.pop()

    @property
    def hidden(self) -> bool:
        return self.skip > 0 or "tech" in self.stack

    def handle_data(self, data):
        if self.in_summary:
            self.summary += data
        elif not self.hidden:
            self.parts.append(data)


def internal_words(html: str) -> list[str]:
    parser = VisibleText()
    parser.feed(html)
    text = " ".join(" ".join(parser.parts).split())
    found = []
    for name, pattern in INTERNAL:
        for match in pattern.finditer(text):
            found.append(f"{name}: …{text[max(0, match.start() - 60) : match.end() + 60]}…")
    return found


def test_the_checker_sees_what_a_reader_sees():
    assert internal_words('<p>card <a href="/review/0f8fad5b-d9cb-469f-a165-70867728950e/">open</a></p>') == []
    assert internal_words("<p>status awaiting-human</p>")
    shown = "<details><summary>Technical details</summary><p>0f8fad5b-d9cb-469f-a165-70867728950e</p></details>"
    assert internal_words(shown) == []
    assert internal_words("<details><summary>More</summary><p>awaiting-human</p></details>"), (
        "only Technical details hides"
    )


def author_pages(book: Book) -> dict[str, str]:
    decision = Approval.objects.filter(book=book, status="pending").order_by("created_at").first()
    pages = {
        "dashboard": "/",
        "book": f"/books/{book.pk}/",
        "loop": f"/books/{book.pk}/loop/",
        "session": f"/books/{book.pk}/scratchpad/",
        "inbox": "/review/",
        "codex": f"/books/{book.pk}/codex/",
    }
    if decision is not None:
        pages["decision"] = f"/review/{decision.pk}/"
    return pages


def shown_internals(client: Client, pages: dict[str, str]) -> dict[str, list[str]]:
    found = {}
    for name, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, (name, url, response.status_code)
        words = internal_words(response.content.decode())
        if words:
            found[name] = words
    return found


def report(found: dict[str, list[str]]) -> str:
    return "\n".join(f"{page}: {word}" for page, words in found.items() for word in words)


def test_the_demo_books_main_pages_show_no_internal_word_outside_technical_details():
    call_command("demo", stdout=StringIO())
    book = Book.objects.get(title__startswith="The Lighthouse")
    client = Client()
    assert client.login(username=book.owner.username, password=DEMO_PASSWORD)
    pages = author_pages(book)
    assert "decision" in pages, "the demo leaves a decision waiting"
    found = shown_internals(client, pages)
    assert found == {}, report(found)


def test_a_new_books_pages_show_no_internal_word_while_sol_waits_for_her_at_g0(settings):
    """A book the author made in the browser, Sol's in-app runs (the offline provider) asking and raising G0."""
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline"}
    user = UserFactory(username="nell")
    client = Client()
    client.force_login(user)
    premise = "A ferry pilot finds that the river has been moved overnight and only she remembers where it ran."
    client.post("/books/new/", {"title": "The Moved River", "premise": premise, "genre_pack": "mystery"})
    book = Book.objects.get(owner=user)
    client.post(f"/books/{book.pk}/discovery/start/")
    client.post(f"/books/{book.pk}/turns/", {"content": "The pilot is Wren Hale, and the reader should feel unmoored."})
    work_off_queue()
    for _ in range(4):
        if Approval.objects.filter(book=book, status="pending", gate="G0").exists():
            break
        client.post(f"/books/{book.pk}/agents/start/", {"task": "next-question", "next": f"/books/{book.pk}/"})
        work_off_queue()
    assert Approval.objects.filter(book=book, status="pending", gate="G0").exists(), "Sol raised G0"
    assert AgentRun.objects.filter(book=book, status="done").exists()
    found = shown_internals(client, author_pages(book))
    assert found == {}, report(found)
