"""Everything that waits for the author, beside her decisions, in the one inbox (issue 26).

The apps above approvals register what else waits for her from their ``AppConfig.ready()``: discovery the
observations to confirm, the loop the questions routed to her. A section is
``section(books, user, limit) -> dict``: ``key``, ``title``, ``items`` (the first ``limit``, each
``{book, text, note, href, action_label, confirm_url}``) and ``total``. ``books`` is the queryset of the
person's books (or the one book the inbox is filtered to). Reads only.

A section that shows the author's own part with its actions names its ``template`` (included with ``section``,
the section's other keys its own, as discovery's observations with confirm, correct and retire); the inbox then
lists only its items that wait for another author (books she edits). The inbox reads every section through
``waiting_for``, never from the app that registered it.
"""

from __future__ import annotations

from collections.abc import Callable

WAITING_SECTIONS: list[Callable] = []
WAITING_LIMIT = 50


def register_waiting(section: Callable) -> None:
    if section not in WAITING_SECTIONS:
        WAITING_SECTIONS.append(section)


def waiting_for(books, user, limit: int = WAITING_LIMIT) -> list[dict]:
    """Each registered section, in registration order; each item says whether its book is the person's own
    (``mine``): what waits in a book she edits waits for its author, not for her."""
    sections = []
    for section in WAITING_SECTIONS:
        found = section(books, user, limit)
        for item in found["items"]:
            item["mine"] = item["book"].owner_id == user.pk
        # What waits in books she edits, for their authors (a section with a template shows her own, with actions).
        found["others"] = sum(not item["mine"] for item in found["items"])
        sections.append(found)
    return sections
