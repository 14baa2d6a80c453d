"""A function that returns a parameter as passed, and elsewhere calls itself, is read per
call once: its other returns are not read again at every level of the recursion.

On torch's ``_inductor/lowering.py`` the engine read such functions over and over (each
level of the self-call read every return again, to the engine's depth limit): the file
took more than the 120 s a file may take, and was reported as not linted.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from pytorch_perflint.project import loader_values
from pytorch_perflint.project.kinds import Loader
from pytorch_perflint.project.scopes import build_scope, expression_form
from pytorch_perflint.project.values import Where, engine_for

from project_tree import index_of

FILES = {
    "main.py": '''
        import torch

        def lower(x, n):
            if n == 0:
                return x
            if n == 1:
                return lower(lower(x, n - 1), n - 2)
            if n == 2:
                return lower(lower(lower(x, n - 1), n - 2), n - 3)
            return lower(lower(lower(lower(x, n - 1), n - 2), n - 3), n - 4)

        loader = torch.utils.data.DataLoader(range(8), pin_memory=True)
    ''',
}


def test_a_self_calling_pass_through_function_is_read_once_per_call(tmp_path, monkeypatch):
    calls = []
    real = loader_values.LoaderFlow._passed_through

    def counted(self, *args):
        calls.append(1)
        return real(self, *args)

    monkeypatch.setattr(loader_values.LoaderFlow, "_passed_through", counted)
    index = index_of(tmp_path, FILES)
    path = os.path.abspath(tmp_path / "main.py")
    text = index.text(path)
    scope = build_scope(ast.parse(text), {}, path, None)
    form = expression_form(ast.parse("lower(loader, 3)", mode="eval").body, scope)
    kind = engine_for(index).answer(form, Where(path, scope, len(text.splitlines()) + 1)).kind
    assert isinstance(kind, Loader) or kind is not None  # an answer, whatever it is
    assert 0 < len(calls) <= 50  # before: thousands, growing with the depth limit
