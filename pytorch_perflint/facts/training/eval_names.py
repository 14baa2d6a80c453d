"""What names say about evaluation code (TPF203 and its screens, TPF206): functions named
like evaluation, and the names that mean a loop needs gradients.

A ``test_*`` function is pytest's unit test, not evaluation, unless the code calls it
itself: pytest collects tests, nothing in the program calls them, while a research script's
``test_env()`` or ``test_img(model, loader)`` is called from its own loop to score a model.
"""

from __future__ import annotations

import ast
import re
from typing import FrozenSet

from ...analysis.ast_index import per_tree, tree_index
from .classifiers import is_optimizer_name

# Functions that look like evaluation by name: evaluate, validate_epoch, run_eval, test (and
# test_* only when the code calls it: see the module's docstring).
_EVAL_FUNCTION = re.compile(
    r"^(?:eval|evaluate|evaluation|valid|validate|validation|val|test|infer|inference|predict|sample|sampling)"
    r"(?:_\w*)?$|_(?:eval|evaluate|evaluation|valid|validate|validation|val|test|inference|predict|sample|sampling)$"
)


# A function taking a parameter named like a model (``forward_calls.MODEL_NAME``): a text
# screen for helpers whose callers may put that model in eval mode. ``def`` itself is
# matched case-sensitively, as Python spells it: a pattern starting with a literal is
# searched for about 3x faster (0.37 -> 0.13 s over torch's modules).
MODEL_PARAM = re.compile(r"(?-i:def)\s+\w+\s*\([^)]*?\b(?:\w*_)?(?:model|net|network)\w*\s*[,):=]", re.IGNORECASE)


def is_eval_function_name(name: str, called: bool = False) -> bool:
    """Named like evaluation; ``called``: the module calls a function of that name (which
    makes a ``test_*`` function evaluation code rather than a pytest test)."""
    lowered = name.lower().lstrip("_")
    if lowered.endswith("_step") or (lowered.startswith("test_") and not called):
        return False
    return bool(_EVAL_FUNCTION.search(lowered))


def is_test_name(name: str) -> bool:
    """A name pytest would collect as a test function (only those need ``called``)."""
    return name.lower().lstrip("_").startswith("test_")


def called_in_text(name: str, source: str) -> bool:
    """The text calls ``name`` (``test_env()``, ``self.test_env(``) other than in its
    ``def``: asked only of ``test_*`` names (a text screen: a call in a comment counts)."""
    if not is_test_name(name):
        return False
    calls = len(re.findall(rf"(?<!\w){re.escape(name)}\s*\(", source))
    return calls > len(re.findall(rf"\bdef\s+{re.escape(name)}\s*\(", source))


@per_tree
def called_names(tree: ast.Module) -> FrozenSet[str]:
    """The names the module calls, by the last part of the callee (``f(...)``, ``x.f(...)``)."""
    out = set()
    for call in tree_index(tree).calls:
        func = call.func
        if isinstance(func, ast.Name):
            out.add(func.id)
        elif isinstance(func, ast.Attribute):
            out.add(func.attr)
    return frozenset(out)


# Hooks that frameworks (Lightning, HF) already run under no_grad.
FRAMEWORK_HOOKS = frozenset(
    "validation_step test_step predict_step validation_epoch_end test_epoch_end on_validation_epoch_end "
    "on_test_epoch_end prediction_step evaluation_loop prediction_loop".split()
)
GRAD_ATTRS = frozenset(
    {
        "grad",
        "requires_grad",
        "requires_grad_",
        "enable_grad",
        "retain_grad",
        "zero_grad",
        "register_hook",
        "backward",
        "jacobian",
        "hessian",
        "vjp",
        "jvp",
    }
)


def needs_grad_name(name: str) -> bool:
    """Names that mean a loop trains: an optimizer, a loss scaler (timm's NativeScaler
    runs backward and step when called), a gradient."""
    lowered = name.lower()
    return is_optimizer_name(name) or "scaler" in lowered or lowered in GRAD_ATTRS
