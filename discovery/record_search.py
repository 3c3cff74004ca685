"""Searching a book's own record: its turns, scratchpad entries, claims and charters, in raw SQL over the
discovery tables they live in (beside them; the library's search is over its chunks).

Turns, scratchpad entries, claims and charters are searched where they live, with no
stored index: a book's record is small, claims and charters change status, and a scan
can never be stale. PostgreSQL builds each row's tsvector at query time and ranks it
with ts_rank against the same any-word tsquery as the library; SQLite (FTS5 needs an
index table to rank) and the ``like`` mode count the words each row holds, as the
library's LIKE mode does. JSON fields are searched by their string values, not keys.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connections

from library.search import (
    MAX_LIMIT,
    PG_ANY_WORD_QUERY,
    SearchResponse,
    db_uuid,
    fold,
    id_text,
    like_escape,
    resolve_mode,
    search_terms,
)

from .access import BookAccess, Cap
from .selectors import SCOPE_READ_CAP, SCOPE_WITHHELD_LABEL, book_bases

RECORD_KINDS = ("turn", "entry", "claim", "charter")
RECORD_SNIPPET_CHARS = 400


def _record_rows_sql(vendor: str, kinds: Iterable[str], claim_bases: int) -> str:
    """The book's records as ``(kind, id, label, text, created_at)``; ``%s``: the book id per kind, then base ids."""
    if vendor == "postgresql":

        def strings(expr: str) -> str:
            return (
                f"coalesce((SELECT string_agg(v #>> '{{}}', ' ') FROM jsonb_path_query({expr}, 'strict $.**') AS v"
                f" WHERE jsonb_typeof(v) = 'string'), '')"
            )
    else:

        def strings(expr: str) -> str:
            return (
                f"coalesce((SELECT group_concat(j.value, ' ') FROM json_tree({expr}) AS j WHERE j.type = 'text'), '')"
            )

    parts = {
        "turn": (
            "SELECT 'turn' AS kind, t.id AS id, t.role AS label, t.content AS body, t.created_at AS created_at"
            " FROM discovery_turn t JOIN discovery_discoverysession ss ON ss.id = t.session_id WHERE ss.book_id = %s"
        ),
        "entry": (
            "SELECT 'entry', e.id, e.agent_role || ' ' || e.kind, e.content, e.created_at"
            " FROM discovery_scratchpadentry e JOIN discovery_discoverysession ss ON ss.id = e.session_id"
            " WHERE ss.book_id = %s"
        ),
        "claim": (
            f"SELECT 'claim', k.id, k.status, k.subject || ' ' || k.predicate || ' ' || {strings('k.value')},"
            f" k.created_at FROM discovery_knowledgeclaim k WHERE k.base_id IN ({', '.join(['%s'] * claim_bases)})"
        ),
        "charter": (
            f"SELECT 'charter', ch.id, 'version ' || ch.version || ' ' || ch.status, {strings('ch.content')},"
            f" ch.created_at FROM discovery_storycharter ch WHERE ch.book_id = %s"
        ),
    }
    return " UNION ALL ".join(parts[kind] for kind in kinds if kind != "claim" or claim_bases)


def record_search(
    book_id,
    query: str | None,
    *,
    kinds: Iterable[str] = RECORD_KINDS,
    claim_base_ids: Iterable = (),
    limit: int = 20,
    mode: str | None = None,
    using: str = "default",
) -> SearchResponse:
    """Search one book's turns, scratchpad entries, claims (of ``claim_base_ids``) and charters.

    Any word of the query (stop words aside), best first; one statement. ``kinds`` and
    ``claim_base_ids`` are what the caller may read (the edge decides, see
    ``library.selectors.book_record_search``). Results ``{kind, id, label, text, score}``
    (newest first among equal scores); ``text`` is the start of the searchable text.
    """
    connection = connections[using]
    vendor = connection.vendor
    chosen = resolve_mode(mode, using)
    chosen = "postgres" if chosen == "postgres" else "like"
    words = search_terms(query)
    base_ids = [db_uuid(connection, b) for b in claim_base_ids]
    kinds = [k for k in RECORD_KINDS if k in set(kinds) and (k != "claim" or base_ids)]
    if not words or not kinds:
        return SearchResponse(chosen, [])
    limit = max(1, min(int(limit), MAX_LIMIT))
    book = db_uuid(connection, book_id)
    rows_sql = _record_rows_sql(vendor, kinds, len(base_ids))
    row_params = [p for k in kinds for p in (base_ids if k == "claim" else [book])]
    if chosen == "postgres":
        document = "to_tsvector('simple', library_search_fold(r.label || ' ' || r.body))"
        sql = (
            f"SELECT r.kind, r.id, r.label, r.body, ts_rank({document}, q.query) AS score, r.created_at"
            f" FROM ({rows_sql}) AS r CROSS JOIN ({PG_ANY_WORD_QUERY}) AS q"
            f" WHERE {document} @@ q.query ORDER BY score DESC, r.created_at DESC, r.id LIMIT %s"
        )
        params = [*row_params, json.dumps(words), limit]
    else:
        if vendor == "postgresql":
            patterns = json.dumps(["%" + like_escape(unicodedata.normalize("NFKC", w).casefold()) + "%" for w in words])
            haystack = "lower(library_search_fold(r.label || ' ' || r.body))"
            found = (
                "SELECT count(*) FROM jsonb_array_elements_text(%s::jsonb) AS w(pattern)"
                " WHERE h.haystack LIKE lower(library_search_fold(w.pattern)) ESCAPE '\\'"
            )
        else:
            patterns = json.dumps(["%" + like_escape(fold(w)) + "%" for w in words])
            # As bytes: a lone surrogate stored before the input rule (issue 30) comes out of json_tree as bytes
            # that are not UTF-8, which Python would refuse as text; the fold and the snippet replace them.
            haystack = "library_fold(CAST(r.label || ' ' || r.body AS BLOB), NULL)"
            found = "SELECT count(*) FROM json_each(%s) AS w WHERE h.haystack LIKE w.value ESCAPE '\\'"
        sql = (
            f"SELECT h.kind, h.id, h.label, {'CAST(h.body AS BLOB)' if vendor == 'sqlite' else 'h.body'},"
            f" h.score, h.created_at FROM ("
            f"SELECT h.*, ({found}) AS score FROM ("
            f"SELECT r.*, {haystack} AS haystack FROM ({rows_sql}) AS r) AS h) AS h"
            f" WHERE h.score > 0 ORDER BY h.score DESC, h.created_at DESC, h.id DESC LIMIT %s"
        )
        params = [patterns, *row_params, limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return SearchResponse(
        chosen,
        [
            {
                "kind": row[0],
                "id": id_text(row[1]),
                "label": row[2],
                "text": _as_text(row[3])[:RECORD_SNIPPET_CHARS],
                "score": float(row[4] or 0.0),
            }
            for row in rows
        ],
    )


def _as_text(value) -> str:
    """A column read as bytes on SQLite (see ``record_search``): UTF-8, with anything else replaced."""
    if isinstance(value, bytes | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return value or ""


@dataclass
class RecordSearch:
    mode: str
    results: list[dict]
    withheld: list[str]  # what the reader's role may not read, named ("series canon")

    def as_dict(self) -> dict:
        return {"mode": self.mode, "results": self.results, "withheld": self.withheld}


def book_record_search(access: BookAccess, query: str | None, limit: int = 20) -> RecordSearch:
    """Search the book's turns, scratchpad entries, claims and charters the reader's role may read.

    Claims come from the knowledge bases the book uses whose scope the role may read (Luna
    never sees series canon); what is left out is named in ``withheld``.
    """
    caps = access.caps
    kinds = []
    withheld: list[str] = []
    for kind, cap, label in (
        ("turn", Cap.DISCOVERY_READ, "turns"),
        ("entry", Cap.SCRATCHPAD_READ, "scratchpad entries"),
        ("charter", Cap.DISCOVERY_READ, "charters"),
    ):
        if cap in caps:
            kinds.append(kind)
        else:
            withheld.append(label)
    base_ids = []
    for base in book_bases(access.book):
        if SCOPE_READ_CAP[base["scope"]] in caps:
            base_ids.append(base["id"])
        elif SCOPE_WITHHELD_LABEL[base["scope"]] not in withheld:
            withheld.append(SCOPE_WITHHELD_LABEL[base["scope"]])
    if base_ids:
        kinds.append("claim")
    response = record_search(access.book.pk, query, kinds=kinds, claim_base_ids=base_ids, limit=limit)
    return RecordSearch(mode=response.mode, results=response.results, withheld=withheld)
