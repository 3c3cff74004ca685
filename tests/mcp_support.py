"""Driving NovelGraph's MCP server with the SDK's own client, in-process and over its transports.

- ``mcp(key, fn)``: an SDK ``Client`` connected in-process to the server as ``key``. The server's
  database work runs on the test's thread (``async_to_sync`` hands ``sync_to_async`` back to it),
  so it sees the test's transaction: plain ``db`` tests, rolled back.
- ``ClientThread``: one SDK client kept open in a background event loop for a module (a stdio
  subprocess, or an HTTP connection to a live server), called from synchronous tests.
- ``LiveServer``: uvicorn serving ``novelgraph.asgi.application`` on an ephemeral port of 127.0.0.1,
  in a thread of the test process (so it uses the test database).
- ``the scene``: a book in mid-discovery with one of everything the tools name, built through the
  services.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import uvicorn
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import connection
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client as mcp_stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from discovery import services
from discovery.access import book_access
from discovery.loop import services as loop
from discovery.loop.models import LensRerun, PlanNode
from discovery.loop.schemas import CandidateIn, QuestionIn, TraceEdgeIn, TraceNodeIn, ValidationItemIn
from discovery.models import Chapter, ChapterRevision, CodexEntry, KnowledgeBase
from discovery.schemas import HandoffIn
from novelgraph.core.auth import principal_for_key, principal_for_user
from novelgraph.core.services import api_key_create
from novelgraph.mcp.server import build_server, key_source

from .factories import BookFactory, KnowledgeClaimFactory, TurnFactory

ROOT = Path(__file__).resolve().parent.parent


# --- In-process --------------------------------------------------------------------------------


def mcp(key: str | None, fn: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run ``fn(client)`` with an SDK client connected in-process as ``key``; an MCP error is raised
    as itself (not inside the client's task group)."""

    async def go():
        async with Client(build_server(key_source(key))) as client:
            try:
                return await fn(client)
            except MCPError as exc:
                return exc

    result = async_to_sync(go)()
    if isinstance(result, MCPError):
        raise result
    return result


def tool_names(key: str) -> set[str]:
    return {tool.name for tool in mcp(key, lambda c: c.list_tools()).tools}


def call(key: str, tool: str, arguments: dict) -> CallToolResult:
    return mcp(key, lambda c: c.call_tool(tool, arguments))


def outcome(result: CallToolResult) -> tuple[Any, dict]:
    """``("ok", body)`` for a result, ``(status, error body)`` for a tool error."""
    body = result.structured_content
    return (body["status"], body) if result.is_error else ("ok", body)


# --- A client kept open for a module ------------------------------------------------------------


class ClientThread:
    """One SDK client, entered and left in its own event loop thread; ``run`` calls into it.

    Connecting starts at once (several can connect side by side); ``connected()`` waits for it."""

    def __init__(self, make_client: Callable[[], AbstractAsyncContextManager]):
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.client: Any = None
        self._stop: asyncio.Event | None = None
        self._make_client = make_client
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)
        self.thread.start()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with self._make_client() as client:
                self.client = client
                self.ready.set()
                await self._stop.wait()
        except BaseException as exc:  # reported to whoever waits for the connection
            self.error = exc
            self.ready.set()

    def connected(self) -> ClientThread:
        if not self.ready.wait(180):
            raise TimeoutError("the MCP client did not connect")
        if self.error is not None:
            raise self.error
        return self

    def run(self, fn: Callable[[Any], Awaitable[Any]], timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(fn(self.connected().client), self.loop).result(timeout)

    def close(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(60)
        if not self.thread.is_alive():
            self.loop.close()


# --- Transports ---------------------------------------------------------------------------------


def database_env() -> dict[str, str]:
    """Environment that points a child process at the test database this process uses."""
    name = str(connection.settings_dict["NAME"])
    if connection.vendor == "sqlite":
        return {"NOVELGRAPH_SQLITE_PATH": name, "DATABASE_URL": ""}
    parts = urlsplit(os.environ["DATABASE_URL"])
    return {"DATABASE_URL": urlunsplit(parts._replace(path=f"/{name}"))}


def stdio_parameters(key: str | None) -> StdioServerParameters:
    """``python manage.py mcp --key-env NOVELGRAPH_API_KEY``, as a client configuration starts it."""
    env = {
        **database_env(),
        "NOVELGRAPH_VAR_DIR": str(settings.VAR_DIR),
        "NOVELGRAPH_SEAL_KEY": settings.DECISION_LOG_SEAL_KEY,
        "NOVELGRAPH_API_KEY": key or "",
    }
    return StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", "--key-env", "NOVELGRAPH_API_KEY"], env=env, cwd=str(ROOT)
    )


def stdio_client(key: str | None, errlog=None) -> Client:
    """An SDK client that starts the stdio command (its standard error to ``errlog``, a file)."""
    transport = mcp_stdio_client(stdio_parameters(key), errlog=errlog or sys.stderr)
    return Client(transport, read_timeout_seconds=120)


class _HttpClient:
    """An SDK client over streamable HTTP that sends ``Authorization: Bearer <key>``."""

    def __init__(self, url: str, key: str | None):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.http = create_mcp_http_client(headers=headers)
        self.client = Client(streamable_http_client(url, http_client=self.http), read_timeout_seconds=120)

    async def __aenter__(self) -> Client:
        await self.http.__aenter__()
        try:
            return await self.client.__aenter__()
        except BaseException:
            await self.http.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc) -> None:
        try:
            await self.client.__aexit__(*exc)
        finally:
            await self.http.__aexit__(None, None, None)


def http_client(url: str, key: str | None) -> _HttpClient:
    return _HttpClient(url, key)


class LiveServer:
    """uvicorn serving the ASGI application (Django and /mcp) on a free port of 127.0.0.1."""

    def __init__(self, fresh: bool = False):
        from novelgraph.asgi import application, django_application
        from novelgraph.mcp.http import mcp_http_app, with_mcp

        if fresh:  # the SDK's session manager runs once per app: a second server in one process needs its own
            application = with_mcp(django_application, mcp_http_app())
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(application, lifespan="on", log_level="warning", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        for _ in range(600):
            if self.server.started:
                break
            self.thread.join(0.1)
        else:
            raise TimeoutError("the live server did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


# --- The scene ------------------------------------------------------------------------------------


def build_mcp_scene(author, book, reruns: bool = False) -> dict:
    """``book`` in mid-discovery, with one of everything a tool names; its ids by argument name.
    ``reruns``: a re-run queued for each role's lens (they hold the next gate, so only on demand)."""
    as_author = book_access(principal_for_user(author), book)
    session, _ = services.discovery_start(access=as_author)
    turn = TurnFactory(session=session, ordinal=1)
    handoff = services.handoff_create(
        access=as_author, payload=HandoffIn(to_role="luna", decision="Which places recur in the author's turns?")
    )
    claim = KnowledgeClaimFactory(base=KnowledgeBase.objects.get(scope="book", owner_id=str(book.pk)))
    sol = book_access(principal_for_key(api_key_create(owner=author, role="sol")[1]), book)
    root = PlanNode.objects.get(book=book, is_root=True)
    candidate = loop.candidate_add(
        access=sol,
        node_id=root.pk,
        payload=CandidateIn(altitude="book", mechanic="m", shape="s", riskiest_assumption="r"),
    )
    question = loop.question_raise(
        access=sol, payload=QuestionIn(question="Who lit the lamp?", target_discipline="sol")
    )
    # Each lens's own material, so each role acts on its own (a question to answer, trace nodes it
    # produced, an edge it drew, a validation item, a re-run queued for its lens).
    per_role = {}
    lens_of = {"luna": "reader-trust", "terra": "canon-integrity", "sol": "discovery-lead"}
    for role in ("luna", "terra", "sol"):
        access = (
            sol if role == "sol" else book_access(principal_for_key(api_key_create(owner=author, role=role)[1]), book)
        )
        asked = loop.question_raise(
            access=access, payload=QuestionIn(question=f"{role}: whose alibi holds?", target_discipline="sol")
        )
        for node_id in (f"t-{role}", f"w-{role}"):
            loop.trace_node_add(access=access, payload=TraceNodeIn(node_id=node_id, kind="scene", produced_by=role))
        loop.trace_edge_add(access=access, payload=TraceEdgeIn(from_id=f"t-{role}", to_id="premise-w"))
        item = loop.validation_item_add(
            access=access,
            payload=ValidationItemIn(assumption=f"{role}: readers guess late", kill_condition="k", activity="a"),
        )
        per_role |= {f"question_{role}": str(asked.pk), f"item_{role}": str(item.pk)}
        if reruns:
            rerun = LensRerun.objects.create(book=book, lens=lens_of[role], artifacts=[], reason="a cascade")
            per_role[f"rerun_{role}"] = str(rerun.pk)
    # The manuscript (issue 28): chapter 1 with one revision and an entry.
    chapter = Chapter.objects.create(book=book, number=1, title="The Bell")
    ChapterRevision.objects.create(chapter=chapter, number=1, text="Mara rang the bell.", words=4, created_by="author")
    CodexEntry.objects.create(book=book, name="Mara", kind="person")
    return {
        **per_role,
        "number": 1,
        "book_id": str(book.pk),
        "series_id": str(book.series_id),
        "session_id": str(session.pk),
        "turn_id": str(turn.pk),
        "handoff_id": str(handoff.pk),
        "claim_id": str(claim.pk),
        "node_id": str(root.pk),
        "candidate_id": str(candidate.pk),
        "question_id": str(question.pk),
    }


def agent_keys(author, book) -> dict[str, str]:
    """Keys by caller: Luna, Terra and Sol of the author; a Sol key limited to another of her books;
    the Sol key of another author (to whom the book is foreign)."""
    elsewhere = BookFactory(owner=author, title="Another book of hers")
    outsider = BookFactory(title="Someone else's book").owner
    return {
        "foreign": api_key_create(owner=outsider, role="sol")[1],
        "scoped": api_key_create(owner=author, role="sol", books=[elsewhere])[1],
        "luna": api_key_create(owner=author, role="luna")[1],
        "terra": api_key_create(owner=author, role="terra")[1],
        "sol": api_key_create(owner=author, role="sol")[1],
    }
