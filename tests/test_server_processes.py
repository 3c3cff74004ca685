"""Across server processes: a real gunicorn with several workers, killed with kill -9 in the middle of a burst.

Each test starts gunicorn (``tests/live_gunicorn.py``) on the test's own database, on SQLite and on
PostgreSQL. Writers are threads in the test sending HTTP to the server; every worker process has its
own database connection, so the locks that keep ordinals, sequences and the decision chain in order
are the database's, not a Python lock.
"""

from __future__ import annotations

import http.client
import json
import threading

import pytest

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.access import book_access
from discovery.models import Book, Observation, ScratchpadEntry, Turn
from library.schemas import ResearchIn
from library.services import research_propose
from novelgraph.core.auth import principal_for_key

from .factories import DiscoverySessionFactory
from .live_gunicorn import Server, gunicorn

pytestmark = pytest.mark.django_db(transaction=True)
WAIT = 120  # seconds: a bound on waiting for the burst, never an assertion about speed


def _proposals(sol_key: str, book, n: int, tag: str) -> list:
    sol = book_access(principal_for_key(sol_key), book)
    return [
        research_propose(
            access=sol,
            payload=ResearchIn(
                url=f"https://example.org/{tag}/{i}",
                title=f"Tide table {tag} {i}",
                claim=f"High water on day {i} was at 06:{i % 60:02d}.",
                citation=f"Almanac p. {i}",
            ),
        ).approval_id
        for i in range(n)
    ]


def _run_together(jobs) -> list:
    barrier = threading.Barrier(len(jobs))
    results: list = [None] * len(jobs)

    def worker(index, job):
        try:
            barrier.wait()
            results[index] = job()
        except Exception as exc:  # reported by the assertions
            results[index] = exc

    threads = [threading.Thread(target=worker, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=WAIT * 2)
    return results


def _assert_gapless(values: list[int], start: int = 1) -> None:
    assert sorted(values) == list(range(start, start + len(values))), sorted(values)


# --- Chunked request bodies under gunicorn ----------------------------------------------------


def _chunks(data: bytes, size: int = 64 * 1024):
    for at in range(0, len(data), size):
        yield data[at : at + size]


def test_a_chunked_body_is_read_within_the_limit_and_refused_with_413_beyond_it(author_api, tmp_path):
    with gunicorn(tmp_path, workers=1) as server:
        headers = {
            "Content-Type": "application/json",
            "Authorization": f"Bearer {author_api.key}",
            "Transfer-Encoding": "chunked",  # sent as chunks (Server.request encodes an iterable body)
        }
        small = json.dumps({"title": "Sent in chunks"}).encode()
        status, _h, body = server.request("POST", "/api/v1/books", _chunks(small, 5), headers)
        assert status == 201, body
        assert json.loads(body)["title"] == "Sent in chunks"

        big = json.dumps({"title": "z" * (1024 * 1024 + 10)}).encode()
        status, response_headers, body = server.request("POST", "/api/v1/books", _chunks(big), headers)
        assert status == 413, body
        assert response_headers["Content-Type"].startswith("application/json")
        assert json.loads(body)["code"] == "too_large"
        assert "limit is 1048576 bytes" in json.loads(body)["detail"]

        page_headers = {"Content-Type": "application/x-www-form-urlencoded", "Transfer-Encoding": "chunked"}
        form = b"username=ada&password=" + b"p" * (1024 * 1024 + 1)
        status, _h, body = server.request("POST", "/login/", _chunks(form), page_headers)
        assert status == 413
        assert b"Nothing was saved" in body

    assert sorted(Book.objects.values_list("title", flat=True)) == ["Sent in chunks", "The Tide Clock"]


# --- Several server processes at once ---------------------------------------------------------


def test_writers_across_several_server_processes_keep_ordinals_sequences_and_the_chain(
    author_api, sol_api, luna_api, book, tmp_path
):
    session = DiscoverySessionFactory(book=book)
    approvals = _proposals(sol_api.key, book, 6, "multi")
    each = 3

    def turns(i):
        def job():
            return [
                server.post_json(
                    f"/sessions/{session.pk}/turns",
                    {
                        "role": "author",
                        "content": f"turn {i}.{n}",
                        "observations": [{"key": f"k{i}.{n}", "value": "v", "provenance": "author-stated"}],
                    },
                    author_api.key,
                )[0]
                for n in range(each)
            ]

        return job

    def notes(i):
        def job():
            return [
                server.post_json(
                    f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": f"note {i}.{n}"}, luna_api.key
                )[0]
                for n in range(each)
            ]

        return job

    def decide(approval_id):
        def job():
            body = {"verdict": "approve", "rationale": "Checked against the almanac."}
            return [server.post_json(f"/approvals/{approval_id}/verdict", body, author_api.key)[0]]

        return job

    with gunicorn(tmp_path, workers=3) as server:
        results = _run_together(
            [turns(i) for i in range(4)] + [notes(i) for i in range(4)] + [decide(a) for a in approvals]
        )
        logs = server.logs()

    assert all(r == [201] * each for r in results[:8]), (results, logs)
    assert all(r == [200] for r in results[8:]), (results, logs)
    _assert_gapless(list(Turn.objects.filter(session=session).values_list("ordinal", flat=True)),
                    start=Turn.objects.filter(session=session).order_by("ordinal").first().ordinal)  # fmt: skip
    assert Observation.objects.filter(turn__session=session).count() == 4 * each
    _assert_gapless(list(ScratchpadEntry.objects.filter(session=session).values_list("sequence", flat=True)))
    _assert_gapless(list(DecisionLogEntry.objects.filter(book=book).values_list("sequence", flat=True)))
    assert DecisionLogEntry.objects.filter(book=book).count() == len(approvals)
    assert decision_log_verify(book).ok


# --- kill -9 in the middle of a burst ---------------------------------------------------------


class Burst:
    """Writer threads that keep writing until the server goes away; they record what was acknowledged."""

    def __init__(self, server: Server, *, signal_after: int):
        self.server = server
        self.lock = threading.Lock()
        self.acknowledged: dict[str, list] = {"turns": [], "notes": [], "decisions": []}
        self.refused: list = []
        self.signal_after = signal_after
        self.enough = threading.Event()
        self.threads: list[threading.Thread] = []

    def _ack(self, kind: str, value) -> None:
        # The kill comes once every kind of write is under way (on a loaded machine the heavier turns can lag
        # behind the notes and decisions), and enough of them in all were acknowledged.
        with self.lock:
            self.acknowledged[kind].append(value)
            acked = self.acknowledged.values()
            if all(len(v) >= 3 for v in acked) and sum(len(v) for v in acked) >= self.signal_after:
                self.enough.set()

    def _loop(self, kind: str, calls) -> None:
        for path, body, key, ok, value in calls:
            try:
                status, answer = self.server.post_json(path, body, key)
            except (OSError, http.client.HTTPException):
                return  # the server is gone: what was not acknowledged may or may not have landed
            if status != ok:
                with self.lock:
                    self.refused.append((kind, status, answer))
                return
            self._ack(kind, value)

    def start(self, kind: str, calls) -> None:
        thread = threading.Thread(target=self._loop, args=(kind, calls))
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=WAIT)


def test_kill_9_in_the_middle_of_a_burst_loses_no_acknowledged_write_and_half_writes_nothing(
    author_api, sol_api, luna_api, book, tmp_path
):
    session = DiscoverySessionFactory(book=book)
    approvals = _proposals(sol_api.key, book, 60, "kill")
    per_writer = 200

    def turn_calls(w):
        for n in range(per_writer):
            content = f"turn {w}.{n}"
            observations = [{"key": f"{content} #{k}", "value": "v", "provenance": "author-stated"} for k in range(3)]
            yield (f"/sessions/{session.pk}/turns", {"role": "author", "content": content,
                   "observations": observations}, author_api.key, 201, content)  # fmt: skip

    def note_calls(w):
        for n in range(per_writer):
            content = f"note {w}.{n}"
            yield (f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": content}, luna_api.key, 201,
                   content)  # fmt: skip

    def decision_calls(share):
        for approval_id in share:
            yield (f"/approvals/{approval_id}/verdict", {"verdict": "approve", "rationale": "Checked."},
                   author_api.key, 200, approval_id)  # fmt: skip

    with gunicorn(tmp_path, workers=3, name="killed") as server:
        burst = Burst(server, signal_after=30)
        for w in range(2):
            burst.start("turns", turn_calls(w))
            burst.start("notes", note_calls(w))
            burst.start("decisions", decision_calls(approvals[w::2]))
        reached = burst.enough.wait(timeout=WAIT)
        server.kill()  # kill -9: the master and every worker, mid-request
        burst.join()
        logs = server.logs()
    assert reached, f"the burst never got going:\n{logs}"
    assert burst.refused == [], (burst.refused, logs)

    # Every acknowledged write is there.
    contents = set(Turn.objects.filter(session=session).values_list("content", flat=True))
    assert set(burst.acknowledged["turns"]) <= contents
    notes = set(ScratchpadEntry.objects.filter(session=session).values_list("content", flat=True))
    assert set(burst.acknowledged["notes"]) <= notes
    decided = set(Approval.objects.filter(book=book).exclude(status="pending").values_list("pk", flat=True))
    assert set(burst.acknowledged["decisions"]) <= decided

    # Nothing is half-written: every turn has all three observations; no gaps anywhere; the log verifies.
    for turn in Turn.objects.filter(session=session).prefetch_related("observations"):
        assert sorted(o.key for o in turn.observations.all()) == [f"{turn.content} #{k}" for k in range(3)]
    ordinals = list(Turn.objects.filter(session=session).values_list("ordinal", flat=True))
    _assert_gapless(ordinals, start=min(ordinals))
    _assert_gapless(list(ScratchpadEntry.objects.filter(session=session).values_list("sequence", flat=True)))
    log = list(DecisionLogEntry.objects.filter(book=book).values_list("sequence", flat=True))
    _assert_gapless(log)
    assert len(log) == len(decided), "one log entry per decided approval, no more, no less"
    verification = decision_log_verify(book)
    assert verification.ok, verification

    # A new server carries on where the killed one stopped: the next numbers follow without a gap.
    with gunicorn(tmp_path, workers=2, name="restarted") as server:
        turn = server.post_json(f"/sessions/{session.pk}/turns", {"role": "author", "content": "after"}, author_api.key)
        note = server.post_json(f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": "after"},
                                luna_api.key)  # fmt: skip
        pending = Approval.objects.filter(book=book, status="pending").values_list("pk", flat=True).first()
        verdict = server.post_json(f"/approvals/{pending}/verdict", {"verdict": "approve", "rationale": "Later."},
                                   author_api.key)  # fmt: skip
    assert (turn[0], note[0], verdict[0]) == (201, 201, 200), (turn, note, verdict)
    assert turn[1]["ordinal"] == max(ordinals) + 1
    _assert_gapless(list(ScratchpadEntry.objects.filter(session=session).values_list("sequence", flat=True)))
    _assert_gapless(list(DecisionLogEntry.objects.filter(book=book).values_list("sequence", flat=True)))
    assert decision_log_verify(book).ok
