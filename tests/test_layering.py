"""The import graph agrees with docs/architecture.md: no cycles, and no layer imports one above it.

Read from the source with ``ast`` (nothing is imported), so a lazy import inside a function
counts for the layer order too; only imports under ``if TYPE_CHECKING:`` are left out, since
they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytorch_perflint

PACKAGE = Path(pytorch_perflint.__file__).parent
NAME = "pytorch_perflint"

# Lowest first. A module may import its own layer and those below it, never one above.
LAYERS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("base", ("types", "comments", "testfiles", "tree_files", "pyparse", "analysis")),
    ("file", ("context", "finding")),
    ("contract", ("rule",)),
    ("project", ("project",)),
    ("facts", ("facts",)),
    ("families", ("rules",)),
)
# The project index reads the project's files as a run does: it may use the settings and
# file discovery (and what they use), which sit above the layers.
LAYER_USES = {"project": {"config", "discovery"}}
# Families a family may use, besides itself: none. What one family's rules ask of another's
# code (does this file train? which loops train?) is a fact in ``facts/``, which every family
# may ask.
FAMILY_USES: Dict[str, Set[str]] = {}
# Above the families only these may import a family: they discover rules, never name one.
FAMILY_IMPORTERS = {"registry"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, module: str) -> List[Tuple[str, bool]]:
    """(imported module, imported at module level) for each import of the package itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: List[Tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child, top)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, top) for alias in node.names if alias.name.split(".")[0] == NAME)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == NAME:
                # ``from . import rules``: the names may be modules themselves.
                for alias in node.names:
                    candidate = f"{target}.{alias.name}"
                    found.append((candidate if _exists(candidate) else target, top))
        inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, True)
    return found


def _exists(module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").exists() or (PACKAGE / relative / "__init__.py").exists()


def _graph() -> Dict[str, List[Tuple[str, bool]]]:
    return {_module_name(p): _imports(p, _module_name(p)) for p in sorted(PACKAGE.rglob("*.py"))}


GRAPH = _graph()


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(module: str) -> int:
    top = _top(module)
    for rank, (_, tops) in enumerate(LAYERS):
        if top in tops:
            return rank
    return len(LAYERS)  # engine, fixer, runner, cli, output...: above every layer named


def _family(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "rules" else ""


def test_the_graph_is_read():
    assert ("pytorch_perflint.context", True) in GRAPH["pytorch_perflint.rule"]
    assert len(GRAPH) > 100


def test_no_module_imports_a_layer_above_it():
    upward = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target, _ in targets
        if _layer(target) > _layer(module) and _layer(target) < len(LAYERS)
    ]
    # The layers below the families must not reach the rest of the tool either.
    upward += [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target, _ in targets
        if _layer(module) < len(LAYERS) and _layer(target) == len(LAYERS) and _top(target)
        and _top(target) not in LAYER_USES.get(_top(module), ())
    ]
    assert upward == []


def test_only_the_registry_imports_a_rule_family():
    outside = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target, _ in targets
        if _family(target) and _layer(module) == len(LAYERS) and _top(module) not in FAMILY_IMPORTERS
    ]
    assert outside == []


def test_families_use_only_the_families_they_declare():
    crossing = {
        (_family(module), _family(target))
        for module, targets in GRAPH.items()
        for target, _ in targets
        if _family(module) and _family(target) and _family(module) != _family(target)
    }
    allowed = {(family, other) for family, others in FAMILY_USES.items() for other in others}
    assert crossing <= allowed, crossing - allowed


def test_a_rule_family_holds_only_rules():
    """``rules/<family>/`` holds one module per rule and nothing else: what a rule asks (loops,
    loaders, layers, values) lives in ``facts/`` and ``project/``, so a rule's file is what it
    flags on top of those questions."""
    others = [
        _module_name(p)
        for p in (PACKAGE / "rules").rglob("*.py")
        if p.parent != PACKAGE / "rules" and p.name != "__init__.py" and not p.name.startswith("tpf")
    ]
    assert others == []


def test_no_import_cycles():
    """Lazy imports inside functions count: one cannot fail at import time, but two modules
    that reach each other are one module in two files, whichever of them defers the import
    (the CLI may still load its heavy commands lazily: nothing they import imports it)."""
    edges: Dict[str, Set[str]] = {m: {t for t, _ in ts if t in GRAPH and t != m} for m, ts in GRAPH.items()}
    # A package's __init__ runs before its modules: importing ``a.b`` imports ``a`` first.
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    cycles: List[List[str]] = []
    counter = [0]

    def strongconnect(node: str) -> None:  # Tarjan, iterative enough for this graph's depth
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in edges[node]:
            if succ not in index:
                strongconnect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in edges:
        if node not in index:
            strongconnect(node)
    assert cycles == []


def test_no_module_is_over_500_lines():
    long = {
        _module_name(p): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert long == {}
