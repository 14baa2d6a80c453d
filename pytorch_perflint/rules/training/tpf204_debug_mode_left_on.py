"""TPF204 debug-mode-left-on."""

from __future__ import annotations

import ast
import re
from typing import List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.ast_index import code_identifiers
from ...analysis.calls import argument
from ...finding import NodeFix
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.training.classifiers import is_backward_call, is_optimizer_step, method_name
from ...facts.training.guards import guarded_between
from ...facts.training.loops import training_facts, walk
from ...facts.training.screens import calls_training_step
from ...facts.training.test_code import enclosing_function, in_test_code

_ANOMALY_SWITCH = "torch.autograd.set_detect_anomaly"
_ANOMALY_CONTEXT = "torch.autograd.detect_anomaly"
_NVTX = "torch.autograd.profiler.emit_nvtx"
_PROFILERS = frozenset(
    {
        "torch.autograd.profiler.profile",
        "torch.autograd.profiler_legacy.profile",
        "torch.profiler.profile",
        "torch.autograd.profile",
    }
)


# The last parts of the switch and context names (also what `from ... import` binds).
_SWITCHES = frozenset({"set_detect_anomaly", "detect_anomaly", "emit_nvtx"})
_ALL = frozenset({_ANOMALY_SWITCH, _ANOMALY_CONTEXT, _NVTX, *_PROFILERS})
# Functions whose job is debugging (or implementing the switch itself): their callers decide.
_DEBUGGING = re.compile(r"debug|anomal|check|verify|diagnos|profil|^__(?:enter|exit)__$", re.IGNORECASE)


def _debugging_function(ancestors: Sequence[cst.CSTNode]) -> bool:
    function = enclosing_function(ancestors)
    return function is not None and bool(_DEBUGGING.search(function.name.value))


class DebugModeLeftOn(Rule):
    """## What it does
    Flags autograd debugging switched on unconditionally:
    `torch.autograd.set_detect_anomaly(True)`, `with torch.autograd.detect_anomaly():`,
    `with torch.autograd.profiler.emit_nvtx():`, and an autograd profiler
    (`torch.profiler.profile`, `torch.autograd.profiler.profile`) entered around training.
    Silent for `set_detect_anomaly(False)`, values that are not known (`args.debug`), code
    under an `if` (a debug flag), `record_function` ranges, comments and strings.

    ## Why is this bad?
    Anomaly detection records a stack trace for every autograd node in the forward pass and
    checks every backward result for NaNs, which forces device synchronisations: training
    commonly runs several times slower. NVTX ranges and profilers add per-op overhead. These
    are debugging tools that are easy to leave on after the bug is found.

    ## Example
    ```python
    torch.autograd.set_detect_anomaly(True)
    with torch.autograd.detect_anomaly():
        loss.backward()
    ```

    ## Use instead
    ```python
    torch.autograd.set_detect_anomaly(args.debug)
    loss.backward()
    ```

    ## Fix safety
    The fix turns the tool off (`set_detect_anomaly(False)`) or removes the `with` around
    the code. It is unsafe: whoever left it on may still be chasing a NaN, and a profiler's
    `as prof` target may be used later (then no fix is offered).
    """

    code = "TPF204"
    name = "debug-mode-left-on"
    message = "`{what}` slows every training step; turn it off once the debugging is done"
    fix_applicability = Applicability.UNSAFE
    triggers = ("anomaly", "emit_nvtx", "profile")

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """Anomaly detection and NVTX anywhere; a profiler only around training."""
        if "anomaly" in source or "emit_nvtx" in source:
            return True
        return "profile" in source and ".backward(" in source

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code (not a docstring) names a debugging switch, or a profiler and a step."""
        names = code_identifiers(tree)
        if not names.isdisjoint(_SWITCHES):
            return True
        return "profile" in names and calls_training_step(tree)

    VALID = (
        "import torch\ntorch.autograd.set_detect_anomaly(False)\n",
        "import torch\ntorch.autograd.set_detect_anomaly(args.debug)\n",
        "import torch\nif args.debug:\n    torch.autograd.set_detect_anomaly(True)\n",
        "# torch.autograd.set_detect_anomaly(True)\nx = 'torch.autograd.set_detect_anomaly(True)'\n",
        "import torch\nwith torch.autograd.profiler.record_function('fwd'):\n    loss.backward()\n",
        "import torch\nif args.profile:\n    with torch.profiler.profile() as p:\n        loss.backward()\n",
        "import torch\nwith torch.profiler.profile() as prof:\n    model(x)\n",
        "import torch\nwith torch.autograd.profiler.profile(enabled=args.profile):\n    loss.backward()\n",
        "def set_detect_anomaly(x):\n    pass\nset_detect_anomaly(True)\n",
    )
    INVALID = (
        Invalid(
            "import torch\ntorch.autograd.set_detect_anomaly(True)\n",
            line=2,
            expected_fix="import torch\ntorch.autograd.set_detect_anomaly(False)\n",
        ),
        Invalid(
            "from torch import autograd\nwith autograd.detect_anomaly():\n    loss.backward()\n    opt.step()\n",
            line=2,
            expected_fix="from torch import autograd\nloss.backward()\nopt.step()\n",
        ),
        Invalid(
            "import torch\ndef f():\n    with torch.autograd.detect_anomaly():  # why\n        loss.backward()\n        # done\n",
            line=3,
            expected_fix="import torch\ndef f():\n    # why\n    loss.backward()\n    # done\n",
        ),
        Invalid(
            "import torch\nwith torch.autograd.profiler.emit_nvtx(), ctx():\n    loss.backward()\n",
            line=2,
            expected_fix="import torch\nwith ctx():\n    loss.backward()\n",
        ),
        Invalid(
            "import torch\nwith torch.profiler.profile() as prof:\n    for x in loader:\n        f(x).backward()\n",
            line=2,
        ),
        Invalid(
            "import torch\nif __name__ == '__main__':\n    torch.autograd.set_detect_anomaly(mode=True)\n",
            line=3,
            expected_fix="import torch\nif __name__ == '__main__':\n    torch.autograd.set_detect_anomaly(mode=False)\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.context.qualname(node.func)
        if qualname is None or qualname not in _ALL:
            return
        if in_test_code(self.context.ancestors, self.context.path) or _debugging_function(self.context.ancestors):
            return
        if qualname == _ANOMALY_SWITCH:
            self._switch(node)
        elif qualname == _ANOMALY_CONTEXT or qualname == _NVTX or qualname in _PROFILERS:
            self._context_manager(node, qualname)

    def _parents(self, node: cst.CSTNode) -> List[cst.CSTNode]:
        ancestors = list(self.context.ancestors)
        if ancestors and ancestors[-1] is node:
            ancestors.pop()
        return ancestors

    def _switch(self, node: cst.Call) -> None:
        mode = argument(node, "mode", 0, self.context.lookup)
        if mode.value is not True or guarded_between([*self._parents(node), node]):
            return
        fix = None
        if mode.node is not None:
            fix = self.fix([(mode.node, mode.node.with_changes(value=cst.Name("False")))], "Turn anomaly detection off")
        self.report(node, message=self.message.format(what="set_detect_anomaly(True)"), fix=fix)

    def _context_manager(self, node: cst.Call, qualname: str) -> None:
        parents = self._parents(node)
        if guarded_between([*parents, node]):
            return
        found = _with_item(node, parents)
        if found is None:
            return
        statement, item = found
        if qualname != _ANOMALY_CONTEXT:
            enabled = argument(node, "enabled", 0 if qualname != "torch.profiler.profile" else None, self.context.lookup)
            if not (enabled.missing or enabled.value is True):
                return
        if qualname in _PROFILERS and not self._trains(statement.body):
            return
        what = self.context.code_for(node.func) + "()"
        fix = None if item.asname is not None else self._unwrap(statement, item, parents)
        self.report(node, message=self.message.format(what=what), fix=fix)

    def _trains(self, body: cst.BaseSuite) -> bool:
        """Whether a block runs training: backward, an optimizer step, a training loop."""
        facts = self.context.fact(training_facts)
        found: List[bool] = []

        def enter(child: cst.CSTNode, stack: Sequence[cst.CSTNode]) -> bool:
            if found:
                return False
            loop = facts.loop(child)
            if loop is not None and loop.is_training:
                found.append(True)
            elif isinstance(child, cst.Call) and (
                is_backward_call(child, self.context.qualname) or is_optimizer_step(child, facts.optimizer_names)
            ):
                found.append(True)
            elif isinstance(child, cst.Call) and method_name(child) is None and isinstance(child.func, cst.Name):
                if (None, child.func.value) in facts.step_functions:
                    found.append(True)
            return True

        walk(body, enter)
        return bool(found)

    def _unwrap(self, statement: cst.With, item: cst.WithItem, parents: Sequence[cst.CSTNode]) -> Optional[NodeFix]:
        if len(statement.items) > 1:
            items = [i for i in statement.items if i is not item]
            items[-1] = items[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return self.fix([(statement, statement.with_changes(items=items))], "Remove the debugging context")
        body = statement.body
        footer: List[cst.EmptyLine] = []
        if isinstance(body, cst.SimpleStatementSuite):  # `with x: a(); b()  # note`
            statements: List[cst.BaseStatement] = [
                cst.SimpleStatementLine(body=list(body.body), trailing_whitespace=body.trailing_whitespace)
            ]
        else:
            statements = list(body.body)
            footer = list(body.footer)  # comment (and blank) lines after the last statement
        if not statements:
            return None
        first = statements[0]
        moved = list(statement.leading_lines)
        header = getattr(body, "header", None)
        if header is not None and header.comment is not None:  # keep `with x:  # note`'s comment
            moved.append(cst.EmptyLine(comment=header.comment))
        statements[0] = first.with_changes(leading_lines=[*moved, *first.leading_lines])
        message = "Remove the debugging context"
        if not footer:
            return self.fix([(statement, cst.FlattenSentinel(statements))], message)
        return self._unwrap_with_footer(statement, statements, footer, parents, message)

    def _unwrap_with_footer(
        self,
        statement: cst.With,
        statements: List[cst.BaseStatement],
        footer: List[cst.EmptyLine],
        parents: Sequence[cst.CSTNode],
        message: str,
    ) -> Optional[NodeFix]:
        """The body's trailing lines have no statement to stay with: they go before the
        statement after the ``with``, or (the ``with`` last in its block) to the front of
        the enclosing block's own trailing lines."""
        block = parents[-3] if len(parents) >= 3 else None
        if not isinstance(block, (cst.Module, cst.IndentedBlock)):
            return None
        siblings = list(block.body)
        index = next((i for i, sibling in enumerate(siblings) if sibling is statement), None)
        if index is None:
            return None
        if index + 1 < len(siblings):
            after = siblings[index + 1]
            moved = after.with_changes(leading_lines=[*footer, *after.leading_lines])
            return self.fix([(statement, cst.FlattenSentinel(statements)), (after, moved)], message)
        body = [*siblings[:index], *statements]
        return self.fix([(block, block.with_changes(body=body, footer=[*footer, *block.footer]))], message)


def _with_item(node: cst.Call, parents: Sequence[cst.CSTNode]) -> Optional[Tuple[cst.With, cst.WithItem]]:
    """The ``with`` statement and item whose context manager is ``node``."""
    if len(parents) < 2:
        return None
    item, statement = parents[-1], parents[-2]
    if isinstance(item, cst.WithItem) and item.item is node and isinstance(statement, cst.With):
        return statement, item
    return None
