"""A client no one here wrote: the official MCP Inspector's command-line mode (``scripts/mcp_inspector.sh``,
npm ``@modelcontextprotocol/inspector``, pinned there) against the stdio command and the streamable-HTTP
server, as a user would point it at them. For each role it lists the tools (exactly the role's), calls a
read (the book's search) and a propose (an open question raised in the loop), and the row is checked.

Runtime: about a minute and a half, most of it the stdio command starting Django once per Inspector call.
Skipped without node (CI=true makes it fail instead), and the first run installs the Inspector.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import SyncToAsync
from django.conf import settings
from django.db import connections

from discovery import services
from discovery.access import book_access
from discovery.loop.models import OpenQuestion
from novelgraph.core.auth import principal_for_user
from novelgraph.core.duties import tools_for
from novelgraph.core.services import api_key_create

from .factories import BookFactory, TurnFactory, UserFactory
from .mcp_support import ROOT, LiveServer, database_env

SCRIPT = ROOT / "scripts" / "mcp_inspector.sh"
ROLES = ("luna", "terra", "sol")

pytestmark = pytest.mark.skipif(
    not shutil.which("node") and os.environ.get("CI") != "true", reason="the MCP Inspector needs node"
)


def inspector(target: list[str], *args: str, env: dict | None = None) -> dict:
    done = subprocess.run(
        [str(SCRIPT), *target, *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def live_url(django_db_setup):
    subprocess.run([str(SCRIPT), "--install-only"], check=True, timeout=600)
    server = LiveServer(fresh=True)
    try:
        yield f"{server.url}/mcp"
    finally:
        server.stop()
        SyncToAsync.single_thread_executor.submit(connections.close_all).result()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_inspector_lists_each_roles_tools_and_calls_a_read_and_a_propose(transactional_db, live_url, transport):
    author = UserFactory(username="ada")
    book = BookFactory(owner=author, title="The Tide Clock")
    session, _ = services.discovery_start(access=book_access(principal_for_user(author), book))
    TurnFactory(session=session, ordinal=1, content="The keeper lies about the lamp.")
    keys = {role: api_key_create(owner=author, role=role)[1] for role in ROLES}

    def as_role(role: str) -> dict:
        key = keys[role]
        if transport == "stdio":
            target = [sys.executable, "manage.py", "mcp", "--key-env", "NOVELGRAPH_API_KEY"]
            env = {
                **database_env(),
                "NOVELGRAPH_VAR_DIR": str(settings.VAR_DIR),
                "NOVELGRAPH_SEAL_KEY": settings.DECISION_LOG_SEAL_KEY,
                "NOVELGRAPH_API_KEY": key,
            }
        else:
            target = [live_url, "--transport", "http", "--header", f"Authorization: Bearer {key}"]
            env = {}

        listed = inspector(target, "--method", "tools/list", env=env)["tools"]
        assert {t["name"] for t in listed} == {t.name for t in tools_for(role)}, role
        assert all("outputSchema" in t and "annotations" in t for t in listed)

        found = inspector(
            target,
            *("--method", "tools/call", "--tool-name", "book_search"),
            *("--tool-arg", f"book_id={book.pk}", "--tool-arg", "q=lamp"),
            env=env,
        )
        assert not found.get("isError"), found
        assert [hit["kind"] for hit in found["structuredContent"]["results"]] == ["turn"], role

        raised = inspector(
            target,
            *("--method", "tools/call", "--tool-name", "loop_question_raise"),
            *("--tool-arg", f"book_id={book.pk}", "--tool-arg", f"question={role}: who saw the boat?"),
            *("--tool-arg", "target_discipline=sol"),
            env=env,
        )
        assert not raised.get("isError"), raised
        return raised["structuredContent"]

    # The roles' clients run side by side (each Inspector call over stdio starts the command afresh).
    with ThreadPoolExecutor(len(ROLES)) as pool:
        raised = dict(zip(ROLES, pool.map(as_role, ROLES), strict=True))
    for role, body in raised.items():
        asked = OpenQuestion.objects.get(pk=body["id"])
        assert (asked.raised_by, asked.question, asked.status) == (role, f"{role}: who saw the boat?", "open")
