"""A ``train`` method handed data (``engine.train(x, y)``, ``solver.train(batch)``): a
call that may run one training step of a project trainer, unlike ``nn.Module.train(mode)``
(no argument, a literal, ``not flag``, ``mode``, or a flag named ``...training``:
``model.train(self.training)``, ``net.train(was_training)``). The training screens take
it for a step named like one (``screens.could_train_text``, ``loop_calls_step_by_name``);
whether it trains is the value engine's dispatch, as for any project call.
"""

from __future__ import annotations

import ast
import re

from ...analysis.ast_index import ast_dotted

# The text screen's form of ``handed_data`` (wider: any first argument but those).
TRAIN_WITH_DATA = re.compile(r"\.train\((?!\s*(?:\)|True\b|False\b|mode\b|not\b|[\w.]*training\s*\)))")


def handed_data(call: ast.Call) -> bool:
    """``x.train(...)`` given data, not a mode (see the module's docstring)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "train" or not call.args:
        return False
    first = call.args[0]
    if isinstance(first, (ast.Starred, ast.Constant)):
        return False
    if len(call.args) == 1 and not call.keywords:
        if isinstance(first, (ast.UnaryOp, ast.Compare, ast.BoolOp)):
            return False
        spelled = ast_dotted(first) or ""
        return spelled != "mode" and not spelled.lower().endswith("training")
    return True
