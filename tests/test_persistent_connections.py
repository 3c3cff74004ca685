"""A worker keeps its database connection from one request to the next (CONN_MAX_AGE), and that connection
still sees what other connections wrote in between (SQLite in WAL mode, PostgreSQL)."""

from __future__ import annotations

import json
import threading

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection, connections
from django.test import RequestFactory

from novelgraph.core.services import api_key_create

from .factories import BookFactory


def serve(handler: WSGIHandler, path: str, key: str):
    """One request through Django's WSGI handler, as a server runs it: request_started, the response, and
    request_finished on close (where Django closes connections that are too old or broken)."""
    environ = RequestFactory()._base_environ(PATH_INFO=path, REQUEST_METHOD="GET", HTTP_AUTHORIZATION=f"Bearer {key}")
    response = handler(environ, lambda status, headers: None)
    response.close()
    return response


@pytest.mark.django_db(transaction=True)
def test_the_next_request_reuses_the_connection_and_sees_rows_written_elsewhere_in_between(author):
    key = api_key_create(owner=author, role="author")[1]
    handler = WSGIHandler()
    first = serve(handler, "/api/v1/me", key)
    opened = connection.connection
    assert opened is not None, "the connection was closed when the request ended"

    def another_worker_creates_a_book() -> None:
        try:
            BookFactory(owner=author, title="Written by another worker")
        finally:
            connections.close_all()

    writer = threading.Thread(target=another_worker_creates_a_book)
    writer.start()
    writer.join()
    second = serve(handler, "/api/v1/me", key)

    assert first.status_code == second.status_code == 200
    assert connection.connection is opened
    new_book = author.books.get(title="Written by another worker")
    assert str(new_book.pk) in json.loads(second.content)["book_ids"]
