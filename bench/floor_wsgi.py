"""The floors of the HTTP bench: a minimal WSGI app answering the same API routes with the same JSON from the
same database.

No framework. Per request: read the bearer key and look it up (one statement: the key, its owner, and whether
the key is limited to some books), run the route's statement, answer JSON. It keeps one database connection
per worker, as the Django app does with persistent connections, and is served by gunicorn exactly like it,
with as many workers. The bench checks that both answer the same JSON before it times them.

Routes: ``GET /api/v1/me``, ``GET /api/v1/books/<id>``, ``GET /api/v1/library/search?q=``. Reads
BENCH_SQLITE_PATH or, when DATABASE_URL is set, PostgreSQL through psycopg; BENCH_CAPABILITIES holds each
role's capabilities (the app's constants, passed in by the bench).
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from urllib.parse import parse_qs

from bench.bench_search import RAW_PG, RAW_SQLITE_RANKED_FIRST
from library.search import DEFAULT_LIMIT, fts5_match, search_terms

POSTGRES = bool(os.environ.get("DATABASE_URL"))
CAPABILITIES: dict[str, list[str]] = json.loads(os.environ.get("BENCH_CAPABILITIES", "{}"))
AGENT_ROLES = {"sol", "terra", "luna"}

KEY_SQL = (
    "SELECT k.id, k.role, u.id, u.username,"
    " EXISTS (SELECT 1 FROM discovery_apikey_books kb WHERE kb.apikey_id = k.id)"
    " FROM discovery_apikey k JOIN auth_user u ON u.id = k.owner_id"
    " WHERE k.key_hash = %s AND k.revoked_at IS NULL AND u.is_active"
)
KEY_BOOKS_SQL = "SELECT book_id FROM discovery_apikey_books WHERE apikey_id = %s"
# /me gives a page of book ids in the order of GET /books (title, id), and a link to that route for the rest.
PAGE = int(os.environ.get("BENCH_VIEW_PAGE", "50"))
ORDER = " ORDER BY b.title ASC, b.id ASC"
HUMAN_BOOKS_SQL = (
    "SELECT DISTINCT b.id, b.title FROM discovery_book b"
    " LEFT JOIN discovery_book_editors e ON e.book_id = b.id"
    " WHERE b.owner_id = %s OR e.user_id = %s" + ORDER
)
AGENT_BOOKS_SQL = "SELECT b.id FROM discovery_book b WHERE b.owner_id = %s" + ORDER
BOOK_SQL = (
    "SELECT b.id, b.title, b.slug, b.premise, b.genre_pack, b.planned_order, b.series_id, b.created_at,"
    " b.owner_id, EXISTS (SELECT 1 FROM discovery_book_editors e WHERE e.book_id = b.id AND e.user_id = %s)"
    " FROM discovery_book b WHERE b.id = %s"
)


def _sql(statement: str) -> str:
    return statement if POSTGRES else statement.replace("%s", "?")


KEY_SQL, KEY_BOOKS_SQL, HUMAN_BOOKS_SQL, AGENT_BOOKS_SQL, BOOK_SQL = map(
    _sql, (KEY_SQL, KEY_BOOKS_SQL, HUMAN_BOOKS_SQL, AGENT_BOOKS_SQL, BOOK_SQL)
)

_local: dict = {}


def _connection():
    if "conn" not in _local:
        if POSTGRES:
            import psycopg

            _local["conn"] = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
        else:
            import sqlite3

            _local["conn"] = sqlite3.connect(
                os.environ["BENCH_SQLITE_PATH"], check_same_thread=False, isolation_level=None
            )
    return _local["conn"]


def _query(sql: str, params: tuple) -> list[tuple]:
    if POSTGRES:
        return _connection().execute(sql, params, prepare=True).fetchall()
    return _connection().execute(sql, params).fetchall()


def _uuid_text(value) -> str:
    if isinstance(value, uuid.UUID):
        return str(value)
    return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"  # SQLite stores uuid.hex


def _db_uuid(text: str):
    value = uuid.UUID(text)
    return value if POSTGRES else value.hex


def _timestamp(value) -> str:
    """As the API writes it (Django's JSON encoder): ISO 8601 to the millisecond, UTC as ``Z``."""
    if not isinstance(value, str):  # PostgreSQL: an aware datetime in UTC
        value = value.isoformat(sep=" ").removesuffix("+00:00")
    return f"{value[:10]}T{value[11:23]}Z"  # SQLite stores "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC


def _json_list(value) -> list:
    return json.loads(value) if isinstance(value, str) else (value or [])


class Caller:
    def __init__(self, row: tuple):
        self.key_id, self.role, self.user_id, self.username, limited = row
        self.book_ids = {_uuid_text(r[0]) for r in _query(KEY_BOOKS_SQL, (self.key_id,))} if limited else set()

    @property
    def is_agent(self) -> bool:
        return self.role in AGENT_ROLES


def _caller(environ) -> Caller | None:
    scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return None
    rows = _query(KEY_SQL, (hashlib.sha256(token.encode()).hexdigest(),))
    return Caller(rows[0]) if rows else None


def me(caller: Caller, _environ, _rest: str):
    if caller.is_agent:
        rows = _query(AGENT_BOOKS_SQL, (caller.user_id,))
    else:
        rows = _query(HUMAN_BOOKS_SQL, (caller.user_id, caller.user_id))
    book_ids = [_uuid_text(row[0]) for row in rows]
    if caller.book_ids:
        book_ids = [pk for pk in book_ids if pk in caller.book_ids]
    more = len(book_ids) > PAGE
    return 200, {
        "username": caller.username,
        "role": caller.role,
        "capabilities": CAPABILITIES.get(caller.role, []),
        "book_ids": book_ids[:PAGE],
        "next": {"book_ids": f"/api/v1/books?limit={PAGE}&offset={PAGE}" if more else None},
    }


def book(caller: Caller, _environ, rest: str):
    try:
        book_id = _db_uuid(rest)
    except ValueError:
        return 404, {"detail": "book not found", "code": "not_found"}
    rows = _query(BOOK_SQL, (caller.user_id, book_id))
    if not rows:
        return 404, {"detail": "book not found", "code": "not_found"}
    pk, title, slug, premise, genre_pack, planned_order, series_id, created_at, owner_id, edits = rows[0]
    if caller.is_agent:
        allowed = owner_id == caller.user_id and (not caller.book_ids or _uuid_text(pk) in caller.book_ids)
        role = caller.role if allowed else None
    else:
        role = "author" if owner_id == caller.user_id else ("editor" if edits else None)
    if role is None:
        return 404, {"detail": "book not found", "code": "not_found"}
    return 200, {
        "id": _uuid_text(pk),
        "title": title,
        "slug": slug,
        "premise": premise,
        "genre_pack": genre_pack,
        "planned_order": planned_order,
        "series_id": _uuid_text(series_id) if series_id else None,
        "created_at": _timestamp(created_at),
        "role": role,
        "capabilities": CAPABILITIES.get(role, []),
    }


def search(_caller: Caller, environ, _rest: str):
    query = parse_qs(environ.get("QUERY_STRING", "")).get("q", [""])[0]
    words = search_terms(query)
    rows = []
    if words:
        if POSTGRES:
            rows = _query(RAW_PG, (json.dumps(words), DEFAULT_LIMIT))
        else:
            rows = _query(RAW_SQLITE_RANKED_FIRST, (fts5_match(words), DEFAULT_LIMIT))
    return 200, {
        "mode": "postgres" if POSTGRES else "fts5",
        "results": [
            {
                "chunk_id": _uuid_text(r[0]),
                "content": r[1],
                "topics": _json_list(r[2]),
                "applicability": _json_list(r[3]),
                "citation": r[4],
                "source_title": r[5],
                "score": float(r[6] or 0.0),
            }
            for r in rows
        ],
    }


ROUTES = (("/api/v1/me", me), ("/api/v1/books/", book), ("/api/v1/library/search", search))
UNAUTHENTICATED = {"detail": "authentication required", "code": "not_authenticated"}


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    status, body = 404, {"detail": "not found", "code": "not_found"}
    for prefix, route in ROUTES:
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
            caller = _caller(environ)
            status, body = route(caller, environ, path[len(prefix) :]) if caller else (401, UNAUTHENTICATED)
            break
    data = json.dumps(body).encode()
    reason = {200: "OK", 401: "Unauthorized", 404: "Not Found"}[status]
    start_response(f"{status} {reason}", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]
