"""What the evaluation walk (``no_grad.evaluation_loops``, TPF203) reads of a class or a
name: the layers a class keeps on ``self``, and reads of an optimizer that need no
gradients (its learning rate for a log line, its state for a checkpoint)."""

from __future__ import annotations

from typing import Callable, FrozenSet, Optional, Sequence, Set

import libcst as cst

from ...analysis.scope import dotted_name

# Attributes of an optimizer that read its settings or state: reading them after an
# evaluation loop (``optimizer.param_groups[0]["lr"]`` in a snapshot name,
# ``torch.save(optimizer.state_dict(), path)``) differentiates nothing the loop made.
_STATE_ATTRS = frozenset({"param_groups", "state_dict", "defaults", "state"})


def reads_optimizer_state(name: cst.BaseExpression, stack: Sequence[cst.CSTNode]) -> bool:
    """``name`` (``optimizer``, ``self.optimizer``) is the receiver of a settings or state read (``name.param_groups``,
    ``name.state_dict()``): what ``stack`` (its ancestors) shows right above it."""
    parent = stack[-1] if stack else None
    return type(parent) is cst.Attribute and parent.value is name and parent.attr.value in _STATE_ATTRS


def class_layers(node: cst.ClassDef, qualname: Callable[[cst.CSTNode], Optional[str]], project_module: Callable[[cst.BaseExpression], bool]) -> FrozenSet[str]:
    """``self.lstm``... for each ``self.x = nn.Layer(...)`` (or a project ``nn.Module``
    class: ``self.G = Generator(c)``) in the class's ``__init__``: calling one runs a part
    of the model (``DecoderRNN.sample`` decoding step by step)."""
    out: Set[str] = set()
    body = node.body
    if not isinstance(body, cst.IndentedBlock):
        return frozenset()
    for statement in body.body:
        if not (isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__"):
            continue
        inner = statement.body
        if not isinstance(inner, cst.IndentedBlock):
            continue
        for line in inner.body:
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if not (isinstance(small, cst.Assign) and isinstance(small.value, cst.Call)):
                    continue
                name = qualname(small.value.func) if isinstance(small.value.func, (cst.Name, cst.Attribute)) else None
                torch_layer = name is not None and name.startswith("torch.nn.") and name.rsplit(".", 1)[-1][:1].isupper()
                if not torch_layer and not project_module(small.value.func):
                    continue
                for target in small.targets:
                    dotted = dotted_name(target.target)
                    if dotted is not None and dotted.startswith("self.") and dotted.count(".") == 1:
                        out.add(dotted)
    return frozenset(out)
