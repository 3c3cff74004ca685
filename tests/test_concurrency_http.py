"""Concurrency through the HTTP layer: many clients at once on one session and one book.

Each thread has its own Django test Client (and so its own database connection), all requests go
through the real API, all at the same moment (a barrier). Runs on SQLite (busy timeout, IMMEDIATE
transactions) and on PostgreSQL (row locks). Nothing is lost, ordinals and sequences are distinct
and gapless, the decision chain verifies, and no request answers 5xx.
"""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connections
from django.test import Client

from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.access import book_access
from discovery.models import ScratchpadEntry, Turn
from library.schemas import ResearchIn
from library.services import research_propose
from novelgraph.core.auth import principal_for_key

from .factories import DiscoverySessionFactory

pytestmark = pytest.mark.django_db(transaction=True)
THREADS = 6
EACH = 3


def run_at_once(jobs) -> list:
    """Run every job in its own thread, released together; returns their results (or exceptions)."""
    barrier = threading.Barrier(len(jobs))
    results: list = [None] * len(jobs)

    def worker(index, job):
        try:
            barrier.wait()
            results[index] = job()
        except Exception as exc:  # reported by the assertions below
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def poster(key: str, path: str, bodies: list[dict]):
    def job() -> list[int]:
        client = Client(raise_request_exception=False)
        return [
            client.post(
                f"/api/v1{path}", json.dumps(b), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
            ).status_code
            for b in bodies
        ]

    return job


def test_turns_posted_at_once_on_one_session_get_distinct_gapless_ordinals(author_api, sol_api, book):
    session = DiscoverySessionFactory(book=book)
    jobs = [
        poster(
            (author_api if i % 2 else sol_api).key,
            f"/sessions/{session.pk}/turns",
            [{"role": "author" if i % 2 else "sol", "content": f"turn {i}.{n}"} for n in range(EACH)],
        )
        for i in range(THREADS)
    ]

    results = run_at_once(jobs)

    assert all(r == [201] * EACH for r in results), results
    ordinals = sorted(Turn.objects.filter(session=session).values_list("ordinal", flat=True))
    assert ordinals == list(range(ordinals[0], ordinals[0] + THREADS * EACH))
    contents = set(Turn.objects.filter(session=session).values_list("content", flat=True))
    assert contents == {f"turn {i}.{n}" for i in range(THREADS) for n in range(EACH)}, "nothing lost"


def test_scratchpad_entries_appended_at_once_get_distinct_gapless_sequences(luna_api, terra_api, book):
    session = DiscoverySessionFactory(book=book)
    jobs = [
        poster(
            (luna_api if i % 2 else terra_api).key,
            f"/sessions/{session.pk}/scratchpad",
            [{"kind": "question", "content": f"note {i}.{n}"} for n in range(EACH)],
        )
        for i in range(THREADS)
    ]

    results = run_at_once(jobs)

    assert all(r == [201] * EACH for r in results), results
    sequences = sorted(ScratchpadEntry.objects.filter(session=session).values_list("sequence", flat=True))
    assert sequences == list(range(1, THREADS * EACH + 1))
    assert ScratchpadEntry.objects.filter(session=session).count() == THREADS * EACH


def test_decisions_made_at_once_on_one_book_form_one_unbroken_chain(author_api, sol_api, book):
    sol = book_access(principal_for_key(sol_api.key), book)
    approvals = [
        research_propose(
            access=sol,
            payload=ResearchIn(
                url=f"https://example.org/tide/{i}",
                title=f"Tide table {i}",
                claim=f"High water on day {i} was at 06:{i:02d}.",
                citation=f"Almanac p. {i}",
            ),
        ).approval_id
        for i in range(THREADS * 2)
    ]
    jobs = [
        poster(
            author_api.key,
            f"/approvals/{approvals[i]}/verdict",
            [{"verdict": "approve", "rationale": f"Checked against the almanac ({i})."}],
        )
        for i in range(len(approvals))
    ]

    results = run_at_once(jobs)

    assert all(r == [200] for r in results), results
    log = list(DecisionLogEntry.objects.filter(book=book).order_by("sequence").values_list("sequence", flat=True))
    assert log == list(range(1, len(approvals) + 1)), "one entry per decision, no gaps, no fork"
    assert decision_log_verify(book).ok


def test_the_same_approval_decided_twice_at_once_is_decided_once(author_api, sol_api, book):
    sol = book_access(principal_for_key(sol_api.key), book)
    approval_id = research_propose(
        access=sol,
        payload=ResearchIn(url="https://example.org/once", title="Once", claim="Once.", citation="p. 1"),
    ).approval_id
    body = [{"verdict": "approve", "rationale": "Yes."}]

    results = run_at_once([poster(author_api.key, f"/approvals/{approval_id}/verdict", body) for _ in range(4)])

    statuses = sorted(r[0] for r in results)
    assert statuses.count(200) == 1 and all(s == 409 for s in statuses if s != 200), statuses
    assert DecisionLogEntry.objects.filter(book=book).count() == 1
    assert decision_log_verify(book).ok
