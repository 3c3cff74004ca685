"""The story bible (issue 29): the codex as a document a reader of chapter N may be handed without spoilers.

A read over the book's canon through the one rule for what a reader of chapter N may know
(:func:`story_rules.reader_as_of`), grouped by kind (people, places, objects, events) and, within a kind, by codex
entry (a claim names its entry; a claim without one stands under its subject). What is left out is counted in
plain words, never named. The page, the Markdown download, the API and the shared link all read it here.
"""

from __future__ import annotations

import uuid

from django.db.models import Max

from novelgraph.core.roles import Cap

from .models import Book, Chapter, CodexEntry, EntryKind, KnowledgeClaim
from .selectors import canon_story_rows
from .story_rules import reader_as_of

# The kinds in the order the bible reads them, each with its heading.
KIND_HEADINGS = (
    (EntryKind.PERSON, "People"),
    (EntryKind.PLACE, "Places"),
    (EntryKind.OBJECT, "Objects"),
    (EntryKind.EVENT, "Events"),
    (EntryKind.UNSORTED, "Not sorted yet"),
)


def _value_words(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(_value_words(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_value_words(v)}" for k, v in value.items())
    return str(value)


def left_out_words(left_out: dict[str, int], chapter: int) -> list[str]:
    """What the bible leaves out, in plain words (how many, never which)."""

    def facts(n: int) -> str:
        return f"{n} fact{'s' if n != 1 else ''} {'are' if n != 1 else 'is'}"

    later = left_out["later_reveals"] + left_out["shown_later"] + left_out["not_yet"]
    lines = []
    if later:
        lines.append(f"{facts(later)} left out until later chapters.")
    if left_out["secret"]:
        pronoun = "it" if left_out["secret"] == 1 else "them"
        lines.append(f"{facts(left_out['secret'])} left out: the reader is not told {pronoun} yet.")
    if left_out["ended"]:
        lines.append(f"{facts(left_out['ended'])} left out: no longer true by chapter {chapter}.")
    return lines


def bible_view(*, book: Book, caps: frozenset[Cap], role: str, chapter: int) -> dict:
    """The book's story bible as of ``chapter``: its facts a reader of that chapter may know, by kind and entry,
    and a plain line for each kind of fact left out."""
    rows, _scopes = canon_story_rows(book, caps, role)
    given, left_out = reader_as_of(rows, chapter)
    entry_of = dict(
        KnowledgeClaim.objects.filter(pk__in=[row["id"] for row in given], entry__isnull=False).values_list(
            "pk", "entry_id"
        )
    )
    entries = {entry.pk: entry for entry in CodexEntry.objects.filter(pk__in=set(entry_of.values()))}
    by_entry: dict = {}
    for row in given:
        entry = entries.get(entry_of.get(_uuid(row["id"])))
        key = ("entry", entry.pk) if entry else ("subject", row["subject"].casefold())
        item = by_entry.setdefault(
            key,
            {
                "name": entry.name if entry else row["subject"],
                "kind": entry.kind if entry else EntryKind.UNSORTED,
                "aliases": list(entry.aliases) if entry else [],
                "facts": [],
            },
        )
        item["facts"].append(
            {
                "predicate": row["predicate"],
                "value": _value_words(row["value"]),
                "from_chapter": row.get("true_from_chapter"),
                "until_chapter": row.get("true_until_effective"),
                "shown_chapter": row.get("first_shown_chapter"),
            }
        )
    kinds = []
    for kind, heading in KIND_HEADINGS:
        items = sorted(
            (i for i in by_entry.values() if i["kind"] == kind), key=lambda i: (i["name"].casefold(), i["name"])
        )
        for item in items:
            item["facts"].sort(key=lambda f: (f["from_chapter"] or 1, f["predicate"].casefold()))
        if items:
            kinds.append({"kind": str(kind), "heading": heading, "entries": items})
    last = Chapter.objects.filter(book=book).aggregate(n=Max("number"))["n"]
    return {
        "book_id": str(book.pk),
        "title": book.title,
        "chapter": chapter,
        "chapter_title": Chapter.objects.filter(book=book, number=chapter).values_list("title", flat=True).first(),
        "chapters": last or 0,
        "facts": len(given),
        "kinds": kinds,
        "left_out": left_out,
        "left_out_words": left_out_words(left_out, chapter),
    }


def _uuid(value) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _when(fact: dict) -> str:
    parts = []
    if fact["from_chapter"] and fact["from_chapter"] > 1:
        parts.append(f"from chapter {fact['from_chapter']}")
    if fact["until_chapter"]:
        parts.append(f"until chapter {fact['until_chapter']}")
    if fact["shown_chapter"]:
        parts.append(f"shown in chapter {fact['shown_chapter']}")
    return f" ({', '.join(parts)})" if parts else ""


def bible_markdown(view: dict) -> str:
    """The bible as a Markdown document: the book, the chapter it is as of, what is left out, then each kind and
    entry with its facts."""
    lines = [
        f"# {view['title']}: story bible",
        "",
        f"As of chapter {view['chapter']}"
        + (f" ({view['chapter_title']})" if view["chapter_title"] else "")
        + ". Only what a reader of this chapter may know.",
        "",
    ]
    for line in view["left_out_words"]:
        lines.append(f"> {line}")
    if view["left_out_words"]:
        lines.append("")
    if not view["kinds"]:
        lines += ["Nothing a reader of this chapter may know is in the codex yet.", ""]
    for kind in view["kinds"]:
        lines += [f"## {kind['heading']}", ""]
        for entry in kind["entries"]:
            lines.append(f"### {entry['name']}")
            if entry["aliases"]:
                lines.append(f"Also called: {', '.join(entry['aliases'])}")
            lines.append("")
            for fact in entry["facts"]:
                lines.append(f"- {fact['predicate']}: {fact['value']}{_when(fact)}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
