"""A real gunicorn serving the test database, for tests across processes (kill -9, several workers, chunked bodies).

The server runs ``novelgraph.wsgi:application`` in its own process group, on a free loopback port,
against the database of the running test (which must be transactional, so what the test writes is
committed and the server sees it, and the other way round). The seal key and the secret key are the
test's, so the test can verify what the server wrote.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
START_DEADLINE = 120  # seconds; a bound on waiting, not an assertion about speed


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def database_env() -> dict[str, str]:
    """Environment that points a server process at the test's own database."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return {"NOVELGRAPH_SQLITE_PATH": str(db["NAME"]), "DATABASE_URL": ""}
    auth = quote(db["USER"] or "", safe="")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"], safe="")
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or "5432"
    return {"DATABASE_URL": f"postgres://{auth}@{host}:{port}/{db['NAME']}"}


@dataclass
class Server:
    host: str
    port: int
    process: subprocess.Popen
    log: Path
    env: dict = field(default_factory=dict)

    def request(self, method: str, path: str, body=None, headers: dict | None = None, timeout: float = 60):
        """One request on a fresh connection: (status, headers, body bytes)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            # An iterable body goes out chunk-encoded (Transfer-Encoding: chunked, no Content-Length).
            chunked = body is not None and not isinstance(body, bytes | str)
            conn.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def post_json(self, path: str, body: dict, key: str):
        status, _headers, raw = self.request(
            "POST",
            f"/api/v1{path}",
            json.dumps(body).encode(),
            {"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
        )
        return status, (json.loads(raw) if raw.startswith(b"{") else raw)

    def kill(self) -> None:
        """kill -9 the master and every worker at once (the server's own process group)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]


@contextmanager
def gunicorn(
    tmp_path: Path, *, workers: int = 3, threads: int = 1, extra_env: dict | None = None, name: str = "gunicorn"
) -> Iterator[Server]:
    port = _free_port()
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
    log = tmp_path / f"{name}-{port}.log"
    command = [
        sys.executable, "-m", "gunicorn", "novelgraph.wsgi:application",
        "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--timeout", "120",
    ]  # fmt: skip
    if threads > 1:
        command += ["--threads", str(threads)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server("127.0.0.1", port, process, log, env)
    try:
        _wait_until_serving(server)
        yield server
    finally:
        server.stop()


def _wait_until_serving(server: Server) -> None:
    deadline = time.monotonic() + START_DEADLINE
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.process.returncode}:\n{server.logs()}")
        try:
            status, _headers, _body = server.request("GET", "/login/", timeout=5)
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"gunicorn did not serve within {START_DEADLINE} s:\n{server.logs()}")
