"""What one Python module holds, as other modules' rules need to know it.

A summary is a pure function of the module's text: nothing in it depends on where the file
sits or on other files (imports are kept as written and resolved by the index), so a cache
can keep it for as long as the file's ``stat`` is unchanged. Every value is a frozen
dataclass of tuples and literals, picklable and JSON-able (``codec``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from .codec import serialisable
from .forms import Call, Form


@serialisable
@dataclass(frozen=True)
class ImportRecord:
    """One imported name.

    ``import a.b as c``: module ``a.b``, name None, asname ``c``. ``from ..m import x``:
    level 2, module ``m``, name ``x``. ``from m import *``: name ``*``. ``module_scope``
    is false for an import inside a function or class body (it binds no module name, but
    still runs when the function does).
    """

    module: str
    level: int
    name: Optional[str]
    asname: Optional[str]
    line: int
    module_scope: bool = True

    @property
    def bound(self) -> str:
        """The local name the import binds (``a`` for ``import a.b``)."""
        if self.asname:
            return self.asname
        if self.name is not None:
            return self.name
        return self.module.split(".")[0]

    @property
    def star(self) -> bool:
        return self.name == "*"


@serialisable
@dataclass(frozen=True)
class Binding:
    """A name bound once in its scope; ``form`` is its value (``Unknown`` when it is bound
    by a ``for``, ``with``, unpacking...). ``mutated``: a statement changes it in place
    (``kwargs.update(...)``, ``cfg["device"] = ...``), so its form may be incomplete."""

    name: str
    form: Form
    line: int
    mutated: bool = False


@serialisable
@dataclass(frozen=True)
class Param:
    """A parameter; ``default`` is None when it has none. ``kind``: ``positional`` (also
    positional-only), ``keyword`` (keyword-only), ``vararg`` (``*args``), ``kwarg``."""

    name: str
    kind: str
    default: Optional[Form] = None
    positional_only: bool = False


@serialisable
@dataclass(frozen=True)
class StepCall:
    """A ``receiver.step(...)`` call: the receiver as written (subscripts dropped:
    ``self.opts[0]`` is ``self.opts``) and how many positional arguments it gets. Which
    receivers are optimizers is the training rules' call."""

    receiver: str
    args: int
    line: int


@serialisable
@dataclass(frozen=True)
class FunctionSummary:
    """A function or method: where it is, how it is called and decorated.

    ``backward``: the body (nested functions included) calls ``.backward()``,
    ``.manual_backward()`` or ``torch.autograd.backward``; ``steps``: its ``.step()``
    calls. What it returns is read on demand (``ProjectIndex.function_body``).
    """

    name: str
    line: int
    end_line: int
    params: Tuple[Param, ...]
    decorators: Tuple[Form, ...] = ()
    backward: bool = False
    steps: Tuple[StepCall, ...] = ()
    is_async: bool = False

    def param(self, name: str) -> Optional[Param]:
        return next((p for p in self.params if p.name == name), None)


@serialisable
@dataclass(frozen=True)
class Attribute:
    """``self.name = form`` in ``__init__``. ``rebound``: assigned again there or in another
    method (then its value at a use is not known from ``form`` alone)."""

    name: str
    form: Form
    line: int
    rebound: bool = False


@serialisable
@dataclass(frozen=True)
class ClassSummary:
    """A class: its bases as forms (``Ref("nn.Module", "torch.nn.Module")``), methods and
    class-body bindings. Its ``__init__`` attributes are read on demand
    (``ProjectIndex.class_body``)."""

    name: str
    line: int
    end_line: int
    bases: Tuple[Form, ...] = ()
    decorators: Tuple[Form, ...] = ()
    methods: Tuple[FunctionSummary, ...] = ()
    bindings: Tuple[Binding, ...] = ()

    def method(self, name: str) -> Optional[FunctionSummary]:
        return next((m for m in self.methods if m.name == name), None)


@serialisable
@dataclass(frozen=True)
class CallSite:
    """A use of a name that may be a project function or class.

    ``callee`` is as written: ``conv_bn``, ``layers.conv_bn``, ``self._make_layer``,
    ``super().__init__``. ``called`` is false for a use that is not a call (the function
    escapes as a value: ``partial(conv_bn)``, ``fn = conv_bn``), after which its callers
    are not all known. ``arguments`` is the call's form (what each argument is, as far as
    forms go); ``positional``/``keywords``/``star``/``dstar`` count them exactly. ``caller`` is the enclosing function (``Net.forward``; ``""`` at
    module level); ``contexts`` the ``with`` items around the site inside it
    (``torch.no_grad``); ``in_loop``: inside a loop or comprehension there.
    ``command_line``: the function handed to ``fire.Fire(fn)``, which calls it with its
    parameters from the command line: read as a call that passes nothing (the defaults, as
    an ``argparse`` option's; a ``False`` default is not kept).
    """

    callee: str
    line: int
    caller: str = ""
    positional: int = 0
    keywords: Tuple[str, ...] = ()
    star: bool = False
    dstar: bool = False
    called: bool = True
    contexts: Tuple[str, ...] = ()
    in_loop: bool = False
    arguments: Optional[Call] = None
    command_line: bool = False


@serialisable
@dataclass(frozen=True)
class Evidence:
    """Where and how a module selects an accelerator (``torch.cuda.is_available()``)."""

    line: int
    what: str


@serialisable
@dataclass(frozen=True)
class ModuleSummary:
    """One module. ``ok`` is false when it could not be read or parsed (``error`` says
    why); every fact of such a module is unknown, not absent.

    ``bindings`` are the module-level names bound exactly once by an assignment or a
    ``for``/``with``; ``rebound`` the names bound more than once in any way (an import and an
    assignment, two imports, ``global``), whose value is not known. ``exports`` is
    ``__all__`` when it is a literal. ``aliases`` maps the module-level names its imports
    bind to dotted names (``np`` -> ``numpy``; relative ones keep their dots). ``extras`` holds what registered summarisers
    returned, by key (see ``summarize.register_summarizer``).
    """

    ok: bool
    error: Optional[str] = None
    imports: Tuple[ImportRecord, ...] = ()
    functions: Tuple[FunctionSummary, ...] = ()
    classes: Tuple[ClassSummary, ...] = ()
    bindings: Tuple[Binding, ...] = ()
    rebound: Tuple[str, ...] = ()
    exports: Optional[Tuple[str, ...]] = None
    aliases: Tuple[Tuple[str, str], ...] = ()
    accelerator: Optional[Evidence] = None
    extras: Tuple[Tuple[str, Any], ...] = ()
    # Folders its top-level code puts on ``sys.path``: (line, folder relative to its own).
    added_paths: Tuple[Tuple[int, str], ...] = ()

    def function(self, name: str) -> Optional[FunctionSummary]:
        return next((f for f in self.functions if f.name == name), None)

    def klass(self, name: str) -> Optional[ClassSummary]:
        return next((c for c in self.classes if c.name == name), None)

    def binding(self, name: str) -> Optional[Binding]:
        return next((b for b in self.bindings if b.name == name), None)

    def extra(self, key: str, default: Any = None) -> Any:
        return next((value for k, value in self.extras if k == key), default)


def failed(error: str) -> ModuleSummary:
    """The summary of a module that cannot be read or parsed."""
    return ModuleSummary(ok=False, error=error)
