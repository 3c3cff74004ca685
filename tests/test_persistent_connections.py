"""Connections under any server (issue 30): a request's connection goes back to the process's bounded pool when
the request ends (CONN_MAX_AGE = 0), the next request, on whatever thread, takes it from there and sees what
other connections wrote in between, and requests on threads of their own (as an ASGI server runs them) leave
no connection behind: the process holds at most the pool's size (SQLite in WAL mode, PostgreSQL)."""

from __future__ import annotations

import json
import threading

import pytest
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection, connections
from django.db.backends.signals import connection_created
from django.test import RequestFactory

from novelgraph.core.services import api_key_create
from novelgraph.core.sqlite_pool.base import open_connections

from .factories import BookFactory

pytestmark = pytest.mark.django_db(transaction=True)


def serve(handler: WSGIHandler, path: str, key: str):
    """One request through Django's WSGI handler, as a server runs it: request_started, the response, and
    request_finished on close (where Django closes the request's connection: back to the pool)."""
    environ = RequestFactory()._base_environ(PATH_INFO=path, REQUEST_METHOD="GET", HTTP_AUTHORIZATION=f"Bearer {key}")
    response = handler(environ, lambda status, headers: None)
    response.close()
    return response


class Opened:
    """The driver connections that Django's connections were given, in order (a reused one again)."""

    def __init__(self):
        self.raw: list = []
        self.lock = threading.Lock()

    def __call__(self, sender, connection, **kwargs):
        with self.lock:
            self.raw.append(connection.connection)

    def distinct(self) -> int:
        return len({id(raw) for raw in self.raw})

    def __enter__(self):
        connection_created.connect(self, weak=False)
        return self

    def __exit__(self, *exc):
        connection_created.disconnect(self)


def fresh_pool() -> None:
    """Start from a new, empty pool: what earlier tests of this process left idle in it (a pool hands out its
    idle connections in turn) says nothing about these requests."""
    connections.close_all()
    for conn in connections.all():
        if hasattr(conn, "close_pool"):
            conn.close_pool()  # Django's PostgreSQL pool (psycopg_pool), or the SQLite pool's idle connections


def on_a_thread_of_its_own(job) -> None:
    """As an ASGI server runs a sync view: on a new thread that ends with the request (and closes nothing)."""
    thread = threading.Thread(target=job)
    thread.start()
    thread.join(timeout=60)


def test_the_next_request_on_another_thread_reuses_the_pooled_connection_and_sees_rows_written_in_between(author):
    key = api_key_create(owner=author, role="author")[1]
    handler = WSGIHandler()
    fresh_pool()
    with Opened() as opened:
        first = serve(handler, "/api/v1/me", key)
        assert connection.connection is None, "the request kept its connection past its end"

        def another_worker_creates_a_book() -> None:
            BookFactory(owner=author, title="Written by another worker")
            connections.close_all()

        on_a_thread_of_its_own(another_worker_creates_a_book)
        answers = []
        on_a_thread_of_its_own(lambda: answers.append(serve(handler, "/api/v1/me", key)))

    second = answers[0]
    assert first.status_code == second.status_code == 200
    reused = any(raw is opened.raw[-1] for raw in opened.raw[:-1])
    assert reused, "the second request opened a connection of its own instead of taking a pooled one"
    new_book = author.books.get(title="Written by another worker")
    assert str(new_book.pk) in json.loads(second.content)["book_ids"]


def test_requests_each_on_a_thread_of_its_own_leave_no_connection_behind(author):
    key = api_key_create(owner=author, role="author")[1]
    handler = WSGIHandler()
    fresh_pool()
    statuses: list[int] = []
    barrier = threading.Barrier(12)

    def at_once() -> None:
        barrier.wait(timeout=60)
        statuses.append(serve(handler, "/api/v1/me", key).status_code)

    with Opened() as opened:
        for _ in range(20):
            on_a_thread_of_its_own(lambda: statuses.append(serve(handler, "/api/v1/me", key).status_code))
        one_at_a_time = opened.distinct()
        threads = [threading.Thread(target=at_once) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

    assert statuses == [200] * 32
    assert one_at_a_time <= 2, f"20 requests one after another opened {one_at_a_time} connections"
    if connection.vendor == "postgresql":
        assert opened.distinct() <= settings.DB_POOL_SIZE, "more connections than the pool's size"
    else:  # the 12 at once each had one; afterwards the pool keeps at most its size open (the backend's count)
        assert open_connections() <= settings.DB_POOL_SIZE, "connections left open beyond the pool's size"
