"""The engine takes the linted file's own functions from the tree the screens parsed
(``bodies.offer_tree``) instead of parsing each one again from its lines, and the project
index keeps the last texts it read (``sources.RecentTexts``). Both must give exactly what
the reads they replace give: the same node (line numbers, columns, no decorators, as a
parse of the definition's own lines has none), and a file's new text once it changed."""

from __future__ import annotations

import ast
import os
import textwrap
import time

import pytest

from pytorch_perflint.project import bodies
from pytorch_perflint.project.sources import RecentTexts

TEXT = textwrap.dedent(
    '''
    import torch

    @torch.no_grad()
    def evaluate(model, loader):
        for batch in loader:
            model(batch)

    class Runner:
        @property
        def size(self):
            return 3

        @staticmethod
        @torch.no_grad()
        def infer(net, x):
            return net(x)

        async def fetch(self, url):
            return url

        def nested(self):
            def inner(y):
                """text
    at the first column"""
                return y
            return inner

    @dataclass
    class Config:
        lr: float = 0.1

    try:
        import numpy
    except ImportError:
        def fallback(x):
            return x
    else:
        with open(__file__) as handle:
            class Kept:
                pass
    match numpy:
        case None:
            def missing():
                return None
    '''
)


def _definitions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node


def _located(text: str, node: ast.AST):
    bodies._located.cache_clear()
    return bodies.locate(text, node.lineno, node.end_lineno, node.name, isinstance(node, ast.ClassDef))  # type: ignore[attr-defined]


def test_a_definition_from_the_offered_tree_is_the_one_its_lines_parse_to() -> None:
    tree = ast.parse(TEXT)
    found = list(_definitions(tree))
    assert len(found) == 11
    parsed = [_located(TEXT, node) for node in found]  # nothing offered: each from its own lines
    bodies.offer_tree(TEXT, tree)
    try:
        offered = [_located(TEXT, node) for node in found]
        taken = [bodies._from_offered(TEXT, n.lineno, n.name, isinstance(n, ast.ClassDef)) for n in found]
    finally:
        bodies.offer_tree(None, None)
    assert all(node is not None for node in taken)  # each answered from the tree, not parsed
    for before, after in zip(parsed, offered):
        assert before is not None and after is not None
        assert ast.dump(after, include_attributes=True) == ast.dump(before, include_attributes=True)
    # The offered tree itself is left as it was: its decorators are still there.
    assert {n.name: len(n.decorator_list) for n in found if n.decorator_list} == {"evaluate": 1, "size": 1, "infer": 2, "Config": 1}


def test_another_text_is_not_answered_from_the_offered_tree() -> None:
    tree = ast.parse(TEXT)
    edited = TEXT.replace("return 3", "return 4")
    bodies.offer_tree(TEXT, tree)
    try:
        size = next(n for n in _definitions(ast.parse(edited)) if n.name == "size")
        node = _located(edited, size)
    finally:
        bodies.offer_tree(None, None)
    assert node is not None
    assert node.body[0].value.value == 4  # type: ignore[attr-defined]


def test_recent_texts_read_a_changed_file_again(tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n", encoding="utf-8")
    recent = RecentTexts(size=2)
    first = recent.read(str(path))
    assert first == "x = 1\n"
    assert recent.read(str(path)) is first  # unchanged: the same string, not read again
    path.write_text("x = 22\n", encoding="utf-8")
    stamp = time.time() + 5
    os.utime(path, (stamp, stamp))
    assert recent.read(str(path)) == "x = 22\n"


def test_recent_texts_keep_only_the_last_few(tmp_path) -> None:
    recent = RecentTexts(size=2)
    paths = []
    for n in range(3):
        path = tmp_path / f"m{n}.py"
        path.write_text(f"x = {n}\n", encoding="utf-8")
        paths.append(str(path))
        recent.read(str(path))
    assert list(recent._kept) == paths[1:]


@pytest.mark.parametrize("missing", ["absent.py"])
def test_recent_texts_of_a_missing_file_is_none(tmp_path, missing) -> None:
    assert RecentTexts().read(str(tmp_path / missing)) is None


def test_a_module_read_again_for_its_call_sites_is_the_offered_tree(tmp_path, monkeypatch) -> None:
    """``Details.uses`` and ``method_calls`` of the linted module read the offered tree
    (not a second parse) and find the same call sites as a parse of its text."""
    from pytorch_perflint.project import ProjectIndex, details

    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "helpers.py").write_text("def fit(x):\n    return x\n", encoding="utf-8")
    text = "from helpers import fit\n\nclass Loop:\n    def run(self, xs):\n        for x in xs:\n            fit(x)\n            self.learn(x)\n\n    def learn(self, x):\n        return x\n"
    path = tmp_path / "train.py"
    path.write_text(text, encoding="utf-8")
    expected = (ProjectIndex(str(tmp_path)).uses(str(path)), ProjectIndex(str(tmp_path)).method_calls("learn"))
    assert expected[0] and expected[1]
    parsed: list = []
    real = details.parse
    monkeypatch.setattr(details, "parse", lambda source, *a: parsed.append(source) or real(source, *a))
    index = ProjectIndex(str(tmp_path))
    bodies.offer_tree(text, ast.parse(text))
    try:
        found = (index.uses(str(path)), index.method_calls("learn"))
    finally:
        bodies.offer_tree(None, None)
    assert found == expected
    assert text not in parsed  # the linted module itself was not parsed again
