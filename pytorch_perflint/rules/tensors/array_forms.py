"""NumPy arrays that come from other definitions: a project function's return, a method of
the enclosing class, an attribute set once in ``__init__`` (TPF401).

The in-file analysis (``numpy_values``) sees expressions; what another function returns or
what ``__init__`` stored is read from the project index (``ctx.project``) as forms. A form
counts as an array only through the same allow-lists (``numpy_api``), so a helper that
returns a list, a ``.shape`` or one of several values stays unknown. Without a project
index (a lone file) nothing here is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst

from ...context import FileContext
from ...project.forms import Attr, Call, Either, Form, Item, Lit, Ref, Unknown
from ...project.resolution import Definition
from .numpy_api import (
    ALWAYS_ARRAY_DRAWS,
    ARRAY_FUNCTIONS,
    ARRAY_METHODS,
    ELEMENTWISE,
    OTHER_ARRAY_FUNCTIONS,
    SHAPE_AS_ARGS,
    SIZED_RANDOM,
    TO_NUMPY_METHODS,
)

if TYPE_CHECKING:
    from ...project.index import ProjectIndex

_MAX_DEPTH = 6
_H5PY_FILES = frozenset({"h5py.File"})
Bindings = Callable[[str], Optional[Form]]


def project_call_returns_array(call: cst.Call, context: FileContext, hidden: frozenset) -> bool:
    """``helper(...)`` (a project function, here or imported) or ``self.method(...)`` whose
    every ``return`` is a known array."""
    definition = _callee(call.func, context, hidden)
    return definition is not None and context.project is not None and _returns_array(definition, context.project, 0)


def project_attribute_is_array(expr: cst.Attribute, context: FileContext, hidden: frozenset) -> bool:
    """``self.name`` (or ``self.part.name``) set once, in ``__init__``, to a known array and
    never assigned again in its class."""
    project = context.project
    if project is None:
        return False
    owner = _owner_class(expr.value, context, hidden)
    if owner is None:
        return False
    return _attribute_form_is_array(owner, expr.attr.value, project, 0)


def function_returns_array(project: "ProjectIndex", definition: Definition) -> bool:
    """Whether every ``return`` of a project function is a known array (what a call of it
    is to TPF401): its project screen asks before LibCST sees the file."""
    return _returns_array(definition, project, 0)


# -- what a cst expression refers to ------------------------------------------------------


def _callee(func: cst.BaseExpression, context: FileContext, hidden: frozenset) -> Optional[Definition]:
    project = context.project
    if project is None:
        return None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        klass = _enclosing_class(func.value.value, context, hidden)
        if klass is not None:
            found = project.resolve(context.path, f"{klass}.{func.attr.value}")
            return found if found is not None and found.kind == "method" else None
    dotted = _dotted(func)
    if dotted is None or dotted.split(".")[0] in hidden or not _module_level(context, dotted.split(".")[0]):
        return None
    found = project.resolve(context.path, dotted)
    return found if found is not None and found.kind == "function" else None


def _owner_class(expr: cst.BaseExpression, context: FileContext, hidden: frozenset) -> Optional[Definition]:
    """The project class whose instance ``expr`` is: ``self`` in a method of a module-level
    class, or ``self.part`` set once in ``__init__`` to ``ProjectClass(...)``."""
    project = context.project
    assert project is not None
    if isinstance(expr, cst.Name):
        klass = _enclosing_class(expr.value, context, hidden)
        if klass is None:
            return None
        found = project.resolve(context.path, klass)
        return found if found is not None and found.kind == "class" else None
    if isinstance(expr, cst.Attribute):
        outer = _owner_class(expr.value, context, hidden)
        if outer is None:
            return None
        body = project.class_body(outer)
        attribute = None if body is None else body.attribute(expr.attr.value)
        if attribute is None or attribute.rebound or type(attribute.form) is not Call:
            return None
        return _resolve_in(project, outer, attribute.form.func, "class")
    return None


def _resolve_in(project: "ProjectIndex", where: Definition, func: Form, kind: str) -> Optional[Definition]:
    """A project definition of ``kind`` that a callee form names in ``where``'s module."""
    if where.path is None or type(func) is not Ref:
        return None
    found = project.resolve(where.path, func.name)
    return found if found is not None and found.kind == kind else None


def _enclosing_class(name: str, context: FileContext, hidden: frozenset) -> Optional[str]:
    """The class ``name`` is the instance of: the first parameter of a method (a function
    straight in the body of a module-level class), not rebound in the method."""
    if name in hidden:
        return None
    ancestors = context.ancestors
    functions = [i for i, node in enumerate(ancestors) if isinstance(node, (cst.FunctionDef, cst.Lambda))]
    if not functions:
        return None
    index = functions[-1]
    method = ancestors[index]
    if not isinstance(method, cst.FunctionDef) or any(isinstance(d.decorator, (cst.Name, cst.Attribute)) and _dotted(d.decorator) in ("staticmethod", "classmethod") for d in method.decorators):
        return None
    params = method.params.posonly_params or method.params.params
    if not params or params[0].name.value != name:
        return None
    chain = [node for node in ancestors[:index] if isinstance(node, (cst.ClassDef, cst.FunctionDef, cst.Lambda))]
    if len(chain) != 1 or not isinstance(chain[0], cst.ClassDef):
        return None  # a nested class or function: the index names module-level classes only
    bindings = context.scope.bindings.get(name)
    if bindings is not None and len(bindings) > 1:
        return None  # `self = ...` somewhere in the method
    return chain[0].name.value


def _module_level(context: FileContext, name: str) -> bool:
    """Whether ``name`` here is the module's own (a def, a class, an import), not a local."""
    scope = context.scope
    first = True
    while scope is not None:
        if scope.is_class and not first:
            scope = scope.parent
            continue
        first = False
        if name in scope.bindings or name in scope.imports:
            return scope.parent is None
        scope = scope.parent
    return False


def _dotted(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        head = _dotted(expr.value)
        return None if head is None else f"{head}.{expr.attr.value}"
    return None


# -- forms --------------------------------------------------------------------------------


def _returns_array(definition: Definition, project: "ProjectIndex", depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    body = project.function_body(definition)
    if body is None or body.is_generator or not body.returns:
        return False
    return all(_form_is_array(form, body.binding, definition, project, depth + 1) for form in body.returns)


def _attribute_form_is_array(owner: Definition, name: str, project: "ProjectIndex", depth: int) -> bool:
    body = project.class_body(owner)
    attribute = None if body is None else body.attribute(name)
    if attribute is None or attribute.rebound:
        return False
    return _form_is_array(attribute.form, _no_bindings, owner, project, depth + 1)


def _form_is_array(form: Form, bindings: Callable, where: Definition, project: "ProjectIndex", depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    kind = type(form)
    if kind is Ref:
        if "." in form.name:
            return False
        bound = bindings(form.name)
        return bound is not None and _form_is_array(bound.form, bindings, where, project, depth + 1)
    if kind is Either:
        return _form_is_array(form.body, bindings, where, project, depth + 1) and _form_is_array(
            form.orelse, bindings, where, project, depth + 1
        )
    if kind is Call:
        return _call_form_is_array(form, bindings, where, project, depth)
    if kind is Attr:
        return form.attr == "T" and _form_is_array(form.value, bindings, where, project, depth + 1)
    if kind is Item:
        return _item_form_is_array(form, bindings, where, project, depth)
    return False


def _call_form_is_array(form: Call, bindings: Callable, where: Definition, project: "ProjectIndex", depth: int) -> bool:
    func = form.func
    name = func.qualname if type(func) is Ref else None
    if name is not None:
        if name in ARRAY_FUNCTIONS or name in OTHER_ARRAY_FUNCTIONS:
            return True
        if name in ELEMENTWISE:
            return any(_form_is_array(arg, bindings, where, project, depth + 1) for arg in form.args[:2])
        if name == "numpy.load":
            path = form.args[0] if form.args else form.keyword("file")
            return type(path) is Lit and isinstance(path.value, str) and path.value.endswith(".npy")
        if name.startswith("numpy.random."):
            return _draw_form_is_array(name[len("numpy.random."):], form)
        return False
    receiver: Optional[Form] = None
    method = ""
    if type(func) is Attr:
        receiver, method = func.value, func.attr
    elif type(func) is Ref and "." in func.name:
        head, _, method = func.name.rpartition(".")
        receiver = Ref(head)
        if head == "self" and where.kind == "method":
            owner = where.name.rpartition(".")[0]
            found = project.resolve(where.path, f"{owner}.{method}")  # type: ignore[arg-type]
            return found is not None and found.kind == "method" and _returns_array(found, project, depth + 1)
    elif type(func) is Ref:
        if bindings(func.name) is not None:
            return False
        found = _resolve_in(project, where, func, "function")
        return found is not None and _returns_array(found, project, depth + 1)
    if receiver is None:
        return False
    if method in TO_NUMPY_METHODS:
        return not form.args
    if method in ARRAY_METHODS:
        return _form_is_array(receiver, bindings, where, project, depth + 1)
    return False


def _draw_form_is_array(method: str, form: Call) -> bool:
    if method in ALWAYS_ARRAY_DRAWS:
        return True
    if method in SHAPE_AS_ARGS:
        return bool(form.args) and not form.star and not form.kwargs
    position = SIZED_RANDOM.get(method)
    if position is None or form.star:
        return False
    size = form.keyword("size")
    if size is None and len(form.args) > position:
        size = form.args[position]
    return size is not None and not (type(size) is Lit and size.value is None)


def _item_form_is_array(form: Item, bindings: Callable, where: Definition, project: "ProjectIndex", depth: int) -> bool:
    """``f["images"][:]`` of an ``h5py.File`` (a dataset read whole or sliced), a field of a
    known (structured) array, or a slice of a known array."""
    value, index = form.value, form.index
    if type(value) is Item and type(value.index) is Lit and isinstance(value.index.value, str):
        if _is_h5py_file(value.value, bindings) and _is_slice(index):
            return True
    if _is_slice(index) or (type(index) is Lit and isinstance(index.value, str)):
        return _form_is_array(value, bindings, where, project, depth + 1)
    return False


def _is_slice(index: Form) -> bool:
    return type(index) is Unknown and index.kind == "slice"


def _is_h5py_file(form: Form, bindings: Callable) -> bool:
    """A name bound to ``h5py.File(...)`` (by ``=`` or ``with ... as``)."""
    if type(form) is not Ref or "." in form.name:
        return False
    bound = bindings(form.name)
    if bound is None:
        return False
    value = bound.form
    if type(value) is Call and type(value.func) is Attr and value.func.attr == "__enter__":
        value = value.func.value  # `with h5py.File(...) as f`: File.__enter__ returns the file
    return type(value) is Call and type(value.func) is Ref and value.func.qualname in _H5PY_FILES


def _no_bindings(name: str) -> None:
    """``__init__``'s locals are not summarised: a name an attribute form reads is unknown."""
    return None
