"""Each outermost question to the value engine has a budget of steps (``value_memo.MAX_STEPS``).

Local names are not memoised, so a function that rebinds names on many ``if`` arms, each
binding reading the name before it, is walked once per path through it: exponential in the
number of rebindings. FastChat's ``generate_stream`` (a decoding loop rebinding ``out``,
``logits``, ``past_key_values``, ``token`` under ``if`` arms) made one file take more than the
120 s a file may take, so it was reported as not linted. Past the budget the answer is
unknown (silent), nothing computed after that is memoised, and later questions read in the
same scope are unknown at once.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from pytorch_perflint.project.kinds import Array, Unknown
from pytorch_perflint.project.scopes import build_scope, expression_form
from pytorch_perflint.project.values import Where, engine_for

from project_tree import index_of


def _chain(length: int) -> str:
    """``a{i}`` bound on both arms of an ``if`` from ``a{i-1}`` read twice: 4**length reads."""
    lines = ["import numpy as np", "", "", "def mix(flag):", "    a0 = np.zeros(3)"]
    for i in range(1, length + 1):
        lines += [f"    if flag == {i}:", f"        a{i} = a{i - 1} + a{i - 1}", "    else:", f"        a{i} = a{i - 1} * a{i - 1}"]
    lines.append(f"    return a{length}")
    return "\n".join(lines) + "\n"


def _ask(tmp_path: Path, length: int, names=None):
    index = index_of(tmp_path, {"main.py": _chain(length)})
    path = os.path.abspath(tmp_path / "main.py")
    text = index.text(path)
    function = ast.parse(text).body[-1]
    scope = build_scope(function, dict(index.summary(path).aliases), path, "mix")
    engine = engine_for(index)
    where = Where(path, scope, len(text.splitlines()), Where(path))
    answers = []
    for name in names or [f"a{length}"]:
        kind = engine.kind_of(expression_form(ast.parse(name, mode="eval").body, scope), where)
        answers.append((kind, engine._steps))
    return answers


def test_a_short_chain_is_answered_within_the_budget(tmp_path):
    [(kind, steps)] = _ask(tmp_path, 4)
    assert kind == Array()
    assert 0 < steps < 1_000


def test_a_long_chain_stops_at_the_budget_and_its_scope_is_not_walked_again(tmp_path):
    (first, spent), (second, again), (third, _) = _ask(tmp_path, 14, ["a14", "a13", "a0"])
    assert type(first) is Unknown
    budget = engine_for(None).max_steps
    assert budget < spent < budget + 100  # stopped at the budget, not 4**14 reads
    assert type(second) is Unknown and again == 0  # the scope is known to be tangled
    assert type(third) is Unknown  # every question read there, even a cheap one


def test_answers_cut_short_are_not_memoised(tmp_path):
    index = index_of(tmp_path, {"main.py": _chain(14), "other.py": "from main import mix\nx = mix(1)\n"})
    path = os.path.abspath(tmp_path / "other.py")
    text = index.text(path)
    scope = build_scope(ast.parse(text), {}, path, None)
    engine = engine_for(index)
    kind = engine.kind_of(expression_form(ast.parse("x", mode="eval").body, scope), Where(path, scope, 3))
    assert type(kind) is Unknown
    assert not any(key[0] == "returns" for key in engine._memo)  # `mix`'s returns were cut short


def test_a_function_whose_returns_ran_out_is_not_walked_again(tmp_path):
    index = index_of(tmp_path, {"main.py": _chain(14)})
    path = os.path.abspath(tmp_path / "main.py")
    engine = engine_for(index)
    mix = index.resolve(path, "mix")
    assert type(engine.returns(mix)) is Unknown
    assert engine._steps > engine.max_steps
    assert type(engine.returns(mix)) is Unknown and engine._steps == 0  # its scope is tangled

