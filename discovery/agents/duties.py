"""The built-in runner's duty for agents through MCP: Sol (discovery:write) may hand a task to the
built-in Sol, Terra or Luna, as ``POST /books/{book_id}/agent-runs`` does. Registered from
``AgentsConfig.ready()`` into the kernel's registry (``novelgraph.core.duties``)."""

from __future__ import annotations

from discovery.access import Cap, book_access
from novelgraph.core.auth import Principal
from novelgraph.core.duties import ToolSpec, read_tool, register_tools

from .schemas import AgentRunIn, AgentRunOut, ResearchCollectIn, RunOutputOut
from .selectors import agent_run_get, run_outputs, run_readable, runs_for
from .services import agent_run_start, continuity_check_queue, research_collect_queue


def agent_run_queue(principal: Principal, args, payload: AgentRunIn):
    return agent_run_start(access=book_access(principal, args.book_id), payload=payload)


def chapter_check(principal: Principal, args, _payload):
    return continuity_check_queue(access=book_access(principal, args.book_id), number=args.number)


def research_collect(principal: Principal, args, payload: ResearchCollectIn):
    return research_collect_queue(access=book_access(principal, args.book_id), payload=payload)


TOOLS = (
    ToolSpec(
        name="research_collect",
        route="POST /books/{book_id}/research/collect",
        description="Ask the built-in Luna to collect a web page as research: her run fetches it through the "
        "research address guards and proposes it for the author's admission, or fails with the reason it was "
        "refused. It admits nothing.",
        needs=(Cap.DISCOVERY_WRITE,),
        run=research_collect,
        out=AgentRunOut,
        payload=ResearchCollectIn,
        path=("book_id",),
    ),
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


def _run(principal: Principal, args):
    run = agent_run_get(args.run_id)
    return run_readable(book_access(principal, run.book, missing="run"), run)


READS = (
    read_tool(
        "agent_runs",
        "GET /books/{book_id}/agent-runs",
        "The book's built-in agent runs, newest first: status, provider and model, the dossier, what each wrote.",
        lambda p, a, _q: runs_for(book_access(p, a.book_id)),
        AgentRunOut,
        ("book_id",),
        many=True,
    ),
    read_tool(
        "agent_run_read",
        "GET /agent-runs/{run_id}",
        "One built-in agent run.",
        lambda p, a, _q: _run(p, a),
        AgentRunOut,
        ("run_id",),
    ),
    read_tool(
        "agent_run_written",
        "GET /agent-runs/{run_id}/written",
        "Everything a built-in agent run wrote, in order, paged.",
        lambda p, a, _q: run_outputs(_run(p, a)),
        RunOutputOut,
        ("run_id",),
        many=True,
    ),
)


def register() -> None:
    register_tools(*TOOLS, *READS)
