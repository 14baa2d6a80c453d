"""Who calls a public method of a project class, when that can be known from the project.

A private method (``_sample``) is called through ``self``; a public one (``select_action``)
on any object, so its callers are every ``<anything>.select_action(...)`` call in the
project: an over-approximation (a call on an object of another class is counted too, which
can only make the callers disagree, never invent an agreement). It holds only where no
caller can hide:

* the method is not a dunder (Python calls those) nor a ``staticmethod`` (its arguments
  would not line up with ``self``'s);
* the class and its project subclasses have no base outside the project, except
  ``torch.nn.Module`` for a method name that ``nn.Module`` does not define (a library
  calls the methods of its own bases: ``forward``, ``train``, ``reset_parameters``...);
* no module mentions ``.name`` other than as a call (``fn = agent.act``, ``map(agent.act,
  xs)`` let it escape), as a string (``getattr(agent, "act")``) or as a bare word other than
  its ``def`` (``__call__ = act`` in the class body), comments left out (``# same for
  fit()``);
* no call spells it on a class (``Agent.act(agent, x)``: its arguments are shifted);
* at least one call, and at most ``MAX_SITES`` (the engine reads each one).

The answer is read from module texts: it records every project file's text as read.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import TYPE_CHECKING, Optional, Tuple

from .resolution import Definition, Site

if TYPE_CHECKING:
    from .index import ProjectIndex

MAX_SITES = 16
# Public methods of ``torch.nn.Module`` (torch 2.x): torch itself calls these on a subclass.
NN_MODULE_METHODS = frozenset(
    "add_module apply bfloat16 buffers children compile cpu cuda double eval extra_repr float forward "
    "get_buffer get_extra_state get_parameter get_submodule half ipu load_state_dict modules mtia "
    "named_buffers named_children named_modules named_parameters parameters register_backward_hook "
    "register_buffer register_forward_hook register_forward_pre_hook register_full_backward_hook "
    "register_full_backward_pre_hook register_load_state_dict_post_hook register_load_state_dict_pre_hook "
    "register_module register_parameter register_state_dict_post_hook register_state_dict_pre_hook "
    "requires_grad_ set_extra_state set_submodule share_memory state_dict to to_empty train type xpu "
    "zero_grad reset_parameters".split()
)
_NN_BASES = frozenset({"torch.nn.Module"})


def public_method_sites(index: "ProjectIndex", definition: Definition) -> Optional[Tuple[Site, ...]]:
    """Every call that may run the public method ``definition``, or None when a caller may
    be outside what the project's text shows."""
    owner, _, method = definition.name.rpartition(".")
    if definition.klass is None or definition.path is None or not owner or method.startswith("__"):
        return None
    klass = Definition("class", definition.path, owner, klass=definition.klass)
    for candidate in (klass, *index.resolution.subclasses(klass)):
        bases = index.external_bases(candidate)
        if bases and not (bases <= _NN_BASES and method not in NN_MODULE_METHODS):
            return None
    # `.name` not called, `"name"` (getattr), a bare `name` other than its `def` (`__call__ = name`).
    escape = re.compile(rf"\.\s*{method}\b(?!\s*\()|(?<!def )(?<![.\w]){method}\b")
    quoted = re.compile(rf"[\"']{method}[\"']")
    calls = re.compile(rf"\.\s*{method}\s*\(")
    spelled = 0
    for path in index.spelling(method, index.module_paths()):
        text = index.text_naming(path, method)  # the texts that spell it, noted with the word
        if text is not None:
            if (escape.search(text) or quoted.search(text)) and (escape.search(_code(text, True)) or quoted.search(_code(text, False))):
                return None
            spelled += len(calls.findall(text))
            if spelled > MAX_SITES:
                return None  # before parsing the modules that call it
    sites = index.method_calls(method)
    if not sites or len(sites) > MAX_SITES:
        return None
    for path, site in sites:
        receiver = site.callee[: -len(method) - 1]
        if receiver == "?" or not site.called:
            continue
        found = None if receiver in ("self", "super()") else index.resolve(path, receiver)
        if receiver == "cls" or (found is not None and found.kind == "class"):
            return None  # `Agent.act(agent, x)`: the first argument is the instance
    return sites


def _code(text: str, prose: bool) -> str:
    """The text with its comments blanked, and with ``prose`` the insides of its plain
    string literals too (``print("will optimize L")`` names no method; an f-string's
    fields are code and stay); the text itself when it does not tokenize."""
    lines = text.splitlines(keepends=True)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return text
    for token in tokens:
        if token.type == tokenize.COMMENT:
            row, column = token.start
            line = lines[row - 1]
            lines[row - 1] = line[:column] + " " * len(token.string) + line[column + len(token.string):]
        elif prose and token.type == tokenize.STRING and token.start[0] == token.end[0] and "f" not in _prefix(token.string):
            row, column = token.start
            skip = len(_prefix(token.string))
            quote = 3 if token.string[skip : skip + 3] in ('"""', "'''") else 1
            inner = len(token.string) - skip - 2 * quote
            line, at = lines[row - 1], column + skip + quote
            lines[row - 1] = line[:at] + " " * inner + line[at + inner:]
    return "".join(lines)


def _prefix(literal: str) -> str:
    """A string literal's prefix letters, lower-cased (``rb``, ``f``)."""
    return literal[: len(literal) - len(literal.lstrip("rbuRBUfF"))].lower()
