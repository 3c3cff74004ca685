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

from .access import series_books
from .models import Book, Chapter, CodexEntry, EntryKind, KnowledgeBase, KnowledgeClaim, Series
from .selectors import book_bases, canon_story_rows, readable_bases
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


def left_out_words(left_out: dict[str, int], chapter: int, *, by: str | None = None) -> list[str]:
    """What the bible leaves out, in plain words (how many, never which). ``by`` names where the reader stands
    (``chapter N`` unless given: a series bible says which book). A series bible's counts add the later books
    (``later_books``, with ``in_later_books`` facts) and the books not shared with the reader (``not_shared``)."""

    def facts(n: int) -> str:
        return f"{n} fact{'s' if n != 1 else ''} {'are' if n != 1 else 'is'}"

    def books(n: int) -> str:
        return f"{n} book{'s' if n != 1 else ''} of the series {'are' if n != 1 else 'is'}"

    by = by or f"chapter {chapter}"
    later = left_out["later_reveals"] + left_out["shown_later"] + left_out["not_yet"]
    lines = []
    if later:
        lines.append(f"{facts(later)} left out until later chapters.")
    if left_out["secret"]:
        pronoun = "it" if left_out["secret"] == 1 else "them"
        lines.append(f"{facts(left_out['secret'])} left out: the reader is not told {pronoun} yet.")
    if left_out["ended"]:
        lines.append(f"{facts(left_out['ended'])} left out: no longer true by {by}.")
    if left_out.get("later_books"):
        n, held = left_out["later_books"], left_out.get("in_later_books", 0)
        with_facts = f", with {held} fact{'s' if held != 1 else ''}" if held else ""
        lines.append(f"{n} later book{'s' if n != 1 else ''} of the series left out{with_facts}: not read yet.")
    elif left_out.get("in_later_books"):
        lines.append(f"{facts(left_out['in_later_books'])} left out until later books.")
    if left_out.get("not_shared"):
        lines.append(f"{books(left_out['not_shared'])} left out: not shared with you.")
    return lines


def bible_view(*, book: Book, caps: frozenset[Cap], role: str, chapter: int) -> dict:
    """The book's story bible as of ``chapter``: its facts a reader of that chapter may know, by kind and entry,
    and a plain line for each kind of fact left out. Its series' canon is read as the series bible reads it
    (:func:`series_canon_as_of`): a series fact that came through a later book of the series is left out."""
    given, left_out = reader_as_of(_book_rows(book, caps, role), chapter)
    if book.series_id:
        series_given, series_left, _ = series_canon_as_of(
            series=book.series, order=series_books(book.series), book=book, caps=caps, role=role, chapter=chapter
        )
        given += series_given
        _add(left_out, series_left)
    last = Chapter.objects.filter(book=book).aggregate(n=Max("number"))["n"]
    return {
        "book_id": str(book.pk),
        "title": book.title,
        "chapter": chapter,
        "chapter_title": _chapter_title(book, chapter),
        "chapters": last or 0,
        "facts": len(given),
        "kinds": entry_kinds(given),
        "left_out": left_out,
        "left_out_words": left_out_words(left_out, chapter),
    }


def _chapter_title(book: Book, chapter: int) -> str | None:
    return Chapter.objects.filter(book=book, number=chapter).values_list("title", flat=True).first()


def entry_kinds(given: list[dict], *, book_of: dict[str, str] | None = None) -> list[dict]:
    """Given canon rows by kind (in :data:`KIND_HEADINGS` order) and, within a kind, by codex entry (a claim
    names its entry; a claim without one stands under its subject), each entry's facts by the chapter they hold
    from. ``book_of`` names, for a series fact, the book its chapters count in."""
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
        fact = {
            "predicate": row["predicate"],
            "value": _value_words(row["value"]),
            "from_chapter": row.get("true_from_chapter"),
            "until_chapter": row.get("true_until_effective"),
            "shown_chapter": row.get("first_shown_chapter"),
        }
        if book_of is not None:
            fact["book"] = book_of.get(str(row["id"]))
        fact["when"] = _when(fact)
        item["facts"].append(fact)
    kinds = []
    for kind, heading in KIND_HEADINGS:
        items = sorted(
            (i for i in by_entry.values() if i["kind"] == kind), key=lambda i: (i["name"].casefold(), i["name"])
        )
        for item in items:
            item["facts"].sort(key=lambda f: (f["from_chapter"] or 1, f["predicate"].casefold()))
        if items:
            kinds.append({"kind": str(kind), "heading": heading, "entries": items})
    return kinds


# --- The series bible -------------------------------------------------------------------------------------------
# A reader "as of book K, chapter N" has read the series' earlier books entirely and book K up to chapter N. Each
# book's own canon is read through the same rule as the book's bible: an earlier book as of its end, book K as of
# chapter N; later books are left out and counted. A series claim's chapters count in the book it came through
# (its codex entry's book; else the book whose approval made it canon; else book K), so it is read with that book.

LEFT_OUT_KEYS = ("later_reveals", "not_yet", "ended", "shown_later", "secret")


def book_end(book: Book, rows: list[dict]) -> int:
    """The chapter by which a reader has read ``book`` entirely: its last chapter, or the last one its canon
    names (a reveal planned for a chapter not written yet is still the book's)."""
    last = Chapter.objects.filter(book=book).aggregate(n=Max("number"))["n"] or 1
    named = [
        row[column]
        for row in rows
        for column in ("true_from_chapter", "true_until_chapter", "first_shown_chapter")
        if row.get(column)
    ]
    return max([last, *named])


def _book_rows(book: Book, caps: frozenset[Cap], role: str) -> list[dict]:
    """The book's own canon (its book base and run notes; the series' canon is read once, for the series)."""
    given, _ = readable_bases(book_bases(book), caps)
    own = [base for base in given if base["scope"] != KnowledgeBase.Scope.SERIES]
    return canon_story_rows(book, caps, role, bases=(own, []))[0]


def _series_rows(series: Series, book: Book, caps: frozenset[Cap], role: str) -> list[dict]:
    bases = list(
        KnowledgeBase.objects.filter(scope=KnowledgeBase.Scope.SERIES, owner_id=str(series.pk)).values(
            "id", "name", "scope", "owner_id"
        )
    )
    if not bases or Cap.SERIES_READ not in caps:
        return []
    return canon_story_rows(book, caps, role, bases=(bases, []))[0]


def _add(total: dict[str, int], part: dict[str, int]) -> None:
    for key, n in part.items():
        total[key] = total.get(key, 0) + n


def series_canon_as_of(
    *, series: Series, order: list[Book], book: Book, caps: frozenset[Cap], role: str, chapter: int
) -> tuple[list[dict], dict[str, int], dict[str, str]]:
    """The series' canon a reader of ``book``'s ``chapter`` may know (``order``: the series' books in planned
    order): each claim is read with the book it came through, an earlier one as of its end, ``book`` as of
    ``chapter``; a claim of a later book is left out (``in_later_books``). Returns the given rows, the counts
    left out, and the title of the book each given row came through."""
    index = {b.pk: i for i, b in enumerate(order)}
    at = index[book.pk]
    rows = _series_rows(series, book, caps, role)
    homes = {
        str(pk): entry_book if entry_book in index else approval_book if approval_book in index else book.pk
        for pk, entry_book, approval_book in KnowledgeClaim.objects.filter(
            pk__in=[row["id"] for row in rows]
        ).values_list("pk", "entry__book_id", "approval__book_id")
    }
    by_home: dict = {}
    for row in rows:
        by_home.setdefault(homes.get(row["id"], book.pk), []).append(row)
    given: list[dict] = []
    left_out = dict.fromkeys(LEFT_OUT_KEYS, 0) | {"in_later_books": 0}
    for home, home_rows in by_home.items():
        if index[home] > at:
            left_out["in_later_books"] += len(home_rows)
            continue
        ends = chapter if index[home] == at else book_end(order[index[home]], home_rows)
        shown, left = reader_as_of(home_rows, ends)
        given += shown
        _add(left_out, left)
    book_of = {row["id"]: order[index[homes.get(row["id"], book.pk)]].title for row in given}
    return given, left_out, book_of


def series_bible_view(
    *, series: Series, books: list[Book], caps: frozenset[Cap], role: str, book: Book, chapter: int
) -> dict:
    """The series' story bible as of ``book``'s ``chapter``: the series' canon, then each earlier book read
    entirely and ``book`` as of ``chapter``, each by kind and entry, what a reader there may know; later books
    are left out and counted. ``books`` are the series' books the reader may read (the others are counted as
    not shared, never named); ``book`` is one of them."""
    order = series_books(series)
    index = {b.pk: i for i, b in enumerate(order)}
    at = index[book.pk]
    readable = {b.pk for b in books}
    total = dict.fromkeys(LEFT_OUT_KEYS, 0) | {"later_books": 0, "in_later_books": 0}
    total["not_shared"] = len(order) - len(readable & set(index))

    series_given, series_left, book_of = series_canon_as_of(
        series=series, order=order, book=book, caps=caps, role=role, chapter=chapter
    )
    _add(total, series_left)
    series_left.pop("in_later_books")
    where = f"chapter {chapter} of {book.title}"
    sections = []
    for i, each in enumerate(order):
        if each.pk not in readable:
            continue
        rows = _book_rows(each, caps, role)
        if i > at:
            total["later_books"] += 1
            total["in_later_books"] += len(rows)
            continue
        ends = chapter if i == at else book_end(each, rows)
        given, left = reader_as_of(rows, ends)
        _add(total, left)
        sections.append(
            {
                "book_id": str(each.pk),
                "title": each.title,
                "planned_order": each.planned_order,
                "position": i + 1,
                "read": f"to chapter {chapter}" if i == at else "entirely",
                "chapter": ends,
                "chapter_title": _chapter_title(each, chapter) if i == at else None,
                "facts": len(given),
                "kinds": entry_kinds(given),
                "left_out": left,
                "left_out_words": left_out_words(left, ends, by=None if i == at else "the end of the book"),
            }
        )
    return {
        "series_id": str(series.pk),
        "title": series.title,
        "book_id": str(book.pk),
        "book_title": book.title,
        "position": at + 1,
        "books": len(order),
        "chapter": chapter,
        "chapter_title": _chapter_title(book, chapter),
        "facts": len(series_given) + sum(s["facts"] for s in sections),
        "series_canon": {
            "facts": len(series_given),
            "kinds": entry_kinds(series_given, book_of=book_of),
            "left_out": series_left,
            "left_out_words": left_out_words(series_left, chapter, by=where),
        },
        "sections": sections,
        "left_out": total,
        "left_out_words": left_out_words(total, chapter, by=where),
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
    if fact.get("book") and parts:
        return f" ({', '.join(parts)} of {fact['book']})"
    return f" ({', '.join(parts)})" if parts else ""


def _kinds_markdown(kinds: list[dict], level: int, empty: str) -> list[str]:
    if not kinds:
        return [empty, ""]
    lines = []
    for kind in kinds:
        lines += [f"{'#' * level} {kind['heading']}", ""]
        for entry in kind["entries"]:
            lines.append(f"{'#' * (level + 1)} {entry['name']}")
            if entry["aliases"]:
                lines.append(f"Also called: {', '.join(entry['aliases'])}")
            lines.append("")
            for fact in entry["facts"]:
                lines.append(f"- {fact['predicate']}: {fact['value']}{_when(fact)}")
            lines.append("")
    return lines


def _left_out_markdown(words: list[str]) -> list[str]:
    return [f"> {line}" for line in words] + ([""] if words else [])


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
    lines += _left_out_markdown(view["left_out_words"])
    lines += _kinds_markdown(view["kinds"], 2, "Nothing a reader of this chapter may know is in the codex yet.")
    return "\n".join(lines).rstrip() + "\n"


def series_as_of_words(view: dict) -> str:
    """Where the series bible's reader stands, in one sentence."""
    chapter = f"chapter {view['chapter']}" + (f" ({view['chapter_title']})" if view["chapter_title"] else "")
    return (
        f"As of {chapter} of {view['book_title']}, book {view['position']} of {view['books']} in the series. "
        "Only what a reader who has read the earlier books and this one up to that chapter may know."
    )


def series_bible_markdown(view: dict) -> str:
    """The series bible as a Markdown document: where the reader stands, what is left out, the series' canon,
    then each book read (earlier books entirely, the reader's book to her chapter)."""
    lines = [f"# {view['title']}: series bible", "", series_as_of_words(view), ""]
    lines += _left_out_markdown(view["left_out_words"])
    lines += ["## Series canon", "", "Shared by every book of the series.", ""]
    lines += _kinds_markdown(view["series_canon"]["kinds"], 3, "Nothing of the series' canon may be told yet.")
    for section in view["sections"]:
        lines += [f"## Book {section['position']}: {section['title']} (read {section['read']})", ""]
        lines += _left_out_markdown(section["left_out_words"])
        lines += _kinds_markdown(section["kinds"], 3, "Nothing of this book's canon may be told yet.")
    return "\n".join(lines).rstrip() + "\n"
