"""The architecture holds: the floors stand in their order, no import runs in a circle, no concept is defined twice.

These walk the source itself (every ``import`` statement, including those inside functions), so an import that
climbs a floor, a new cycle or a second definition fails here, where the next engineer will see it.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("novelgraph", "discovery", "library", "approvals")

# The floors, bottom to top. A module stands on the floor whose entry names it most closely (the longest
# prefix); it may import its own floor and those below, never one above, not even inside a function. Where a
# lower floor must reach up, the upper app registers a hook in its ``AppConfig.ready()`` (subject handlers, the
# canon registry, discovery's events, the decision page's panels).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("the kernel", ("novelgraph.core",)),
    (
        "discovery's ground",
        (
            "discovery.models",
            "discovery.access",
            "discovery.access_rows",
            "discovery.story_rules",
            "discovery.selectors",
        ),
    ),
    ("approvals", ("approvals",)),
    ("the library", ("library",)),
    ("discovery's features", ("discovery",)),
    ("the loop", ("discovery.loop",)),
    ("the agents", ("discovery.agents",)),
    ("the roof", ("novelgraph",)),
]


def _is_entry_point(name: str) -> bool:
    """Management commands and migrations are run from outside, like the roof: they may import any floor, and
    import inside their functions (a migration's operations run against its historical state)."""
    return ".management." in f"{name}." or ".migrations." in f"{name}."


def _floor(name: str) -> int:
    best, floor = -1, None
    for number, (_label, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, floor = len(prefix), number
    assert floor is not None, f"{name} stands on no floor of LAYERS"
    return floor


def _modules(*, entry_points: bool = False) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            if _is_entry_point(name) and not entry_points:
                continue
            found[name] = path
    return found


def _import_sites(name: str, path: Path, known: set[str]) -> list[tuple[str, int, str | None]]:
    """Each project module that ``name`` imports (absolute or relative, at any depth of the file), with the line
    and the function the import sits in (None at module level)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    enclosing: dict[ast.AST, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if inner is not node and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    enclosing.setdefault(inner, node.name)
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            candidates = [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]
        else:
            continue
        for candidate in candidates:
            # the deepest project module the import names (``from .services import x`` is the package)
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name and (candidate, node.lineno, enclosing.get(node)) not in sites:
                sites.append((candidate, node.lineno, enclosing.get(node)))
    return sites


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    return {target for target, _line, _function in _import_sites(name, path, known)}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_no_module_imports_in_a_circle():
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, path, known) for name, path in modules.items()}
    # A package's __init__ that re-exports its submodules is not a cycle with them.
    for name in list(graph):
        graph[name] = {t for t in graph[name] if not (name.startswith(t + ".") and modules[t].name == "__init__.py")}
    assert _cycles(graph) == []


def climbing_imports(modules: dict[str, Path]) -> list[str]:
    """Every import, at any depth of its file, from a floor of ``LAYERS`` to a higher one."""
    known = set(modules)
    found = []
    for name, path in sorted(modules.items()):
        for target, line, _function in _import_sites(name, path, known):
            if not _is_entry_point(target) and _floor(target) > _floor(name):
                found.append(
                    f"{name}:{line} ({LAYERS[_floor(name)][0]}) imports {target} ({LAYERS[_floor(target)][0]})"
                )
    return found


def test_no_floor_imports_a_floor_above_it():
    assert climbing_imports(_modules()) == []


def test_the_roof_imports_no_app():
    """The roof (settings, URLs, the API mount, the MCP server) names the apps by dotted path only: the
    routers and URL confs are mounted by name, and the MCP server reads the kernel's registry of duties that
    each app fills from its ``ready()``. So no arrow runs from the roof down into an app's modules, and the
    kernel, which shares its package, stays the ground floor of the house."""
    modules = _modules(entry_points=True)
    known = set(modules)
    found = [
        f"{name}:{line} imports {target}"
        for name, path in modules.items()
        if name.startswith("novelgraph.") and not name.startswith("novelgraph.core")
        for target, line, _function in _import_sites(name, path, known)
        if not target.startswith("novelgraph")
    ]
    assert found == [], found


def test_the_floors_do_not_import_each_other_in_a_circle():
    """At the floors' scale: whatever the modules, no floor reaches back to one below that imports it."""
    modules = _modules()
    known = set(modules)
    edges = {(_floor(name), _floor(target)) for name, path in modules.items() for target in _imports(name, path, known)}
    assert sorted((LAYERS[a][0], LAYERS[b][0]) for a, b in edges if a < b) == []


def function_level_imports(modules: dict[str, Path]) -> list[str]:
    """Project imports inside a function, outside ``AppConfig.ready()`` (commands and migrations are left out of
    ``modules``): an import hidden in a function is how a cycle or a climb hides from the floors."""
    known = set(modules) | set(_modules(entry_points=True))
    found = []
    for name, path in sorted(modules.items()):
        for target, line, function in _import_sites(name, path, known):
            if function is not None and not (function == "ready" and name.endswith(".apps")):
                found.append(f"{name}:{line} imports {target} inside {function}()")
    return found


def test_no_project_import_sits_inside_a_function():
    assert function_level_imports(_modules()) == []


# The chain that closed a circle of packages before the floors were written down, each link as it was written
# (two of them inside functions, where a module-level check did not look).
EARLIER_CHAIN = [
    (
        "discovery.services.charters",
        "def charter_propose():\n    from discovery.loop.services import charter_reopen_card",
    ),
    ("discovery.loop.services", "from discovery.loop.selectors import loop_state"),
    ("discovery.loop.selectors", "from approvals.selectors import decision_log_for"),
    ("approvals.selectors", "def approval_view():\n    from discovery.refs import resolve_source_refs"),
    ("discovery.refs", "from discovery.schemas import REF_TYPES"),
    ("discovery.schemas", "def resolve_content():\n    from discovery.services import dossier_capped"),
]


def test_the_earlier_chain_climbs_and_hides_in_functions(tmp_path):
    modules = {}
    for number, (name, source) in enumerate(EARLIER_CHAIN):
        modules[name] = tmp_path / f"m{number}.py"
        modules[name].write_text(source)
    modules["discovery.services"] = tmp_path / "services.py"  # the package the chain comes back to
    modules["discovery.services"].write_text("")
    climbs = climbing_imports(modules)
    assert climbs == [
        "approvals.selectors:2 (approvals) imports discovery.refs (discovery's features)",
        "discovery.services.charters:2 (discovery's features) imports discovery.loop.services (the loop)",
    ]
    assert function_level_imports(modules) == [
        "approvals.selectors:2 imports discovery.refs inside approval_view()",
        "discovery.schemas:2 imports discovery.services inside resolve_content()",
        "discovery.services.charters:2 imports discovery.loop.services inside charter_propose()",
    ]


def test_no_enumeration_or_constant_is_defined_twice():
    """Every choices enumeration, and every module-level constant, has one home."""
    enumerations: dict[tuple, list[str]] = defaultdict(list)
    constants: dict[tuple, list[str]] = defaultdict(list)
    for name, path in _modules().items():
        module = importlib.import_module(name)
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                obj = getattr(module, node.name, None)
                if inspect.isclass(obj) and issubclass(obj, enum.Enum) and obj.__module__ == name:
                    values = tuple(sorted(str(m.value) for m in obj))
                    enumerations[values].append(f"{name}.{node.name}")
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id.isupper() and len(target.id) > 1:
                        value = getattr(module, target.id, None)
                        if isinstance(value, str | int | float | tuple | frozenset) and not isinstance(value, bool):
                            constants[(target.id, repr(value))].append(name)
    twice = {values: where for values, where in enumerations.items() if len(where) > 1}
    assert twice == {}, f"enumerations with the same values: {twice}"
    again = {key: where for key, where in constants.items() if len(where) > 1}
    assert again == {}, f"constants defined in more than one module: {again}"


SERVICE_MODULES = ("discovery.loop.services", "discovery.services", "approvals.services", "library.services")


def _is_choices(node: ast.AST) -> bool:
    """``SomeChoices.values``: an enumeration's values, checked by hand."""
    return isinstance(node, ast.Attribute) and node.attr == "values" and isinstance(node.value, ast.Name)


def _is_len_against_a_literal(node: ast.Compare) -> bool:
    """``len(value) > 5000``: a limit written by hand (an equality is not a limit)."""
    if not all(isinstance(op, ast.Gt | ast.GtE | ast.Lt | ast.LtE) for op in node.ops):
        return False
    sides = [node.left, *node.comparators]
    measured = any(isinstance(s, ast.Call) and isinstance(s.func, ast.Name) and s.func.id == "len" for s in sides)
    literal = any(isinstance(s, ast.Constant) and isinstance(s.value, int) and s.value > 1 for s in sides)
    return measured and literal


def _is_range_against_literals(node: ast.Compare) -> bool:
    """``value < 1``, ``0 < value <= 1``, ``low <= value <= high``: a range written by hand, where the model field's
    validators declare it once (a sign check against 0 is not a range; lengths are the rule above)."""
    if not all(isinstance(op, ast.Gt | ast.GtE | ast.Lt | ast.LtE) for op in node.ops):
        return False
    sides = [node.left, *node.comparators]
    if any(isinstance(s, ast.Call) and isinstance(s.func, ast.Name) and s.func.id == "len" for s in sides):
        return False
    numbers = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, int | float)]
    return len(node.ops) > 1 or any(s.value != 0 and not isinstance(s.value, bool) for s in numbers)


def _input_checks(name: str, source: str) -> list[str]:
    """What a service module validates by hand that the input schemas validate (see the test below)."""
    found = []
    loop_service = name.startswith("discovery.loop.services")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and (
            node.name in {"check_text", "text", "_text"} or node.name.endswith("_or_422")
        ):
            found.append(f"{name}:{node.lineno} defines {node.name}()")
        elif isinstance(node, ast.Compare) and _is_len_against_a_literal(node):
            found.append(f"{name}:{node.lineno} checks a length against a literal")
        elif isinstance(node, ast.Compare) and any(_is_choices(c) for c in node.comparators):
            found.append(f"{name}:{node.lineno} checks a value against {ast.unparse(node.comparators[0])}")
        elif isinstance(node, ast.Compare) and _is_range_against_literals(node):
            found.append(f"{name}:{node.lineno} checks a range by hand: {ast.unparse(node)}")
        elif loop_service and isinstance(node, ast.Call) and ast.unparse(node.func) == "re.compile":
            found.append(f"{name}:{node.lineno} compiles an input format (the schemas hold them)")
    return found


def test_no_service_validates_input_text_itself():
    """Input is validated once, by the input schemas (limits, ranges and choices from the models): a service
    takes the validated schema, so no service defines its own text or length validator, checks a value against
    an enumeration's choices by hand (``Verdict.values``), or a number against a range written in literals
    (issue 14)."""
    found = []
    for name, path in _modules().items():
        if name.startswith(SERVICE_MODULES):
            found += _input_checks(name, path.read_text())
    assert found == []


# Hand checks that were in the services before their ranges and choices moved to the models and schemas.
EARLIER_HAND_CHECKS = {
    "approvals.services": [
        "if decision not in Verdict.values:\n    raise Invalid('unknown decision', field='decision')",
        "if reversibility_class not in Reversibility.values:\n    raise Invalid('bad', field='reversibility_class')",
    ],
    "discovery.services.scratchpad": ["if access.role not in AgentRole.values:\n    raise refusal()"],
    "discovery.loop.services.bounds": [
        "if key == 'concentration' and not (0 < value <= 1):\n    raise Invalid('concentration must be in (0, 1]')",
        "if key in {'round_cap', 'max_depth'} and value < 1:\n    raise Invalid(f'{key} must be at least 1')",
    ],
    "discovery.loop.services.transfer": [
        "if isinstance(value, bool) or not (low <= value <= high):\n    self.fail(name, 'must be a number')",
    ],
}


@pytest.mark.parametrize(
    ("name", "source"), [(name, source) for name, sources in EARLIER_HAND_CHECKS.items() for source in sources]
)
def test_a_hand_check_of_choices_or_a_range_in_a_service_fails_the_rule(name, source):
    assert name.startswith(SERVICE_MODULES)
    assert len(_input_checks(name, source)) == 1, source


def test_a_sign_check_or_a_count_is_not_a_range():
    assert _input_checks("discovery.loop.services.bounds", "if amount <= 0:\n    return meta") == []
    assert _input_checks("discovery.loop.services.gates", "if len(slugs) > 1:\n    pass") == []


def test_no_form_writes_its_own_text_limit():
    """A form's ``maxlength`` comes from the input schema that validates it (``{% input_limit %}``), which takes it
    from the model: no template writes a number, so the browser's limit cannot drift from the server's."""
    import re

    written = []
    for path in sorted(ROOT.glob("*/**/templates/**/*.html")):
        if ".venv" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r'maxlength="\d', line):
                written.append(f"{path.relative_to(ROOT)}:{number}")
    assert written == []


def test_a_forms_limit_is_the_schemas_and_the_columns():
    from approvals.models import Approval
    from discovery.models import ThrustCandidate, Turn
    from novelgraph.core.templatetags.limits import schema_limit

    assert schema_limit("discovery.schemas.TurnIn", "content") == Turn._meta.get_field("content").max_length
    assert schema_limit("approvals.schemas.VerdictIn", "rationale") == Approval._meta.get_field("rationale").max_length
    # A dict of texts (thrust id -> why not): one box per value, each the reason's column.
    assert schema_limit("approvals.schemas.VerdictIn", "not_chosen") == (
        ThrustCandidate._meta.get_field("not_chosen_reason").max_length
    )
    with pytest.raises(ValueError, match="declares no text limit"):
        schema_limit("discovery.schemas.CharterIn", "reader_promise")
