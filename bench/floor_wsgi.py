"""The floor for the HTTP search bench: the raw full-text query behind a minimal WSGI app.

No framework, no authentication: parse ``q``, quote the words for FTS5 (or pass them to ``plainto_tsquery``),
run the statement, answer JSON. Served by gunicorn exactly like the Django app. Reads BENCH_SQLITE_PATH or,
when DATABASE_URL is set, queries PostgreSQL through psycopg.
"""

from __future__ import annotations

import json
import os
from urllib.parse import parse_qs

from bench.bench_search import RAW_PG, RAW_SQLITE_RANKED_FIRST

_local = {}


def _connection():
    if "conn" not in _local:
        if os.environ.get("DATABASE_URL"):
            import psycopg

            _local["conn"] = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
        else:
            import sqlite3

            _local["conn"] = sqlite3.connect(os.environ["BENCH_SQLITE_PATH"], check_same_thread=False)
    return _local["conn"]


def app(environ, start_response):
    query = parse_qs(environ.get("QUERY_STRING", "")).get("q", [""])[0]
    words = [w for w in query.split() if w]
    rows = []
    if words:
        conn = _connection()
        try:
            if os.environ.get("DATABASE_URL"):
                rows = conn.execute(RAW_PG, (" ".join(words), 8)).fetchall()
            else:
                match = " ".join('"' + w.replace('"', '""') + '"' for w in words)
                rows = conn.execute(RAW_SQLITE_RANKED_FIRST, (match, 8)).fetchall()
        except Exception:  # a query FTS5 cannot parse answers nothing, like ours
            rows = []
    body = json.dumps(
        {"results": [{"chunk_id": str(r[0]), "content": r[1], "citation": r[4], "score": r[6]} for r in rows]}
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
