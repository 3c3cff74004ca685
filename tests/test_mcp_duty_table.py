"""The duty table: every REST route an agent role may call has its MCP tool, and every tool its route.

The routes are read off the API itself (``novelgraph.api.api``: each router's path operations).
Which routes no agent may call is ONE list, ``novelgraph.core.duties.PERSON_ONLY`` (each entry names
the capability no agent role holds, checked here against ``roles.CAPABILITIES``, or why only a
person does it). Every other write route is an agent's duty and must be a tool's ``route``; a read
route is a tool's or is listed in ``READS_WITHOUT_TOOL`` (so a read without a tool is a visible
choice). A tool whose route the API lacks, and an entry of either list that names no route, fail.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from novelgraph.api import api
from novelgraph.core.duties import PERSON_ONLY, READS_WITHOUT_TOOL, tools, tools_for
from novelgraph.core.roles import AgentRole, Cap, capabilities_of


def operations() -> set[str]:
    found = set()
    for _prefix, router in api._routers:
        for path, view in router.path_operations.items():
            for operation in view.operations:
                found |= {f"{method} {path}" for method in operation.methods}
    return found


def test_every_tool_is_backed_by_a_rest_route_and_mirrors_it():
    routes = operations()
    unbacked = sorted(f"{tool.name}: {tool.route}" for tool in tools() if tool.route not in routes)
    assert unbacked == [], f"tools whose REST route does not exist: {unbacked}"
    for tool in tools():
        assert tool.read_only == (tool.method == "GET"), f"{tool.name}: a read mirrors a GET route, a write the rest"
    assert len({tool.route for tool in tools()}) == len(tools()), "two tools mirror one route"


def test_every_route_an_agent_may_call_has_a_tool():
    routes = operations()
    tooled = {tool.route for tool in tools()}
    missing = sorted(r for r in routes - tooled - set(PERSON_ONLY) - set(READS_WITHOUT_TOOL))
    assert missing == [], f"routes an agent role may call with no tool (add a ToolSpec, or list it): {missing}"
    writes_without_tool = sorted(r for r in READS_WITHOUT_TOOL if not r.startswith("GET "))
    assert writes_without_tool == [], "only reads may wait for a tool"


def test_the_person_only_list_names_real_routes_no_agent_role_may_call():
    routes = operations()
    assert sorted(set(PERSON_ONLY) - routes) == [], "PERSON_ONLY names a route the API does not have"
    assert sorted(set(READS_WITHOUT_TOOL) - routes) == [], "READS_WITHOUT_TOOL names a route the API does not have"
    assert all(why.strip() for why in READS_WITHOUT_TOOL.values()), "each read without a tool says why"
    tooled = {tool.route for tool in tools()}
    assert sorted(set(READS_WITHOUT_TOOL) & tooled) == [], "a listed read has a tool: take it off the list"
    assert sorted(set(PERSON_ONLY) & tooled) == [], "a person's route has a tool"
    for route, why in PERSON_ONLY.items():
        if isinstance(why, Cap):
            holders = [role.value for role in AgentRole if why in capabilities_of(role)]
            assert holders == [], f"{route} needs {why.value}, which {holders} hold: it is their duty, give it a tool"


def test_each_role_is_offered_exactly_the_tools_its_capabilities_meet_and_none_decides():
    for role in AgentRole:
        caps = capabilities_of(role)
        offered = {tool.name for tool in tools_for(role)}
        assert offered == {tool.name for tool in tools() if set(tool.needs) & caps}
        assert not any(Cap.DECIDE in tool.needs for tool in tools())
    # The G2 duties the roster gives Terra and Luna are theirs through MCP.
    lens_duties = {
        "loop_review_record",
        "loop_trace_node_add",
        "loop_trace_edge_add",
        "loop_artifact_write",
        "loop_question_raise",
        "loop_question_resolve",
        "loop_candidate_add",
        "loop_validation_add",
        "loop_validation_status",
        "research_propose",
        "book_search",
        "codex_read",
    }
    for role in (AgentRole.TERRA, AgentRole.LUNA):
        assert lens_duties <= {tool.name for tool in tools_for(role)}, role


# --- The built-in runner writes through declared duties only ------------------------------------------

SERVICE_MODULES = ("discovery.services", "discovery.loop.services", "library.services", "approvals.services")


def _called(fn, depth: int = 2) -> set:
    """The service functions ``fn`` calls (following the private helpers of its module)."""
    found = set()
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
        if not isinstance(node, ast.Call):
            continue
        target = None
        if isinstance(node.func, ast.Name):
            target = fn.__globals__.get(node.func.id)
        elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            target = getattr(fn.__globals__.get(node.func.value.id), node.func.attr, None)
        if not inspect.isfunction(target):
            continue
        if target.__module__.startswith(SERVICE_MODULES):
            found.add(target)
        elif depth and target.__module__ == fn.__module__ and target.__name__.startswith("_"):
            found |= _called(target, depth - 1)
    return found


def test_each_in_app_tasks_apply_step_writes_only_through_a_duty_its_role_declares():
    from discovery.agents.models import TASK_ROLE
    from discovery.agents.services import APPLY

    assert set(APPLY) == set(TASK_ROLE)
    for task, apply in APPLY.items():
        role = TASK_ROLE[task]
        writes = _called(apply)
        assert writes, f"{task}: its apply step calls no service"
        declared = set().union(*(_called(tool.run) for tool in tools_for(role)))
        undeclared = sorted(f"{f.__module__}.{f.__name__}" for f in writes - declared)
        assert undeclared == [], f"{task} ({role}) writes through services no tool of {role} calls: {undeclared}"
