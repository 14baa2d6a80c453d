"""Whether the entry scripts that run a module decide cuDNN's benchmark setting (TPF403).

``torch.backends.cudnn.benchmark`` is global: a trainer module (``trainer.py``, whose
``Trainer`` builds and trains the model) runs with whatever the script that imports it
set. RULES.md: TPF403 does not flag "a module whose every entry script (a project module
that imports it, directly or through others) sets benchmark = True before it trains".

An entry script here is a project module that imports the module (through the index's
import graph, at any depth), is not a test file, and runs something when executed: an
``if __name__ == "__main__":`` block, or a call, loop or ``with`` at module level (a
library module of imports and definitions is not one). It decides the setting as TPF403
decides it in its own module: it assigns ``benchmark`` a value that is not ``False``
(``True``, or a flag: the author chooses), or asks for determinism
(``cudnn.deterministic = True``, ``torch.use_deterministic_algorithms(...)``, a
``deterministic=`` argument), or turns cuDNN off. ``benchmark = False`` alone does not.
When the entry scripts cannot all be read, or there are none, the answer is no (the rule
reports as it would without this module). Where in the script the setting stands (before
or after the training starts) is not checked.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Dict, Optional

from ...analysis.ast_index import ast_dotted
from ...project import ProjectIndex
from ...project.bodies import locate
from ...project.resolution import Definition
from ...project.summarizer import parse
from ...testfiles import is_test_file

BENCHMARK = "torch.backends.cudnn.benchmark"
DETERMINISTIC = "torch.backends.cudnn.deterministic"
ENABLED = "torch.backends.cudnn.enabled"
USE_DETERMINISTIC = "torch.use_deterministic_algorithms"
_RUNS = (ast.Expr, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)


@dataclass(frozen=True)
class ScriptFacts:
    """``entry``: running the module does something; ``decides``: it sets the benchmark
    setting (or asks for determinism) as the author's choice."""

    entry: bool
    decides: bool


def entry_scripts_decide(index: ProjectIndex, path: str, answers: Optional[Callable[[str, ast.Module], bool]] = None) -> bool:
    """Every entry script that imports ``path`` (there is at least one) decides the setting,
    or (``answers``, given the script's path and tree) answers for the finding itself."""
    entries = 0
    for module in sorted(index.importers(path)):
        if is_test_file(module, index.root):
            continue
        facts = script_facts(index, module)
        if facts is None:
            return False  # an importer that cannot be read: not known
        if facts.entry:
            if not facts.decides and not (answers is not None and answers(module, parse(index.text(module) or "", module)[0])):  # type: ignore[arg-type]
                return False
            entries += 1
    return entries > 0


def script_facts(index: ProjectIndex, path: str) -> Optional[ScriptFacts]:
    """What running module ``path`` does about the setting; None when it cannot be parsed."""
    text = index.text(path)
    tree = None if text is None else parse(text, path)[0]
    if tree is None:
        return None
    aliases = dict(index.summary(path).aliases)
    entry = any(_runs(statement) for statement in tree.body)
    return ScriptFacts(entry=entry, decides=_decides(tree, aliases))


def helper_decides(index: ProjectIndex, definition: Optional[Definition]) -> bool:
    """A project function that decides the setting itself when called (``util.setup_runtime()``
    assigning ``cudnn.benchmark = True``, an ``init_seeds()`` asking for determinism): a
    script that calls it has decided, as if it had written the assignment. Its own body only
    (not the functions it calls)."""
    if definition is None or definition.kind != "function" or definition.function is None or definition.path is None:
        return False
    text = index.text(definition.path)
    if text is None or ("cudnn" not in text and "deterministic" not in text):
        return False
    function = definition.function  # most callees' modules name neither setting: not read further
    node = locate(text, function.line, function.end_line, function.name, False)
    return node is not None and _decides(node, dict(index.summary(definition.path).aliases))


def _runs(statement: ast.stmt) -> bool:
    if type(statement) is ast.If:
        return _is_main_guard(statement.test)
    if type(statement) is ast.Expr:
        return type(statement.value) is ast.Call  # a docstring is not a run
    return isinstance(statement, _RUNS)


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if type(test) is not ast.Compare or len(test.ops) != 1 or type(test.ops[0]) is not ast.Eq:
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if type(s) is ast.Name]
    strings = [s.value for s in sides if type(s) is ast.Constant]
    return names == ["__name__"] and strings == ["__main__"]


def _qualname(node: ast.AST, aliases: Dict[str, str]) -> str:
    """``torch.backends.cudnn.benchmark`` for ``cudnn.benchmark`` after ``from torch.backends
    import cudnn``; a bare ``torch`` (imported inside a function) counts as the package."""
    dotted = ast_dotted(node)
    head, _, rest = dotted.partition(".")
    target = aliases.get(head, head if head == "torch" else "")
    if not target:
        return ""
    return f"{target}.{rest}" if rest else target


def _decides(tree: ast.AST, aliases: Dict[str, str]) -> bool:
    for node in ast.walk(tree):
        if type(node) is ast.Assign:
            value = node.value.value if type(node.value) is ast.Constant else None  # type: ignore[attr-defined]
            constant = type(node.value) is ast.Constant
            for target in node.targets:
                name = _qualname(target, aliases)
                if name == BENCHMARK and not (constant and value is False):
                    return True
                if name == DETERMINISTIC and not (constant and value is False):
                    return True
                if name == ENABLED and not (constant and value is True):
                    return True
        elif type(node) is ast.Call:
            first = node.args[0] if node.args else None  # type: ignore[attr-defined]
            if _qualname(node.func, aliases) == USE_DETERMINISTIC and not (  # type: ignore[attr-defined]
                type(first) is ast.Constant and first.value is False  # type: ignore[union-attr]
            ):
                return True
            for keyword in node.keywords:  # type: ignore[attr-defined]
                if keyword.arg == "deterministic" and not (
                    type(keyword.value) is ast.Constant and keyword.value.value is False  # type: ignore[attr-defined]
                ):
                    return True
    return False
