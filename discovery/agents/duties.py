"""The built-in runner's duty for agents through MCP: Sol (discovery:write) may hand a task to the
built-in Sol, Terra or Luna, as ``POST /books/{book_id}/agent-runs`` does. Registered from
``AgentsConfig.ready()`` into the kernel's registry (``novelgraph.core.duties``)."""

from __future__ import annotations

from discovery.access import Cap, book_access
from novelgraph.core.auth import Principal
from novelgraph.core.duties import ToolSpec, register_tools

from .schemas import AgentRunIn, AgentRunOut
from .services import agent_run_start, continuity_check_queue


def agent_run_queue(principal: Principal, args, payload: AgentRunIn):
    return agent_run_start(access=book_access(principal, args.book_id), payload=payload)


def chapter_check(principal: Principal, args, _payload):
    return continuity_check_queue(access=book_access(principal, args.book_id), number=args.number)


TOOLS = (
    ToolSpec(
        name="chapter_check",
        route="POST /books/{book_id}/chapters/{number}/check",
        description="Queue Luna's continuity check of the chapter's latest revision against canon in time; its "
        "findings are listed by continuity_findings_read. It settles nothing.",
        needs=(Cap.DISCOVERY_WRITE,),
        run=chapter_check,
        out=AgentRunOut,
        path=("book_id", "number"),
    ),
    ToolSpec(
        name="agent_run_queue",
        route="POST /books/{book_id}/agent-runs",
        description="Queue one task of a built-in agent role for the book (next-question: Sol; guidance, "
        "contradictions: Luna; thrusts, charter: Terra); a worker runs it and writes only proposals.",
        needs=(Cap.DISCOVERY_WRITE,),
        run=agent_run_queue,
        out=AgentRunOut,
        payload=AgentRunIn,
        path=("book_id",),
    ),
)


def register() -> None:
    register_tools(*TOOLS)
