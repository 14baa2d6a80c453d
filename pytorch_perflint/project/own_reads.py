"""A method's read of its own attribute after it bound it (``self.L = np.zeros(n)`` ... then
``torch.LongTensor(self.L)`` in the same method), for the value engine's ``_ref``.

Across the class, ``self.L`` is what every binding agrees on (``attribute_values``); when the
class binds it to an array in one method and to a tensor in another, that is unknown. Inside
one method, statement order says more: the binding that reaches the read is the one the read
sees, as for a local name, when nothing between can rebind the attribute behind the method's
back. Known only when

* the method binds ``self.name`` on a line before the read, in a block around the read (it
  runs on every path to the read), and no other line of the method binds it between them
  (``setattr`` included), nor in a loop around the read that the binding is not in (the next
  round would see it);
* no line between them (nor such a loop, nor the read's own line) calls a method of ``self``
  (or of ``super()``), hands ``self`` itself to a call, or yields or awaits (other code could
  rebind it there);
  item writes (``self.L[i] = v``) and calls handed ``self.L`` or ``self.L[i]`` change the
  object in place, not the binding.

Anything else falls back to the class-wide answer.
"""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from .forms import Form
from .scopes import ANY_ATTRIBUTE, Scope


def reaching_own_binding(scope: Optional[Scope], head: str, attr: str, line: int) -> Optional[Tuple[Form, int]]:
    """The form and line of the ``self.attr = ...`` of this method that reaches a read of
    ``head.attr`` at ``line`` (``head`` the method's instance parameter), or None."""
    if scope is None or scope.module or scope.inline or not scope.params or scope.params[0] != head or scope.node is None:
        return None
    if not scope.owner or "." not in scope.owner or scope.entries.get(head):
        return None  # not a method, or `self` rebound
    bindings = [(b_line, blocks, name, form) for b_line, blocks, name, form in scope.own_attrs if name in (attr, ANY_ATTRIBUTE)]
    before = [b for b in bindings if b[0] < line]
    if not before:
        return None
    bound_line, bound_blocks, name, form = before[-1]
    here = scope.blocks_at(line)
    if name != attr or form is None or here[: len(bound_blocks)] != bound_blocks:
        return None  # `setattr`, a value not known, or a branch the read is outside of
    if bound_line == line or any(b[0] == bound_line for b in before[:-1]):
        return None  # two bindings on one line (`self.L, self.L = ...`)
    spans = [(bound_line + 1, line)]
    for block, _ in here[len(bound_blocks):]:  # loops around the read the binding is not in
        span = scope.loops.get(block)
        if span is not None:
            spans.append(span)
    if any(_within(b[0], spans) and b[0] != line for b in bindings):
        return None  # rebound between, or later in a loop around the read
    if any(_within(node.lineno, spans) for node in _hidden_writes(scope.node, head)):
        return None
    return form, bound_line


def _within(line: int, spans: List[Tuple[int, int]]) -> bool:
    return any(start <= line <= end for start, end in spans)


def _hidden_writes(function: ast.AST, head: str) -> Iterator[ast.AST]:
    """The nodes of the method's own body (not nested definitions) where other code may
    rebind an attribute of ``head``: a call of its method, a call handed ``head`` itself, a
    ``yield`` or an ``await``, an augmented assignment or a deletion of one of its attributes."""
    stack: List[ast.AST] = list(getattr(function, "body", ()))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            yield node
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and (_is_head(func.value, head) or _is_super(func.value)):
                yield node  # `self.reset()`, `super().reset()`
            elif any(_is_head(arg, head) for arg in (*node.args, *(k.value for k in node.keywords))):
                yield node  # `helper(self)`
            elif any(isinstance(arg, ast.Starred) and _is_head(arg.value, head) for arg in node.args):
                yield node
        elif isinstance(node, (ast.AugAssign, ast.Delete)):
            targets = [node.target] if isinstance(node, ast.AugAssign) else node.targets
            if any(isinstance(t, ast.Attribute) and _is_head(t.value, head) for t in targets):
                yield node
        stack.extend(ast.iter_child_nodes(node))


def _is_head(node: ast.AST, head: str) -> bool:
    return isinstance(node, ast.Name) and node.id == head


def _is_super(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
