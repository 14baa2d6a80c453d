"""Command-line defaults that name a model (TPF403): ``models.__dict__[args.arch]()`` builds
what the ``--arch`` default names when the script is run without it.

The layers family's summariser (``layers.argparse``) records, for a module that calls
``add_argument``, each option's destination whose default is a name-like string
(``("arch", "resnet18")``); a destination defined twice, or also given by
``set_defaults``, is recorded with no value. A destination that cannot be read (an option
string or ``dest`` that is not a literal, ``**kwargs``) makes every destination of the
module unknown (``("*", None)``). Modules that do not spell ``add_argument`` cost one
substring search.

``args.arch`` is read from the module that parses ``args``: ``args = parser.parse_args()``
(or ``parse_known_args()[0]``) with no arguments, where ``parser`` is bound in this module
or imported from a project module; ``args = get_args()`` with a project function that
returns such a call; ``from opts import args``. An ``args.arch = ...`` assignment,
``setattr``, ``vars(args)`` or ``args.__dict__`` in the script makes it unknown.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Tuple

import libcst as cst

from ...analysis.scope import Scope, binds_below_module, dotted_name
from ...context import FileContext
from ...project import register_summarizer
from ...project.forms import Call, Form, Item, Lit, Ref
from ...project.scan import line_text, lines_with, nodes_on_lines
from ...project.summarizer import parse
from ...project.call_values import own_path

KEY = "layers.argparse"
UNKNOWN_DESTS = "*"
# A default worth keeping: a model-like name (not a path, a URL or a sentence).
_NAME = re.compile(r"^[A-Za-z_][\w.\-]{0,99}$")
_PARSE = ("parse_args", "parse_known_args")

Defaults = Tuple[Tuple[str, Optional[str]], ...]


def argparse_defaults(tree: ast.Module, source: str) -> Optional[Defaults]:
    """The summariser: ``(dest, default)`` pairs of the module's ``add_argument`` calls
    whose default is a name-like string (None: defined more than once, or overridden by
    ``set_defaults``); None when the module calls no ``add_argument``."""
    if "add_argument" not in source:
        return None
    text = line_text(source)
    found: Dict[str, List[Optional[str]]] = {}
    for node, _ in nodes_on_lines(tree, lines_with(text, ("add_argument", "set_defaults"))):
        if type(node) is not ast.Call or type(node.func) is not ast.Attribute:  # type: ignore[attr-defined]
            continue
        method = node.func.attr  # type: ignore[attr-defined]
        if method == "set_defaults":
            if node.args or any(k.arg is None for k in node.keywords):  # type: ignore[attr-defined]
                return ((UNKNOWN_DESTS, None),)
            for keyword in node.keywords:  # type: ignore[attr-defined]
                found.setdefault(keyword.arg, []).append(None)
        elif method == "add_argument":
            dest = _dest(node)  # type: ignore[arg-type]
            if dest is None:
                return ((UNKNOWN_DESTS, None),)
            default = next((k.value for k in node.keywords if k.arg == "default"), None)  # type: ignore[attr-defined]
            value = default.value if isinstance(default, ast.Constant) and isinstance(default.value, str) else None
            found.setdefault(dest, []).append(value if value is not None and _NAME.match(value) else None)
    return tuple(
        sorted((dest, values[0] if len(values) == 1 else None) for dest, values in found.items() if any(values))
    )


def _dest(call: ast.Call) -> Optional[str]:
    """Where argparse stores the option (``--model-name`` -> ``model_name``), if known."""
    if any(k.arg is None for k in call.keywords):
        return None
    dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
    if dest is not None:
        return dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else None
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not options or len(options) != len(call.args):
        return None
    if not options[0].startswith("-"):
        return options[0]
    chosen = next((o for o in options if o.startswith("--")), options[0])
    return chosen.lstrip("-").replace("-", "_") or None


register_summarizer(KEY, argparse_defaults)


def argparse_default(context: FileContext, expr: cst.BaseExpression, scope: Scope) -> Optional[str]:
    """The string default of ``args.<dest>`` as this script parses ``args``, if known."""
    if type(expr) is not cst.Attribute or type(expr.value) is not cst.Name:
        return None
    name, dest = expr.value.value, expr.attr.value
    if _changed(context.source, name, dest):
        return None
    defaults = _defaults_of(context, name, scope)
    if not defaults:
        return None
    table = dict(defaults)
    return None if UNKNOWN_DESTS in table else table.get(dest)


def _changed(source: str, name: str, dest: str) -> bool:
    """The namespace is changed where the defaults do not show it."""
    name, dest = re.escape(name), re.escape(dest)
    return bool(
        re.search(rf"\b{name}\.{dest}\s*(?:[-+*/|&]?=(?!=)|:)", source)
        or re.search(rf"\bsetattr\(\s*{name}\b|\bvars\(\s*{name}\s*\)|\b{name}\.__dict__", source)
    )


def _defaults_of(context: FileContext, name: str, scope: Scope) -> Optional[Defaults]:
    bound = scope.lookup_value(name)
    if bound is not None:
        return _parsed_by(context, bound, scope)
    project = context.project
    if project is None or binds_below_module(scope, name):
        return None
    found = project.resolve(own_path(context), name)  # ``from opts import args``
    if found is None or found.kind != "binding" or found.binding is None or found.binding.mutated or found.path is None:
        return None
    return project.summary(found.path).extra(KEY) if _parses(found.binding.form) else None


def _parsed_by(context: FileContext, value: cst.BaseExpression, scope: Scope) -> Optional[Defaults]:
    """The defaults of the parser whose result ``value`` is."""
    wanted = "parse_args"
    if type(value) is cst.Subscript:  # parse_known_args()[0]
        if not _is_first(value):
            return None
        value, wanted = value.value, "parse_known_args"
    if type(value) is not cst.Call:
        return None
    method = _method(value)
    if method in _PARSE:
        if method != wanted or value.args:
            return None  # an argument list of its own: not the command line's defaults
        receiver = value.func.value  # type: ignore[attr-defined]
        if type(receiver) is cst.Name and scope.lookup_value(receiver.value) is not None:
            return _own_defaults(context)  # a parser built in this module
        return _project_defaults(context, receiver, scope)
    return _project_defaults(context, value.func, scope, call=True) if wanted == "parse_args" else None


def _method(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if type(call.func) is cst.Attribute else None


def _is_first(item: cst.Subscript) -> bool:
    return (
        len(item.slice) == 1
        and type(item.slice[0].slice) is cst.Index
        and type(item.slice[0].slice.value) is cst.Integer
        and item.slice[0].slice.value.value == "0"
    )


def _project_defaults(context: FileContext, func: cst.BaseExpression, scope: Scope, call: bool = False) -> Optional[Defaults]:
    """The defaults of the project module that defines the parser ``func`` names, or
    (``call``) the function ``func`` that returns its parsed arguments."""
    project = context.project
    if project is None or type(func) not in (cst.Name, cst.Attribute):
        return None
    written = dotted_name(func)
    if written is None or binds_below_module(scope, written.partition(".")[0]):
        return None
    found = project.resolve(own_path(context), written)
    if found is None or found.path is None:
        return None
    if not call:
        return project.summary(found.path).extra(KEY) if found.kind == "binding" else None
    if found.kind != "function" or found.function is None or found.function.decorators:
        return None
    body = project.function_body(found)
    if body is None or body.is_generator or not body.returns:
        return None
    for form in body.returns:
        if type(form) is Ref and "." not in form.name:
            binding = body.binding(form.name)
            form = binding.form if binding is not None and not binding.mutated else form
        if not _parses(form):
            return None
    return project.summary(found.path).extra(KEY)


def _parses(form: Form) -> bool:
    """``parser.parse_args()`` or ``parser.parse_known_args()[0]`` with no arguments."""
    if type(form) is Item and type(form.index) is Lit and form.index.value == 0:
        form = form.value
        wanted = "parse_known_args"
    else:
        wanted = "parse_args"
    return (
        type(form) is Call
        and not form.args
        and not form.kwargs
        and not form.star
        and not form.dstar
        and type(form.func) is Ref
        and form.func.name.rsplit(".", 1)[-1] == wanted
    )


def _own_defaults(context: FileContext) -> Optional[Defaults]:
    project = context.project
    if project is not None:
        return project.summary(own_path(context)).extra(KEY)
    tree, _ = parse(context.source)
    return None if tree is None else argparse_defaults(tree, context.source)
