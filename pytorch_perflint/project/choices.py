"""Values chosen by a name the engine does not know: the candidates, as ``OneOf``.

A factory by name picks one of a set of project definitions the program text fixes,
even when the name itself comes from a command line or a config file:

* ``importlib.import_module("models." + name + "_model")``: every project module whose
  dotted name fits the known parts (``ProjectModules``); a member of it taken by an unknown
  name (``mod.__dict__.items()``, ``getattr(mod, name)``) is one of the classes and
  functions those modules define (imported names left out: a lookup by a name derived from
  the module's own name finds what the module defines), less abstract classes (an
  ``@abstractmethod`` of their own: they cannot be made);
* a registry (``@MODELS.register()`` / ``@MODELS.register_module`` on project functions
  and classes, ``MODELS.register(fn)``), looked up through the same object
  (``MODELS.get(name)``, ``MODELS[name]``): one of the registered definitions, the
  registry's class being the project's or a library's (fvcore, mmcv, timm...);
* names bound, or returns given, in the arms of an ``if``/``elif`` (``net = C1(...)`` /
  ``net = PPM(...)``) that disagree on the class: one of them (``choose``).

A rule never asks for ``OneOf`` by type, so a choice is unknown to it; the engine asks
every candidate what holds for all of them (``ModuleValues.conv``: every candidate a
convolutional model; ``call_values.dispatch``: the methods of every candidate). More than
``MAX_CHOICES`` candidates, or one unknown, is unknown.
"""

from __future__ import annotations

import ast
import os
import re
from typing import TYPE_CHECKING, Callable, Iterable, List, Optional, Tuple

from .forms import Attr, BinOp, Call, Form, Joined, Lit, Ref, Seq, dotted
from .kinds import UNKNOWN, Instance, Kind, Module, OneOf, Options, ProjectCallable, ProjectModules, Text, Unknown, Wrapper, join_all
from .resolution import Definition
from .reads import spells
from .scan import lines_with

if TYPE_CHECKING:
    from .values import ValueEngine, Where

MAX_CHOICES = 16
MAX_WIDE = 64  # candidates read at once for what they all are (``choose``'s ``wide``)
_CANDIDATES = (Instance, ProjectCallable, Module, Wrapper, OneOf)
_REGISTER = ("register", "register_module")
_LOOKUP = ("get", "build", "__getitem__")


def one_of(kinds: Iterable[Kind]) -> Kind:
    """The choice among ``kinds`` (nested choices flattened, equal ones merged)."""
    flat = _flat(kinds)
    if not flat or len(flat) > MAX_CHOICES or any(type(k) is Unknown for k in flat):
        return Unknown("choices")
    return flat[0] if len(flat) == 1 else OneOf(tuple(flat))


def choose(kinds: List[Kind], wide: Optional[Callable[[List[Kind]], Kind]] = None) -> Kind:
    """Where bindings or returns meet: their join, or, when they disagree and each is a
    project object, callable or model, the choice among them. Past ``MAX_CHOICES``
    candidates (a factory's fifty ``elif`` arms) no choice is kept: ``wide`` answers for
    them all at once (the engine's: a convolutional model when every candidate is one)."""
    joined = join_all(kinds)
    if type(joined) is not Unknown or not kinds or not all(type(k) in _CANDIDATES for k in kinds):
        return joined
    flat = _flat(kinds)
    if wide is not None and MAX_CHOICES < len(flat) <= MAX_WIDE:
        return wide(flat)
    return one_of(flat)


def _flat(kinds: Iterable[Kind]) -> List[Kind]:
    """The candidates of ``kinds``, nested choices flattened, equal ones merged."""
    flat: List[Kind] = []
    for kind in kinds:
        flat.extend(kind.kinds if type(kind) is OneOf else (kind,))  # type: ignore[union-attr]
    return list(dict.fromkeys(flat))


def each(choice: Kind, ask) -> Kind:
    """``ask`` of every candidate of a choice, as a choice."""
    return one_of(ask(kind) for kind in choice.kinds)  # type: ignore[union-attr]


# -- importlib -------------------------------------------------------------------------------
def _pattern(form: Form, engine: "ValueEngine", where: "Where", depth: int = 0) -> Optional[str]:
    """A regular expression for the module names a string form may spell: its literal
    parts, through the local names it reads (``"models." + name + "_model"``)."""
    if depth > 8:
        return ".*"
    if type(form) is Lit:
        return re.escape(form.value) if isinstance(form.value, str) else None
    if type(form) is BinOp and form.op in ("Add", "Add="):
        left, right = _pattern(form.left, engine, where, depth + 1), _pattern(form.right, engine, where, depth + 1)
        return None if left is None or right is None else left + right
    template = _template(form)
    if template is not None:  # `"model.{}".format(name)`, `"model.%s" % name`: each field as its argument
        parts = re.split(template[1], template[0])
        values = template[2] if template[2] is not None and len(template[2]) == len(parts) - 1 else ()
        fields = [_pattern(value, engine, where, depth + 1) for value in values] or [".*"] * (len(parts) - 1)
        return None if None in fields else re.escape(parts[0]) + "".join(f + re.escape(p) for f, p in zip(fields, parts[1:]))  # type: ignore[operator]
    if type(form) is Ref and "." not in form.name and where.scope is not None:
        status, value, line = where.scope.value_at(form.name, where.line)
        if status == "value" and type(value) in (Lit, BinOp, Joined, Ref):
            return _pattern(value, engine, where.at(line), depth + 1)  # type: ignore[arg-type]
    known = engine._eval(form, where, depth + 1)
    if type(known) is Text:
        return re.escape(known.value) if known.value is not None else ".*" + re.escape(known.tail)  # type: ignore[union-attr]
    return ".*"


def _template(form: Form) -> Optional[Tuple[str, str, Optional[Tuple[Form, ...]]]]:
    """A literal formatted by ``str.format`` or ``%``: the literal, its fields' pattern and
    the arguments of its fields in order when they are plain ``{}`` / ``%s`` (None: not
    one; a literal with an escaped brace or percent sign is not read)."""
    values: Optional[Tuple[Form, ...]] = None
    if type(form) is Call and type(form.func) is Attr and form.func.attr == "format" and type(form.func.value) is Lit:
        text, fields = form.func.value.value, r"\{[^{}]*\}"
        plain = isinstance(text, str) and not form.kwargs and not form.star and not form.dstar and not re.search(r"\{[^{}]", text)
        values = form.args if plain else None
    elif type(form) is BinOp and form.op == "Mod" and type(form.left) is Lit:
        text, fields = form.left.value, r"%[-+ #0-9.]*[sdifr]"
        right = form.right
        values = right.items if type(right) is Seq and right.kind == "tuple" and not right.truncated else (right,)
        values = values if isinstance(text, str) and re.fullmatch(r"(?:[^%]|%s)*", text) else None
    else:
        return None
    if not isinstance(text, str) or "{{" in text or "}}" in text or "%%" in text:
        return None
    return text, fields, values


def _names_of(index, path: str, bases: Iterable[str]) -> List[str]:
    """The dotted names ``path`` may be imported by from the folders in ``bases``."""
    out = []
    for base in bases:
        if path.startswith(base + os.sep):
            parts = os.path.splitext(os.path.relpath(path, base))[0].split(os.sep)
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            if parts and all(part.isidentifier() for part in parts):
                out.append(".".join(parts))
    return out


def import_module(engine: "ValueEngine", form: Call, where: "Where") -> Kind:
    """``importlib.import_module(name)``: the project modules ``name`` may spell (a relative
    name, or one with no literal part, is not known)."""
    index = engine.index
    name = form.args[0] if form.args else form.keyword("name")
    if index is None or name is None or len(form.args) > 1 or form.keyword("package") is not None:
        return UNKNOWN
    pattern = _pattern(name, engine, where)
    if pattern is None or pattern.startswith(r"\.") or not pattern.replace(".*", ""):
        return UNKNOWN
    compiled = re.compile(pattern)
    # The name is looked up on ``sys.path`` at run time: the folder of the script that runs
    # is on it, any folder above the importer may be that one (or a source root).
    bases, folder = set(index.modules.source_roots), os.path.dirname(os.path.abspath(where.path or ""))
    while folder.startswith(index.modules.root):
        bases.add(folder)
        folder = os.path.dirname(folder)
    paths = tuple(sorted(p for p in index.module_paths() if any(compiled.fullmatch(n) for n in _names_of(index, p, bases))))
    return ProjectModules(paths) if 0 < len(paths) <= MAX_CHOICES else UNKNOWN


def members(engine: "ValueEngine", modules: ProjectModules) -> Kind:
    """A member of the modules taken by an unknown name: one of the classes and functions
    they define (not abstract classes)."""
    index = engine.index
    assert index is not None
    out: List[Kind] = []
    for path in modules.paths:
        summary = index.summary(path)
        names = [f.name for f in summary.functions]
        names += [c.name for c in summary.classes if not any(_abstract(m.decorators) for m in c.methods)]
        for name in names:
            found = index.resolve(path, name)
            if found is None:
                return UNKNOWN
            out.append(ProjectCallable(found))
    return one_of(out)


def _abstract(decorators: Tuple[Form, ...]) -> bool:
    return any(type(d) is Ref and d.name.rpartition(".")[2] == "abstractmethod" for d in decorators)


def attribute(engine: "ValueEngine", receiver: Kind, name: str, depth: int) -> Kind:
    """An attribute of each choice; ``mod.__dict__`` (a dict of its members), ``mod.Name``
    (that name in each module)."""
    if type(receiver) is OneOf:
        return each(receiver, lambda one: engine._attribute(one, name, depth))
    modules = receiver
    assert type(modules) is ProjectModules
    if name == "__dict__":
        return Options(open=True, value=members(engine, modules))
    index = engine.index
    assert index is not None
    paths = [path for path in modules.paths if not _lacks(index, path, name)]  # there, the program stops
    return one_of(engine._definition(index.resolve(path, name), depth + 1) for path in paths)


def _lacks(index, path: str, name: str) -> bool:
    """Module ``path`` certainly has no attribute ``name``: its text never spells it, and it
    has no star import or module ``__getattr__`` that could give it."""
    if spells(index, path, "__getattr__") is not False:
        return False  # (or unreadable)
    text = index.text_naming(path, name)
    if text is not None and re.search(rf"\b{re.escape(name)}\b", text):
        return False
    return not any(record.star for record in index.summary(path).imports)


# -- registries ------------------------------------------------------------------------------
def registry_get(engine: "ValueEngine", registry: str, where: "Where") -> Kind:
    """``REGISTRY.get(name)`` / ``REGISTRY[name]``: one of the project definitions registered
    on the same module-level object (resolved from each registering module), else unknown.
    Registrations are found by scanning the modules' text: small projects only."""
    index = engine.index
    if index is None or where.path is None or not engine._scannable() or not engine._free(where, registry.partition(".")[0]):
        return UNKNOWN
    owner = index.resolve(where.path, registry)
    if owner is None or owner.kind != "binding":
        return UNKNOWN
    key = ("registry", owner.path, owner.name)
    return engine._memoised(key, lambda: _registered(engine, owner))


def _registered(engine: "ValueEngine", owner: Definition) -> Kind:
    """Every registration of the registry: each module's text that names it is read line
    by line; a line that does something else with it (an alias, an argument, a docstring)
    may hide a registration, and leaves the registry unknown."""
    index = engine.index
    assert index is not None
    last = owner.name.rpartition(".")[2]
    out: List[Kind] = []
    for path in sorted(index.module_paths()):
        text = index.text_naming(path, last)  # the texts that spell it, noted with the word
        mentions = lines_with(text, [last], whole_word=True) if text is not None else []
        if not mentions:
            continue
        lines = text.splitlines()  # type: ignore[union-attr]
        decorated = 0
        for line in mentions:
            code = lines[line - 1].strip() if line <= len(lines) else ""
            if code.startswith("@") and any(f"{last}.{r}" in code for r in _REGISTER):
                decorated += 1
            elif any(f"{last}.{r}(" in code for r in _REGISTER):
                found = _called_registration(index, path, code, last)
                if found is None:
                    return UNKNOWN
                out.append(found)
            elif not _harmless(code, last, path == owner.path):
                return UNKNOWN
        summary = index.summary(path)
        here = [d.name for d in (*summary.functions, *summary.classes) if any(_registers(index, path, x, owner) for x in d.decorators)]
        if len(here) != decorated:
            return UNKNOWN  # a decorated definition the summary does not list (nested), or another registry
        for name in here:
            found = index.resolve(path, name)
            if found is None:
                return UNKNOWN
            out.append(ProjectCallable(found))
    return one_of(out) if out else UNKNOWN


def _harmless(code: str, name: str, home: bool) -> bool:
    """An import, a comment, a lookup (``R.get(``, ``R[``), the registry's own binding."""
    if code.startswith(("import ", "from ", "#")) or f"{name}.get(" in code or f"{name}[" in code:
        return True
    return home and re.match(rf"{re.escape(name)}\s*(?::[^=]*)?=(?!=)", code) is not None


def _called_registration(index, path: str, code: str, name: str) -> Optional[Kind]:
    """``R.register(fn)``, ``R.register("name", fn)``, ``R.register_module(module=Cls)``
    on one line: the project function or class registered."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    statement = tree.body[0] if len(tree.body) == 1 else None
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or dotted(call.func.value) != name:
        return None
    chosen = [k.value for k in call.keywords if k.arg in ("module", "obj")] or call.args[-1:]
    if len(chosen) != 1 or not isinstance(chosen[0], ast.Name):
        return None
    found = index.resolve(path, chosen[0].id)
    return ProjectCallable(found) if found is not None and found.kind in ("class", "function") else None


def _registers(index, path: str, decorator: Form, owner: Definition) -> bool:
    """``@R.register()``, ``@R.register_module()``, ``@R.register`` (``R`` the registry)."""
    func = decorator.func if type(decorator) is Call else decorator
    if type(func) is Ref and "." in func.name:
        head, _, method = func.name.rpartition(".")
    elif type(func) is Attr and type(func.value) is Ref:
        head, method = func.value.name, func.attr
    else:
        return False
    if method not in _REGISTER:
        return False
    found = index.resolve(path, head)
    return found is not None and found.kind == owner.kind and found.path == owner.path and found.name == owner.name
