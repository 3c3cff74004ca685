"""Helpers for the manuscript tests: the codex and canon with story records, made the way a book's canon is made
(the author adds entries; Sol proposes a claim; the author promotes it with a rationale), and chapter texts."""

from __future__ import annotations


def codex_entries(author_api, book, rows) -> None:
    """The author adds each ``(name, kind, aliases)`` to the book's codex."""
    for name, kind, aliases in rows:
        made = author_api.post(f"/books/{book.pk}/codex/entries", {"name": name, "kind": kind, "aliases": aliases})
        assert made.status_code == 201, made.content


def approved_claim(author_api, sol_api, book, subject: str, predicate: str, value, **story) -> str:
    """A book claim Sol proposes with its story records (``true_until_chapter``, ``reveal``...) and the author
    promotes to canon; its id."""
    made = sol_api.post(
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": subject,
            "predicate": predicate,
            "value": value,
            "provenance": "agent-inferred",
            **story,
        },
    )
    assert made.status_code == 201, made.content
    claim_id = made.json()["id"]
    done = author_api.post(f"/claims/{claim_id}/promote", {"book_id": str(book.pk), "rationale": "Canon."})
    assert done.status_code == 200, done.content
    return claim_id


def chapters_written(author_api, book, texts: dict[int, str], title: str = "Chapter") -> None:
    """The author adds a chapter per number, in order, and stores its text."""
    for number, text in texts.items():
        assert author_api.post(f"/books/{book.pk}/chapters", {"title": f"{title} {number}"}).status_code == 201
        assert author_api.put(f"/books/{book.pk}/chapters/{number}/text", {"text": text}).status_code == 201
