"""What a parameter gets across the project: each known caller's argument, or the default
where a caller passes none (a mixin of ``resolution.Resolution``, which knows the callers)."""

from __future__ import annotations

from typing import List, Optional, Tuple

from .forms import Call, Form, Lit, Ref
from .summary import CallSite, Param
from .definition import Definition
from .forwarded_calls import MAX_FORWARDS, forwarding_callers

Site = Tuple[str, CallSite]  # (the calling module's path, the call)

# Decorators that leave a function's parameters as written.
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property", "functools.lru_cache", "functools.cache"})
# Decorator calls that keep the function's signature: torch's grad modes wrap it with
# ``functools.wraps`` and pass ``*args, **kwargs`` through (``@torch.no_grad()``).
_GRAD_MODES = frozenset({"torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"})


def plain_decorator(decorator) -> bool:
    """A decorator after which callers' arguments still fill the function's parameters."""
    if isinstance(decorator, Ref):
        return (decorator.qualname or decorator.name) in _PLAIN_DECORATORS
    func = getattr(decorator, "func", None)
    return isinstance(decorator, Call) and isinstance(func, Ref) and func.qualname in _GRAD_MODES and not decorator.star and not decorator.dstar


class CallerArguments:
    """Parameters read off the calls ``callers`` (``Resolution``'s) lists."""

    def _parameter(self, definition: Definition, parameter: str) -> Optional[Tuple[Param, Optional[int]]]:
        """The parameter of a function, method or class (its ``__init__``) that callers fill,
        with its position among those they pass positionally; None when its value cannot be
        read off the calls (a decorator may change the signature, ``*args``/``**kwargs``)."""
        function = definition.function
        skip_first = definition.kind == "method"
        if definition.kind == "class":
            if definition.klass is None or definition.klass.decorators:
                return None  # @dataclass and friends write their own __init__
            function = definition.klass.method("__init__")
            skip_first = True
        if function is None or any(not self._plain(d) for d in function.decorators):
            return None
        params = function.params[1:] if skip_first else function.params
        param = next((p for p in params if p.name == parameter), None)
        if param is None or param.kind in ("vararg", "kwarg"):
            return None
        position = None
        if param.kind == "positional":
            position = [p for p in params if p.kind == "positional"].index(param)
        return param, position

    def never_passed(self, definition: Definition, parameter: str) -> bool:
        """True only when every caller is known and none passes ``parameter`` (by name,
        by position, or possibly through ``*args``/``**kwargs``)."""
        found = self._parameter(definition, parameter)
        sites = None if found is None else self.callers(definition)  # type: ignore[attr-defined]
        if found is None or sites is None:
            return False
        _, position = found
        for _, site in sites:
            if site.star or site.dstar or parameter in site.keywords:
                return False
            if position is not None and site.positional > position:
                return False
        return True

    def argument_values(self, definition: Definition, parameter: str) -> Optional[Tuple[Form, ...]]:
        """The forms ``parameter`` gets across the project: what each caller passes, and the
        default where a caller passes nothing. None when a caller is not known or passes
        ``*args``/``**kwargs`` (then any value is possible)."""
        found = self.arguments(definition, parameter)
        return None if found is None else tuple(form for _, _, form in found)

    def arguments(
        self, definition: Definition, parameter: str, sites: Optional[Tuple[Site, ...]] = None
    ) -> Optional[Tuple[Tuple[str, Optional[CallSite], Form], ...]]:
        """As ``argument_values``, with where each form is read: ``(calling module, call,
        form)``, the call None for the default (a form of the definition's module).
        ``sites``: the calls to read instead of ``callers`` (a public method's)."""
        found = self._parameter(definition, parameter)
        if found is not None and sites is None:
            sites = self.callers(definition, public=True)  # type: ignore[attr-defined]
        if found is None or sites is None or definition.path is None:
            return None
        param, position = found
        values: List[Tuple[str, Optional[CallSite], Form]] = []
        sites = self._forwarded(sites)
        if sites is None:
            return None
        for path, site in sites:
            arguments = site.arguments
            if site.star or site.dstar or arguments is None:
                return None
            if parameter in site.keywords:
                value, where = arguments.keyword(parameter), site
            elif position is not None and site.positional > position:
                value, where = (arguments.args[position] if position < len(arguments.args) else None), site
            else:
                value, where, path = param.default, None, definition.path
                if site.command_line and type(value) is Lit and type(value.value) is bool:
                    return None  # an option made to turn a feature on (or off): not known either way
            if value is None:
                return None
            values.append((path, where, value))
        if not sites and param.default is not None:
            values.append((definition.path, None, param.default))
        return tuple(values)

    def _forwarded(self, sites: Tuple[Site, ...], depth: int = 0) -> Optional[Tuple[Site, ...]]:
        """``sites`` with each call that hands on its function's own ``*args, **kwargs``
        (``super().__init__(*args, **kwargs)``) replaced by that function's calls
        (``forwarded_calls``); None when such a call's arguments cannot be followed."""
        if not any(site.star or site.dstar for _, site in sites):
            return sites
        out: List[Site] = []
        for path, site in sites:
            if not (site.star or site.dstar):
                out.append((path, site))
                continue
            more = forwarding_callers(self, path, site) if depth < MAX_FORWARDS else None  # type: ignore[arg-type]
            more = None if more is None else self._forwarded(more, depth + 1)
            if more is None:
                return None
            out.extend(more)
        return tuple(out)

    _plain = staticmethod(plain_decorator)
