"""Reader promises (issue 28): every reveal in canon, every clue a reveal needs and the approved charter's reader
promise, traced through the latest text of each chapter by the continuity check's own matching
(``discovery.continuity.reader_promises``). A read: it stores nothing and changes nothing."""

from __future__ import annotations

from novelgraph.core.errors import Invalid

from .access import BookAccess
from .continuity import Claim, Entry, reader_promises
from .models import Chapter
from .selectors import canon_for_check, charter_reader_promise, manuscript_texts

SECTIONS = ("open", "overdue", "never-planted", "paid-off", "to-come", "untraceable")


def promises_report(access: BookAccess, chapter: int | None) -> dict:
    """The reader promises as of ``chapter`` (the book's last chapter when None): each with the chapter where
    its text first shows it beside its planned chapter, and the lists of what is open, overdue, never planted,
    paid off, still to come and untraceable. A chapter the book does not have is refused, naming ``chapter``."""
    numbers = list(Chapter.objects.filter(book=access.book).order_by("number").values_list("number", flat=True))
    if not numbers:
        raise Invalid("the book has no chapters yet", field="chapter")
    if chapter is None:
        chapter = numbers[-1]
    if chapter not in numbers:
        raise Invalid(f"the book has chapters 1 to {numbers[-1]}; there is no chapter {chapter}", field="chapter")
    canon = canon_for_check(access.book)
    texts = manuscript_texts(access.book, before=chapter + 1)
    items = reader_promises(
        chapter=chapter,
        entries=[Entry(e["id"], e["name"], tuple(e["aliases"])) for e in canon["entries"]],
        claims=[Claim(**c) for c in canon["claims"]],
        texts=texts,
        promises=charter_reader_promise(access.book),
    )
    report = {
        "chapter": chapter,
        "chapters": len(numbers),
        "chapters_with_text": sorted(texts),
        "items": items,
    }
    for section in SECTIONS:
        report[section.replace("-", "_")] = [i for i in items if i["status"] == section]
    return report
