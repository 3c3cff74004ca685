"""The architecture holds: no import cycles between the project's modules, and no concept defined twice.

These walk the source itself (every ``import`` statement, including those inside functions), so a
new cycle or a second definition fails here, where the next engineer will see it.
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


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts or "management" in parts:
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules that ``name`` imports (absolute or relative, at any depth of the file)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
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
            if candidate and candidate != name:
                targets.add(candidate)
    return targets


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


def test_the_auth_layer_sits_below_the_apps():
    """``novelgraph`` modules the apps build on import no app (the API mounts routers from above)."""
    modules = _modules()
    known = set(modules)
    below = ["novelgraph.core.auth", "novelgraph.core.db", "novelgraph.core.errors", "novelgraph.core.models", "novelgraph.core.roles",
             "novelgraph.core.schemas", "novelgraph.core.services", "novelgraph.core.pagination"]  # fmt: skip
    for name in below:
        apps = {t for t in _imports(name, modules[name], known) if not t.startswith("novelgraph")}
        assert apps == set(), f"{name} imports {apps}"


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
