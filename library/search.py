"""Library search: every raw SQL statement of the library's search lives here (seed 001).

Three modes, one contract (:func:`search`):

``fts5``
    SQLite FTS5, ranked by BM25. ``library_chunk_fts`` is a *contentless* FTS5 table
    (``content=''``: no second copy of the text) over two columns, ``content`` and
    ``topics`` (the topic list joined with spaces), tokenised with
    ``unicode61 remove_diacritics 2`` so "CAFÉ" finds "café". Chunks have UUID primary
    keys and FTS5 needs an integer rowid, so ``library_chunk_fts_map`` gives each chunk
    a stable integer (``INTEGER PRIMARY KEY``: unlike an implicit rowid, VACUUM never
    renumbers it). The rank function is configured once as ``bm25(1.0, 4.0)``: a word
    among the topics weighs four times a word in the content.
``postgres``
    PostgreSQL full-text search. A ``search_vector tsvector`` column on the chunk table,
    topics weighted A and content weighted B, the ``simple`` configuration (no stemming
    and no stop words, like FTS5's unicode61) with ``unaccent`` when the extension can
    be installed; a GIN index; ranked with ``ts_rank`` (A = 1.0 > B = 0.4).
``like``
    The portable fallback: a chunk matches when any word occurs (case- and
    accent-insensitively) in its content or topics; ``\\``, ``%`` and ``_`` are escaped
    (``ESCAPE '\\'``) so they are literal. The score is the number of query words the chunk
    contains; ties go to the newest chunk.

Any word, ranked (not every word): a chunk matches when it holds at least one of the
query's words, and the ranking puts chunks holding more of them, and rarer ones, first
(BM25 in FTS5 sums a weight per matched word, larger for rare words; ``ts_rank`` on an OR
tsquery likewise grows with the words matched; LIKE counts them). Very common English
words ("how", "do", "I", "a", "the"...: :data:`STOP_WORDS`) are dropped from a query that
has other words, so a natural question ("how do I make a twist feel earned?") searches its
content words; a query made only of such words searches them as they are.

The chunk table is canonical. Database triggers keep the index in step with every
INSERT, UPDATE and DELETE on it, whoever issues them: the ORM, the admin,
``QuerySet.update()``, ``bulk_create`` or raw SQL (SQLite: FTS5 sync triggers;
PostgreSQL: a ``BEFORE INSERT OR UPDATE`` trigger computing ``search_vector``). The LIKE
mode needs no stored index at all: it folds case and accents at query time (SQLite:
the ``library_fold`` SQL function registered on every connection, because SQLite's own
LIKE and lower() fold ASCII only; PostgreSQL: ``lower(library_search_fold(...))``), so
it can never be stale, however the rows were written. :func:`search_index_rebuild`
rebuilds the index from the chunk table.

User text never reaches MATCH or a tsquery as syntax: :func:`search_terms` splits it into
words, each word is quoted for FTS5 (``"..."`` with inner quotes doubled) and the quoted
words are joined with ``OR``; PostgreSQL turns each word into a tsquery with
``plainto_tsquery`` (which has no operators) and ORs them (``||``) in SQL.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connections, transaction

MODES = ("fts5", "postgres", "like")
MAX_LIMIT = 50
DEFAULT_LIMIT = 8
MAX_QUERY_CHARS = 10_000

CHUNK_TABLE = "library_knowledgechunk"
SOURCE_TABLE = "library_knowledgesource"
FTS_TABLE = "library_chunk_fts"
FTS_MAP_TABLE = "library_chunk_fts_map"
# BM25 column weights: content, topics.
FTS_RANK = "bm25(1.0, 4.0)"
FTS_TRIGGERS = ("library_chunk_fts_ai", "library_chunk_fts_au", "library_chunk_fts_ad")
PG_TRIGGER = "library_chunk_search"


# --- Query words ----------------------------------------------------------

_EDGE_PUNCTUATION = re.compile(r"^[\W_]+|[\W_]+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def query_words(query: str | None) -> list[str]:
    """The words of a user query: split on whitespace, edge punctuation trimmed, deduplicated.

    "(pacing), \"scene\"" -> ["pacing", "scene"]. Inner punctuation stays ("e-mail",
    "50%off"); a word of punctuation or emoji alone is dropped. :func:`search_terms`
    then drops stop words.
    """
    if not query:
        return []
    text = query[:MAX_QUERY_CHARS]
    # Lone surrogates cannot be encoded for either database; control characters are spaces.
    text = text.encode("utf-8", "ignore").decode("utf-8")
    text = unicodedata.normalize("NFC", _CONTROL.sub(" ", text))
    words: list[str] = []
    seen: set[str] = set()
    for raw in text.split():
        word = _EDGE_PUNCTUATION.sub("", raw)
        key = fold(word)
        if word and key not in seen:
            seen.add(key)
            words.append(word)
    return words


# Very common English words, and the filler verbs of a question ("how can I make..."): in an
# any-word search they would match nearly every passage and outrank the words that matter.
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further get gets
    had has have having he her here hers herself him himself his how i if in into is it its itself just
    let make makes many may me might more most much must my myself no nor not of off on once only or
    other our ours ourselves out over own same shall she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


def search_terms(query: str | None) -> list[str]:
    """The words a search looks for: :func:`query_words` without stop words.

    "how do I make a twist feel earned?" -> ["make", "twist", "feel", "earned"]. A query
    made only of stop words ("the who") keeps them all, so it still searches something.
    """
    words = query_words(query)
    content = [w for w in words if fold(w) not in STOP_WORDS]
    return content or words


def fold(text: str) -> str:
    """Case- and accent-folded text: "CAFÉ" -> "cafe" (the LIKE mode's comparison form)."""
    if text.isascii():  # nothing to decompose: the common case, kept fast (search runs it per word)
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def fts5_match(words: Iterable[str]) -> str:
    """An FTS5 MATCH expression for any of the words, each a quoted string (operators are inert).

    ``"twist" OR "earned"``: the ``OR`` between quoted strings is FTS5's operator; inside
    quotes "OR", "NEAR" or "*" are only text.
    """
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words)


def like_escape(text: str) -> str:
    """Escape LIKE's wildcards and the escape character itself (used with ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _sqlite_fold_chunk(content: str | bytes | None, topics: str | None) -> str:
    """SQLite SQL function ``library_fold(content, topics_json)``: the folded haystack of a chunk.

    A topic list without escapes is used as stored: its brackets, quotes and ", "
    separators cannot join two topics into one query word (query words hold no spaces).
    """
    if isinstance(content, bytes):  # a record's text passed as bytes (discovery/record_search.py): not UTF-8 safe
        content = content.decode("utf-8", "replace")
    text = content or ""
    if topics and topics != "[]":
        if "\\" not in topics:
            text = f"{text} {topics}"
        else:
            try:
                topic_list = json.loads(topics)
            except (TypeError, ValueError):
                topic_list = [topics]
            if not isinstance(topic_list, list):
                topic_list = [topic_list]
            text = " ".join([text, *(str(t) for t in topic_list if t is not None)])
    return fold(text)


def register_sqlite_functions(sender, connection, **kwargs) -> None:
    """``connection_created`` receiver: install ``library_fold`` on every SQLite connection."""
    if connection.vendor == "sqlite":
        connection.connection.create_function("library_fold", 2, _sqlite_fold_chunk, deterministic=True)


# --- Modes ------------------------------------------------------------------

_fts_ready_cache: dict[tuple, bool] = {}


def _cache_key(connection) -> tuple:
    return (connection.alias, str(connection.settings_dict.get("NAME")))


def sqlite_has_fts5(connection) -> bool:
    """Whether this SQLite build can create FTS5 tables (tried, not guessed)."""
    with connection.cursor() as cursor:
        try:
            with transaction.atomic(using=connection.alias):
                cursor.execute("CREATE VIRTUAL TABLE temp.library_fts5_probe USING fts5(x)")
                cursor.execute("DROP TABLE temp.library_fts5_probe")
        except Exception:
            return False
    return True


def fts_ready(connection) -> bool:
    """SQLite: the FTS5 table and its triggers exist (checked once per database)."""
    key = _cache_key(connection)
    if key not in _fts_ready_cache:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM sqlite_master WHERE name IN (%s, %s, %s, %s)",
                [FTS_TABLE, *FTS_TRIGGERS],
            )
            _fts_ready_cache[key] = cursor.fetchone()[0] == 4
    return _fts_ready_cache[key]


def available_modes(using: str = "default") -> list[str]:
    """The modes this database can serve, best first."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        return ["postgres", "like"]
    if connection.vendor == "sqlite" and fts_ready(connection):
        return ["fts5", "like"]
    return ["like"]


def resolve_mode(mode: str | None = None, using: str = "default") -> str:
    """``mode`` (tests), else the NOVELGRAPH_SEARCH_MODE setting; ``auto`` picks the best available."""
    wanted = (mode or getattr(settings, "NOVELGRAPH_SEARCH_MODE", "auto") or "auto").strip().lower()
    available = available_modes(using)
    if wanted == "auto":
        return available[0]
    if wanted not in MODES:
        raise ValueError(f"unknown search mode {wanted!r}; choose auto or one of {', '.join(MODES)}")
    if wanted not in available:
        raise ValueError(f"search mode {wanted!r} is not available here ({', '.join(available)})")
    return wanted


# --- Search -----------------------------------------------------------------


@dataclass
class SearchResponse:
    mode: str
    results: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"mode": self.mode, "results": self.results}


_SELECT = "c.id, c.content, c.topics, c.applicability, c.citation, s.title"


def _filters(vendor: str, applicability: str | None, topic: str | None) -> tuple[str, list]:
    sql, params = "", []
    for column, value in (("applicability", applicability), ("topics", topic)):
        if value is None or not str(value).strip():
            continue
        if vendor == "postgresql":
            sql += (
                f" AND EXISTS (SELECT 1 FROM jsonb_array_elements_text("
                f"CASE WHEN jsonb_typeof(c.{column}) = 'array' THEN c.{column} ELSE '[]'::jsonb END) AS v(item)"
                f" WHERE lower(v.item) = lower(%s))"
            )
        else:
            sql += f" AND EXISTS (SELECT 1 FROM json_each(c.{column}) AS v WHERE lower(v.value) = lower(%s))"
        params.append(str(value).strip())
    return sql, params


def _fts5_sql(filter_sql: str) -> str:
    if not filter_sql:
        # Rank and cut inside FTS5 first, then join only the winners.
        return (
            f"SELECT {_SELECT}, -hits.rank FROM ("
            f"  SELECT rowid AS rid, rank FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? ORDER BY rank LIMIT ?"
            f") AS hits"
            f" JOIN {FTS_MAP_TABLE} m ON m.id = hits.rid"
            f" JOIN {CHUNK_TABLE} c ON c.id = m.chunk_id"
            f" JOIN {SOURCE_TABLE} s ON s.id = c.source_id"
            f" ORDER BY hits.rank"
        )
    return (
        f"SELECT {_SELECT}, -f.rank FROM {FTS_TABLE} f"
        f" JOIN {FTS_MAP_TABLE} m ON m.id = f.rowid"
        f" JOIN {CHUNK_TABLE} c ON c.id = m.chunk_id"
        f" JOIN {SOURCE_TABLE} s ON s.id = c.source_id"
        f" WHERE f.{FTS_TABLE} MATCH ?{filter_sql.replace('%s', '?')}"
        f" ORDER BY f.rank LIMIT ?"
    )


FTS5_SQL = _fts5_sql("")


def _search_fts5(dbapi_connection, words, limit, filter_sql, filter_params) -> list[tuple]:
    """Runs on the sqlite3 connection itself (``?`` placeholders)."""
    match = fts5_match(words)
    if not filter_sql:
        return dbapi_connection.execute(FTS5_SQL, (match, limit)).fetchall()
    return dbapi_connection.execute(_fts5_sql(filter_sql), (match, *filter_params, limit)).fetchall()


# Each word's plainto_tsquery (no operators; empty for punctuation alone), ORed together.
# No word with a lexeme gives NULL, and ``@@ NULL`` matches nothing.
PG_ANY_WORD_QUERY = (
    "SELECT (string_agg('(' || w.q::text || ')', ' | '))::tsquery AS query FROM ("
    "SELECT plainto_tsquery('simple', library_search_fold(t.word)) AS q"
    " FROM jsonb_array_elements_text(%s::jsonb) AS t(word)) AS w WHERE numnode(w.q) > 0"
)


def _search_postgres(cursor, words, limit, filter_sql, filter_params) -> list[tuple]:
    cursor.execute(
        f"SELECT {_SELECT}, ts_rank(c.search_vector, q.query) AS score"
        f" FROM {CHUNK_TABLE} c"
        f" JOIN {SOURCE_TABLE} s ON s.id = c.source_id"
        f" CROSS JOIN ({PG_ANY_WORD_QUERY}) AS q"
        f" WHERE c.search_vector @@ q.query{filter_sql}"
        f" ORDER BY score DESC, c.created_at DESC, c.id LIMIT %s",
        [json.dumps(words), *filter_params, limit],
        prepare=True,  # the same few statements every time: parse and plan once per connection
    )
    return cursor.fetchall()


def _search_like(cursor, vendor, words, limit, filter_sql, filter_params) -> list[tuple]:
    # The words travel as one JSON array parameter, so any number of them is one statement.
    # The score is how many of the words the chunk holds; a chunk holding none is left out.
    # Every chunk is scored (the order needs them all), so each chunk's folded text is built once:
    # PostgreSQL gets ``OFFSET 0`` fences (a subquery it may not inline into the per-word count)
    # and the words folded once; SQLite's query is cheap enough as it is.
    columns = "h.id, h.content, h.topics, h.applicability, h.citation, h.title"

    def rows(haystack: str) -> str:
        return (
            f"SELECT c.id, c.content, c.topics, c.applicability, c.citation, s.title, c.created_at,"
            f" {haystack} AS haystack FROM {CHUNK_TABLE} c JOIN {SOURCE_TABLE} s ON s.id = c.source_id"
            f" WHERE 1 = 1{filter_sql}"
        )

    if vendor == "postgresql":
        patterns = json.dumps(["%" + like_escape(unicodedata.normalize("NFKC", w).casefold()) + "%" for w in words])
        haystack = "lower(library_search_fold(c.content || ' ' || library_chunk_topics_text(c.topics)))"
        sql = (
            f"SELECT {columns}, h.score FROM ("
            f"SELECT {columns}, h.created_at,"
            f" (SELECT count(*) FROM unnest(p.patterns) AS w(pattern) WHERE h.haystack LIKE w.pattern ESCAPE '\\')"
            f" AS score FROM (SELECT array_agg(lower(library_search_fold(t.pattern))) AS patterns"
            f" FROM jsonb_array_elements_text(%s::jsonb) AS t(pattern)) AS p"
            f" CROSS JOIN ({rows(haystack)} OFFSET 0) AS h OFFSET 0) AS h WHERE h.score > 0"
            f" ORDER BY h.score DESC, h.created_at DESC, h.id DESC LIMIT %s"
        )
    else:
        patterns = json.dumps(["%" + like_escape(fold(w)) + "%" for w in words])
        haystack = "library_fold(c.content, c.topics)"
        sql = (
            f"SELECT {columns}, h.score FROM ("
            f"SELECT {columns}, h.created_at,"
            f" (SELECT count(*) FROM json_each(%s) AS w WHERE h.haystack LIKE w.value ESCAPE '\\') AS score"
            f" FROM ({rows(haystack)}) AS h) AS h WHERE h.score > 0"
            f" ORDER BY h.score DESC, h.created_at DESC, h.id DESC LIMIT %s"
        )
    cursor.execute(sql, [patterns, *filter_params, limit])
    return cursor.fetchall()


@functools.lru_cache(maxsize=4096)
def _decode_list(text: str) -> tuple:
    """A stored JSON list as a tuple (cached: the same topic lists recur across chunks)."""
    try:
        value = json.loads(text)
    except ValueError:
        return (text,)
    if value is None:
        return ()
    return tuple(value) if isinstance(value, list) else (value,)


def _json_list(value) -> list:
    if value == "[]" or value is None:
        return []
    if isinstance(value, str):
        return list(_decode_list(value))
    return value if isinstance(value, list) else [value]


def id_text(value) -> str:
    if isinstance(value, uuid.UUID):
        return str(value)
    if len(value) == 32 and value.isalnum() and value.islower():  # SQLite stores uuid.hex
        return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
    return str(uuid.UUID(str(value)))


def search(
    query: str | None,
    limit: int = DEFAULT_LIMIT,
    applicability: str | None = None,
    topic: str | None = None,
    *,
    mode: str | None = None,
    using: str = "default",
) -> SearchResponse:
    """Chunks whose content or topics contain any word of ``query`` (stop words aside), best first.

    One SQL statement, joined to chunks and sources. Returns the mode that answered and
    results ``{chunk_id, content, topics, applicability, citation, source_title, score}``
    (score: BM25 relevance in fts5, ts_rank in postgres, the number of query words found
    in like). A blank query, or one with no words, gives no results. ``applicability`` and ``topic`` (optional, off by
    default) keep chunks listing that value (case-insensitively).
    """
    connection = connections[using]
    chosen = resolve_mode(mode, using)
    words = search_terms(query)
    if not words:
        return SearchResponse(chosen, [])
    limit = max(1, min(int(limit), MAX_LIMIT))
    filter_sql, filter_params = _filters(connection.vendor, applicability, topic)
    if chosen == "fts5":
        # The hot path skips Django's cursor wrapper (thread checks, %s-to-? rewriting, debug
        # logging): the statement runs on the same connection and transaction, errors still
        # surface as django.db errors.
        connection.ensure_connection()
        with connection.wrap_database_errors:
            rows = _search_fts5(connection.connection, words, limit, filter_sql, filter_params)
    elif chosen == "postgres":
        # Likewise, and with server-side parameter binding (Django's cursors bind client-side).
        import psycopg

        connection.ensure_connection()
        with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
            rows = _search_postgres(cursor, words, limit, filter_sql, filter_params)
    else:
        with connection.cursor() as cursor:
            rows = _search_like(cursor, connection.vendor, words, limit, filter_sql, filter_params)
    return SearchResponse(
        chosen,
        [
            {
                "chunk_id": id_text(row[0]),
                "content": row[1],
                "topics": _json_list(row[2]),
                "applicability": _json_list(row[3]),
                "citation": row[4],
                "source_title": row[5],
                "score": float(row[6] or 0.0),
            }
            for row in rows
        ],
    )


# --- Browsing by topic ---------------------------------------------------------


def topic_counts(using: str = "default") -> list[tuple[str, int]]:
    """Every topic in the library with the number of chunks listing it, alphabetically (one statement).

    Topics differing only in case count as one (shown as the first spelling in sort order).
    """
    connection = connections[using]
    if connection.vendor == "postgresql":
        sql = (
            f"SELECT min(v.item), count(DISTINCT c.id) FROM {CHUNK_TABLE} c CROSS JOIN LATERAL"
            f" jsonb_array_elements_text(CASE WHEN jsonb_typeof(c.topics) = 'array' THEN c.topics ELSE '[]'::jsonb END)"
            f" AS v(item) WHERE btrim(v.item) <> '' GROUP BY lower(v.item) ORDER BY lower(v.item)"
        )
    else:
        sql = (
            f"SELECT min(v.value), count(DISTINCT c.id) FROM {CHUNK_TABLE} c, json_each(c.topics) AS v"
            f" WHERE v.type = 'text' AND trim(v.value) <> '' GROUP BY lower(v.value) ORDER BY lower(v.value)"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [(row[0], int(row[1])) for row in cursor.fetchall()]


def chunk_has_topic_sql(using: str = "default") -> str:
    """A condition on ``library_knowledgechunk`` (one ``%s``: the topic): the chunk lists it, in any case."""
    column = f"{CHUNK_TABLE}.topics"
    if connections[using].vendor == "postgresql":
        return (
            f"EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof({column}) = 'array'"
            f" THEN {column} ELSE '[]'::jsonb END) AS v(item) WHERE lower(v.item) = lower(%s))"
        )
    return f"EXISTS (SELECT 1 FROM json_each({column}) AS v WHERE lower(v.value) = lower(%s))"


# --- Schema: installed by migration 0003, re-checked by rebuild_search_index ---


_SQLITE_TOPICS = "(SELECT group_concat(value, ' ') FROM json_each({row}.topics))"


def _sqlite_schema() -> list[str]:
    old_topics, new_topics = _SQLITE_TOPICS.format(row="old"), _SQLITE_TOPICS.format(row="new")
    delete_old = (
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, content, topics)"
        f" SELECT 'delete', m.id, old.content, {old_topics} FROM {FTS_MAP_TABLE} m WHERE m.chunk_id = old.id;"
    )
    return [
        f"CREATE TABLE IF NOT EXISTS {FTS_MAP_TABLE} (id INTEGER PRIMARY KEY, chunk_id char(32) NOT NULL UNIQUE)",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
        f"content, topics, content='', tokenize='unicode61 remove_diacritics 2')",
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('rank', '{FTS_RANK}')",
        f"CREATE TRIGGER IF NOT EXISTS library_chunk_fts_ai AFTER INSERT ON {CHUNK_TABLE} BEGIN"
        f" INSERT INTO {FTS_MAP_TABLE}(chunk_id) VALUES (new.id);"
        f" INSERT INTO {FTS_TABLE}(rowid, content, topics) VALUES (last_insert_rowid(), new.content, {new_topics});"
        f" END",
        f"CREATE TRIGGER IF NOT EXISTS library_chunk_fts_au AFTER UPDATE ON {CHUNK_TABLE}"
        f" WHEN old.content IS NOT new.content OR old.topics IS NOT new.topics OR old.id IS NOT new.id BEGIN"
        f" {delete_old}"
        f" DELETE FROM {FTS_MAP_TABLE} WHERE chunk_id = old.id;"
        f" INSERT INTO {FTS_MAP_TABLE}(chunk_id) VALUES (new.id);"
        f" INSERT INTO {FTS_TABLE}(rowid, content, topics) VALUES (last_insert_rowid(), new.content, {new_topics});"
        f" END",
        f"CREATE TRIGGER IF NOT EXISTS library_chunk_fts_ad AFTER DELETE ON {CHUNK_TABLE} BEGIN"
        f" {delete_old}"
        f" DELETE FROM {FTS_MAP_TABLE} WHERE chunk_id = old.id;"
        f" END",
    ]


def _pg_unaccent_schema(cursor, using: str) -> str | None:
    """Install unaccent if we may; the schema it lives in, or None."""
    try:
        with transaction.atomic(using=using):
            cursor.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
    except Exception:
        pass
    cursor.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'unaccent'"
    )
    row = cursor.fetchone()
    return row[0] if row else None


def _pg_schema(unaccent_schema: str | None) -> list[str]:
    fold_body = (
        f'SELECT "{unaccent_schema}".unaccent(\'"{unaccent_schema}".unaccent\'::regdictionary, $1)'
        if unaccent_schema
        else "SELECT $1"
    )
    return [
        # Accent folding applied identically to the indexed text and to the query.
        "CREATE OR REPLACE FUNCTION library_search_fold(text) RETURNS text"
        f" LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$ {fold_body} $$",
        # A topic list as words (non-array JSON is indexed as its text).
        "CREATE OR REPLACE FUNCTION library_chunk_topics_text(jsonb) RETURNS text"
        " LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$"
        " SELECT coalesce((SELECT string_agg(t, ' ') FROM jsonb_array_elements_text("
        "   CASE WHEN jsonb_typeof($1) = 'array' THEN $1 ELSE jsonb_build_array($1 #>> '{}') END) AS t), '')"
        " $$",
        "CREATE OR REPLACE FUNCTION library_chunk_tsvector(text, jsonb) RETURNS tsvector"
        " LANGUAGE sql STABLE PARALLEL SAFE AS $$"
        " SELECT setweight(to_tsvector('simple', library_search_fold(library_chunk_topics_text($2))), 'A')"
        "     || setweight(to_tsvector('simple', library_search_fold(coalesce($1, ''))), 'B')"
        " $$",
        "CREATE OR REPLACE FUNCTION library_chunk_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN"
        "   IF TG_OP = 'UPDATE' AND NEW.content IS NOT DISTINCT FROM OLD.content"
        "      AND NEW.topics IS NOT DISTINCT FROM OLD.topics"
        "      AND NEW.search_vector IS NOT DISTINCT FROM OLD.search_vector THEN"
        "     RETURN NEW;"
        "   END IF;"
        "   NEW.search_vector := library_chunk_tsvector(NEW.content, NEW.topics);"
        "   RETURN NEW;"
        " END $$",
        f"ALTER TABLE {CHUNK_TABLE} ADD COLUMN IF NOT EXISTS search_vector tsvector",
        f"DROP TRIGGER IF EXISTS {PG_TRIGGER} ON {CHUNK_TABLE}",
        f"CREATE TRIGGER {PG_TRIGGER} BEFORE INSERT OR UPDATE ON {CHUNK_TABLE}"
        f" FOR EACH ROW EXECUTE FUNCTION library_chunk_search_sync()",
        f"CREATE INDEX IF NOT EXISTS library_chunk_search_gin ON {CHUNK_TABLE} USING gin (search_vector)",
    ]


def search_schema_install(connection) -> str:
    """Create the index structures for this database (idempotent); the mode they enable.

    SQLite without FTS5 gets nothing (search uses LIKE); nothing here is required for the
    chunk table itself to work.
    """
    _fts_ready_cache.pop(_cache_key(connection), None)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for statement in _pg_schema(_pg_unaccent_schema(cursor, connection.alias)):
                cursor.execute(statement)
            return "postgres"
        if connection.vendor == "sqlite":
            if not sqlite_has_fts5(connection):
                return "like"
            for statement in _sqlite_schema():
                cursor.execute(statement)
            _fts_ready_cache.pop(_cache_key(connection), None)
            return "fts5"
    return "like"


def search_schema_remove(connection) -> None:
    _fts_ready_cache.pop(_cache_key(connection), None)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"DROP TRIGGER IF EXISTS {PG_TRIGGER} ON {CHUNK_TABLE}")
            cursor.execute("DROP INDEX IF EXISTS library_chunk_search_gin")
            cursor.execute(f"ALTER TABLE {CHUNK_TABLE} DROP COLUMN IF EXISTS search_vector")
            for fn in (
                "library_chunk_search_sync()",
                "library_chunk_tsvector(text, jsonb)",
                "library_chunk_topics_text(jsonb)",
                "library_search_fold(text)",
            ):
                cursor.execute(f"DROP FUNCTION IF EXISTS {fn}")
        elif connection.vendor == "sqlite":
            for trigger in FTS_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            cursor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")
            cursor.execute(f"DROP TABLE IF EXISTS {FTS_MAP_TABLE}")


@dataclass
class RebuildReport:
    mode: str
    chunks: int
    indexed: int


def search_index_rebuild(
    *,
    using: str = "default",
    batch_size: int = 1000,
    progress: Callable[[int], None] | None = None,
    chunk_ids: Iterable | None = None,
) -> RebuildReport:
    """Rebuild the search index from the chunk table (all chunks, or only ``chunk_ids``).

    ``progress(n)`` is called after each batch with the number of chunks just indexed.
    One transaction: a failure leaves the old index in place.
    """
    connection = connections[using]
    with transaction.atomic(using=using):
        was_ready = connection.vendor != "sqlite" or fts_ready(connection)
        mode = search_schema_install(connection)
        if not was_ready:
            chunk_ids = None  # a fresh FTS5 index: index everything, never 'delete' what it never held
        with connection.cursor() as cursor:
            if chunk_ids is None:
                cursor.execute(f"SELECT count(*) FROM {CHUNK_TABLE}")
                total = cursor.fetchone()[0]
            else:
                ids = [db_uuid(connection, i) for i in chunk_ids]
                total = len(ids)
            indexed = 0
            if mode == "fts5":
                indexed = _rebuild_fts5(cursor, batch_size, progress, None if chunk_ids is None else ids)
            elif mode == "postgres":
                indexed = _rebuild_postgres(cursor, batch_size, progress, None if chunk_ids is None else ids)
            elif progress:
                progress(total)
    return RebuildReport(mode=mode, chunks=total, indexed=indexed)


def db_uuid(connection, value) -> str | uuid.UUID:
    value = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    return value.hex if connection.vendor == "sqlite" else value


def _batches(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _rebuild_fts5(cursor, batch_size, progress, ids) -> int:
    topics = _SQLITE_TOPICS.format(row="c")
    if ids is None:
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('delete-all')")
        cursor.execute(f"DELETE FROM {FTS_MAP_TABLE}")
        cursor.execute(f"INSERT INTO {FTS_MAP_TABLE}(chunk_id) SELECT id FROM {CHUNK_TABLE} ORDER BY created_at, id")
        cursor.execute(f"SELECT max(id) FROM {FTS_MAP_TABLE}")
        top = cursor.fetchone()[0] or 0
        last = 0
        while last < top:
            cursor.execute(
                f"INSERT INTO {FTS_TABLE}(rowid, content, topics)"
                f" SELECT m.id, c.content, {topics} FROM {FTS_MAP_TABLE} m JOIN {CHUNK_TABLE} c ON c.id = m.chunk_id"
                f" WHERE m.id > %s AND m.id <= %s",
                [last, last + batch_size],
            )
            if progress:
                progress(min(batch_size, top - last))
            last += batch_size
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")
        cursor.execute(f"SELECT count(*) FROM {FTS_MAP_TABLE}")
        return cursor.fetchone()[0]
    # Selected chunks: a no-op rewrite would be skipped by the WHEN clause, so delete and
    # re-add their entries explicitly (the 'delete' needs the indexed values: the row's own).
    for batch in _batches(ids, batch_size):
        marks = ", ".join(["%s"] * len(batch))
        cursor.execute(
            f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, content, topics)"
            f" SELECT 'delete', m.id, c.content, {topics} FROM {FTS_MAP_TABLE} m JOIN {CHUNK_TABLE} c"
            f" ON c.id = m.chunk_id WHERE c.id IN ({marks})",
            batch,
        )
        cursor.execute(f"DELETE FROM {FTS_MAP_TABLE} WHERE chunk_id IN ({marks})", batch)
        cursor.execute(
            f"INSERT INTO {FTS_MAP_TABLE}(chunk_id) SELECT id FROM {CHUNK_TABLE} WHERE id IN ({marks})", batch
        )
        cursor.execute(
            f"INSERT INTO {FTS_TABLE}(rowid, content, topics)"
            f" SELECT m.id, c.content, {topics} FROM {FTS_MAP_TABLE} m JOIN {CHUNK_TABLE} c ON c.id = m.chunk_id"
            f" WHERE c.id IN ({marks})",
            batch,
        )
        if progress:
            progress(len(batch))
    return len(ids)


def _rebuild_postgres(cursor, batch_size, progress, ids) -> int:
    if ids is None:
        cursor.execute(f"SELECT id FROM {CHUNK_TABLE} ORDER BY id")
        ids = [row[0] for row in cursor.fetchall()]
    done = 0
    for batch in _batches(ids, batch_size):
        cursor.execute(
            f"UPDATE {CHUNK_TABLE} SET search_vector = library_chunk_tsvector(content, topics) WHERE id = ANY(%s)",
            [batch],
        )
        done += cursor.rowcount
        if progress:
            progress(len(batch))
    return done


def ensure_search_schema(sender=None, using: str = "default", **kwargs) -> None:
    """``post_migrate``: put the SQLite FTS5 triggers back if a table rebuild dropped them.

    Django's SQLite schema editor alters a table by copying it to a new one, which
    drops the triggers; this re-installs them and rebuilds the index, so a later
    migration of the chunk table cannot silently detach the index from it.
    """
    from django.db.migrations.recorder import MigrationRecorder

    connection = connections[using]
    if connection.vendor != "sqlite" or CHUNK_TABLE not in connection.introspection.table_names():
        return
    if not MigrationRecorder(connection).migration_qs.filter(app="library", name="0003_search_index").exists():
        return
    _fts_ready_cache.pop(_cache_key(connection), None)
    if not fts_ready(connection) and sqlite_has_fts5(connection):
        search_index_rebuild(using=using)
