"""The login throttle holds however the attempts arrive: many threads at once, or several server processes.

Every password the server checks is counted by the hasher itself (``tests/counting_hasher.py``, the
suite's MD5 hasher plus one appended line per check, from any thread or process). Thirty wrong
passwords released together must check at most the limit's number (5), and afterwards even the
right password is refused with 429.
"""

from __future__ import annotations

import re
import threading
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client

from .counting_hasher import LOG_VARIABLE, checks_in
from .factories import PASSWORD
from .live_gunicorn import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)
ATTEMPTS = 30


def _together(jobs) -> list:
    barrier = threading.Barrier(len(jobs))
    results: list = [None] * len(jobs)

    def worker(index, job):
        try:
            barrier.wait()
            results[index] = job()
        except Exception as exc:  # reported by the assertions
            results[index] = exc
        finally:
            from django.db import connections

            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return results


@pytest.fixture
def counted_checks(tmp_path, monkeypatch, settings):
    log = tmp_path / "password-checks.log"
    monkeypatch.setenv(LOG_VARIABLE, str(log))
    settings.PASSWORD_HASHERS = ["tests.counting_hasher.CountingMD5PasswordHasher"]
    return log


def test_thirty_simultaneous_wrong_passwords_in_threads_check_at_most_the_limit(author, counted_checks):
    def attempt():
        return Client(REMOTE_ADDR="203.0.113.9").post("/login/", {"username": "ada", "password": "wrong"}).status_code

    statuses = _together([attempt] * ATTEMPTS)

    limit = settings.NOVELGRAPH_LOGIN_FAILURE_LIMIT
    assert set(statuses) <= {200, 429}, statuses
    assert 1 <= checks_in(counted_checks) <= limit, f"{checks_in(counted_checks)} passwords checked"
    assert statuses.count(429) >= ATTEMPTS - limit
    right = Client(REMOTE_ADDR="203.0.113.9").post("/login/", {"username": "ada", "password": PASSWORD})
    assert right.status_code == 429
    assert checks_in(counted_checks) <= limit


def _csrf(server) -> tuple[str, str]:
    status, headers, body = server.request("GET", "/login/")
    assert status == 200
    cookie = re.search(r"csrftoken=([^;]+)", headers["Set-Cookie"]).group(1)
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', body).group(1).decode()
    return cookie, token


def test_simultaneous_wrong_passwords_across_server_processes_check_at_most_the_limit(author, tmp_path):
    """Three gunicorn worker processes with four threads each: twelve handlers at once."""
    log = tmp_path / "password-checks.log"
    env = {"DJANGO_SETTINGS_MODULE": "tests.gunicorn_settings", LOG_VARIABLE: str(log)}
    with gunicorn(tmp_path, workers=3, threads=4, extra_env=env) as server:
        cookie, token = _csrf(server)
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={cookie}"}

        def attempt(password: str):
            body = urlencode({"csrfmiddlewaretoken": token, "username": "ada", "password": password})
            return server.request("POST", "/login/", body.encode(), headers)

        results = _together([lambda: attempt("wrong")] * ATTEMPTS)
        right_status, right_headers, right_body = attempt(PASSWORD)
        logs = server.logs()

    statuses = [r[0] if isinstance(r, tuple) else r for r in results]
    limit = settings.NOVELGRAPH_LOGIN_FAILURE_LIMIT
    assert set(statuses) <= {200, 429}, (statuses, logs)
    assert 1 <= checks_in(log) <= limit, f"{checks_in(log)} passwords checked across the workers"
    assert right_status == 429, "the right password, after the burst, is refused too"
    assert b"Too many failed attempts" in right_body
    assert int(right_headers["Retry-After"]) > 0
    assert checks_in(log) <= limit
