"""Command-line defaults as values: ``args.arch`` after ``args = parser.parse_args()`` holds
the ``default=`` of ``add_argument('--arch', ...)`` when the script is run without it.

A summariser (``layers.argparse``, kept under the key the layers family gave it so cached
summaries stay valid) records, for a module that calls ``add_argument``, each option's
destination whose default is a name-like string (``("arch", "resnet18")``) or True (``default=True``,
``action="store_false"``: ``("pin_mem", True)``); a destination
defined twice, or also given by ``set_defaults``, has no value. A destination that cannot
be read (an option string or ``dest`` that is not a literal, ``**kwargs``) makes every
destination of the module unknown (``("*", None)``). Modules that do not spell
``add_argument`` cost one substring search.

The value engine makes ``argparse.ArgumentParser(...)`` a ``Parser`` of the module that
builds it, its ``parse_args()`` (no arguments) a ``Namespace``, and an attribute of that
namespace the recorded default, unless the module that reads it changes the namespace
(``args.arch = ...``, ``setattr(args, ...)``, ``vars(args)``, ``args.__dict__``), or the
module that parses it does so under any name.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Dict, List, Optional, Tuple, Union

from .kinds import UNKNOWN, Flag, Kind, Namespace, Text
from .scan import line_text, lines_with, nodes_on_lines
from .summarizer import register_summarizer

KEY = "layers.argparse"
UNKNOWN_DESTS = "*"
# A default worth keeping: a model-like name (not a path, a URL or a sentence).
_NAME = re.compile(r"^[A-Za-z_][\w.\-]{0,99}$")

Value = Union[str, bool]  # a name-like string default, or True (a switch on by default)
Defaults = Tuple[Tuple[str, Optional[Value]], ...]


def argparse_defaults(tree: ast.Module, source: str) -> Optional[Defaults]:
    """The summariser: ``(dest, default)`` pairs of the module's ``add_argument`` calls
    whose default is a name-like string (None: defined more than once, or overridden by
    ``set_defaults``); None when the module calls no ``add_argument``."""
    if "add_argument" not in source:
        return None
    text = line_text(source)
    found: Dict[str, List[Optional[Value]]] = {}
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
            found.setdefault(dest, []).append(_default(node))  # type: ignore[arg-type]
    return tuple(
        sorted((dest, values[0] if len(values) == 1 else None) for dest, values in found.items() if any(values))
    )


def _default(call: ast.Call) -> Optional[Value]:
    """A name-like string default, or True (``default=True``, ``action="store_false"``):
    a switch that is on unless the command line turns it off (``pin_memory=args.pin_mem``).
    A False default is not kept: an option its author made to turn a feature on is no
    finding of the feature being off."""
    keywords = {k.arg: k.value for k in call.keywords}
    default = keywords.get("default")
    if default is None:
        action = keywords.get("action")
        return True if isinstance(action, ast.Constant) and action.value == "store_false" else None
    if isinstance(default, ast.Constant) and default.value is True:
        return True
    if isinstance(default, ast.Constant) and isinstance(default.value, str) and _NAME.match(default.value):
        return default.value
    return None


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


@lru_cache(maxsize=512)
def changed(source: Optional[str], name: Optional[str], dest: str) -> bool:
    """The namespace bound to ``name`` (None: any name) is changed in ``source`` where the
    defaults do not show it (an unreadable module counts as changing it).

    Cached: a long script's loop asks the same question of the same text thousands of times,
    and each search scans the whole module."""
    if source is None:
        return True
    dest = re.escape(dest)
    # ``\w\.`` rather than ``\b\w+\.`` for any name: the same matches, without the scan
    # restarting at every word of the module.
    owner = rf"\b{re.escape(name)}" if name is not None else r"\w"
    if re.search(rf"{owner}\.{dest}\s*(?:[-+*/|&]?=(?!=)|:)", source):
        return True
    name = re.escape(name) if name is not None else r"\w+"
    return bool(re.search(rf"\bsetattr\(\s*{name}\b|\bvars\(\s*{name}\s*\)|{owner}\.__dict__", source))


def default_of(namespace: Namespace, dest: str, defaults: Optional[Defaults]) -> Kind:
    """The recorded default of ``dest`` (``defaults``: the parser module's summary): a
    string, or a switch that is on."""
    if not defaults:
        return UNKNOWN
    table = dict(defaults)
    value = None if UNKNOWN_DESTS in table else table.get(dest)
    if value is True:
        return Flag(True)
    return UNKNOWN if not isinstance(value, str) else Text(value=value)
