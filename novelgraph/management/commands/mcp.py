"""``python manage.py mcp --key-env NOVELGRAPH_API_KEY``: the MCP server over stdio, for one agent key.

The key is read from an environment variable (never from the command line, where any process
could read it) and checked at start: an unknown, revoked or personal key stops the command with a
message. It is checked again on every request, so a key revoked while the client runs is refused
from its next request on. Standard output carries the protocol only; notes go to standard error.
"""

from __future__ import annotations

import os

import anyio
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from novelgraph.core.errors import DomainError
from novelgraph.mcp.server import agent_principal, build_server, key_source


async def serve(server: Server) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class Command(BaseCommand):
    help = "Serve NovelGraph's MCP server over stdio as the agent role of the key in an environment variable."
    requires_system_checks = []  # standard output belongs to the protocol

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--key-env",
            default="NOVELGRAPH_API_KEY",
            help="the environment variable holding a sol, terra or luna key (default: NOVELGRAPH_API_KEY)",
        )

    def handle(self, *args, key_env: str, **options) -> None:
        raw_key = os.environ.get(key_env, "").strip()
        if not raw_key:
            raise CommandError(
                f"{key_env} is not set: put an agent key in it "
                "(python manage.py create_api_key --username NAME --role luna)"
            )
        try:
            principal = agent_principal(raw_key)
        except DomainError as exc:
            raise CommandError(f"{key_env}: {exc.message}") from None
        self.stderr.write(
            f"NovelGraph MCP server on stdio: {principal.key_role}, for {principal.user.get_username()}'s books"
        )
        connections.close_all()  # requests run in the executor thread, with their own connection
        anyio.run(serve, build_server(key_source(raw_key)))
