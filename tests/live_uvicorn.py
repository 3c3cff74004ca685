"""A real uvicorn serving ``novelgraph.asgi:application`` (the README's server) on the test database.

As ``tests/live_gunicorn.py`` does for gunicorn: its own process group on a free loopback port, the test's
secret and seal keys, the test's database (the test must be transactional). ``workers`` > 1 runs uvicorn's
supervisor with that many worker processes (``--workers``), as the README's deployment does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from .live_gunicorn import ROOT, START_DEADLINE, Server, _free_port, database_env


def server_env(extra_env: dict | None = None) -> dict[str, str]:
    """The environment of a process (the server, a worker) on the test's database, keys and hosts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(database_env())
    env.update(
        DJANGO_SECRET_KEY=settings.SECRET_KEY,
        NOVELGRAPH_SEAL_KEY=settings.DECISION_LOG_SEAL_KEY,
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        PYTHONPATH=str(ROOT),
    )
    env.update(extra_env or {})
    if not env.get("DATABASE_URL"):
        env.pop("DATABASE_URL", None)
    return env


@contextmanager
def uvicorn(tmp_path: Path, *, workers: int = 1, extra_env: dict | None = None) -> Iterator[Server]:
    port = _free_port()
    env = server_env(extra_env)
    log = tmp_path / f"uvicorn-{port}.log"
    command = [sys.executable, "-m", "uvicorn", "novelgraph.asgi:application", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    if workers > 1:
        command += ["--workers", str(workers)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server("127.0.0.1", port, process, log, env)
    try:
        _wait_until_serving(server, workers)
        yield server
    finally:
        server.stop()


def process_group(leader: int) -> list[int]:
    """The pids in the process group that ``leader`` started (the server's supervisor and its workers)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == leader:  # the stat line's 5th field, the process group
            pids.append(int(entry.name))
    return pids


def _wait_until_serving(server: Server, workers: int) -> None:
    deadline = time.monotonic() + START_DEADLINE
    served = 0
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {server.process.returncode}:\n{server.logs()}")
        try:
            status, _headers, _body = server.request("GET", "/login/", timeout=5)
            served += status == 200
            # Each worker process imports the app when it starts: wait until several answers came back.
            if served >= workers:
                return
        except OSError:
            pass
        time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"uvicorn did not serve within {START_DEADLINE} s:\n{server.logs()}")
