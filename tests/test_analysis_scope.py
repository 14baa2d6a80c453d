"""Scope lookups: `global` declarations at module level and in functions."""

from __future__ import annotations

import threading

import libcst as cst

from pytorch_perflint.analysis.scope import build_scope


def _function_scope(source: str):
    module = cst.parse_module(source)
    outer = build_scope(module, None)
    function = next(node for node in module.body if isinstance(node, cst.FunctionDef))
    return build_scope(function, outer)


def _lookup_with_deadline(scope, name: str, seconds: float = 10.0):
    """Run the lookup in a daemon thread so a regression fails the test instead of hanging."""
    answer = []
    worker = threading.Thread(target=lambda: answer.append(scope.lookup_import(name)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"lookup_import({name!r}) did not return within {seconds} s"
    return answer[0]


def test_module_level_global_meeting_a_function_global_terminates():
    # Issue 11 item 1: this spun forever in _module_scope.
    source = "from torch.utils.data import DataLoader\nglobal x\ndef f():\n    global x\n    x()\n"
    assert _lookup_with_deadline(_function_scope(source), "x") is None


def test_global_in_a_function_still_resolves_a_module_import():
    source = "import torch as x\nglobal x\ndef f():\n    global x\n    x.zeros(1)\n"
    assert _lookup_with_deadline(_function_scope(source), "x") == "torch"
    plain = "import torch as x\ndef f():\n    global x\n    x.zeros(1)\n"
    assert _lookup_with_deadline(_function_scope(plain), "x") == "torch"
