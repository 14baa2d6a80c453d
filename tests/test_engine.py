"""The engine: name resolution, suppression, syntax errors, crash isolation, fixer safety."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path
from typing import ClassVar

import libcst as cst
import pytest

from pytorch_perflint import engine, suppression
from pytorch_perflint.analysis.calls import MISSING, argument
from pytorch_perflint.analysis.values import UNKNOWN
from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.suppression import noqa_comments
from pytorch_perflint.fixer import fix_source
from pytorch_perflint.project.linted import runs_on_accelerator
from pytorch_perflint.rule import Rule
from pytorch_perflint.testing import settings_with
from pytorch_perflint.types import Applicability

from fix_rules import SlowCall


class RecordNames(Rule):
    """Test rule: reports every call with the qualified name it resolves to."""

    code = "TPF900"
    name = "record-names"
    message = "call"
    seen: ClassVar[list] = []

    def visit_Call(self, node: cst.Call) -> None:
        RecordNames.seen.append(self.context.qualname(node.func))


def resolve(source: str) -> list:
    RecordNames.seen = []
    lint_source(source, Path("x.py"), Settings(), rules=[RecordNames])
    return RecordNames.seen


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch as th\nth.nn.DataParallel(m)\n", "torch.nn.DataParallel"),
        ("from torch.utils import data\ndata.DataLoader(ds)\n", "torch.utils.data.DataLoader"),
        ("from torch.utils.data.dataloader import DataLoader as DL\nDL(ds)\n", "torch.utils.data.DataLoader"),
        ("import torch.nn as nn\nnn.modules.conv.Conv2d(1, 2, 3)\n", "torch.nn.Conv2d"),
        ("import torch.utils.data\ntorch.utils.data.DataLoader(ds)\n", "torch.utils.data.DataLoader"),
        ("def f():\n    from torch import nn\n    nn.DataParallel(m)\n", "torch.nn.DataParallel"),
        ("try:\n    import torch\nexcept ImportError:\n    torch = None\ntorch.nn.DataParallel(m)\n", "torch.nn.DataParallel"),
    ],
)
def test_qualified_names_follow_imports(source, expected):
    assert expected in resolve(source)


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ndef f(torch):\n    torch.nn.DataParallel(m)\n",
        "from torch.nn import DataParallel\ndef f():\n    DataParallel = object\n    DataParallel(m)\n",
        "import torch\nfor torch in items:\n    torch.nn.DataParallel(m)\n",
        "from .torch import nn\nnn.DataParallel(m)\n",
        "nn.DataParallel(m)\n",
        "import torch\nclass A:\n    torch = None\n    def f(self):\n        return torch.nn.DataParallel(m)\n",
    ],
)
def test_shadowed_or_unknown_names_do_not_resolve_to_torch(source):
    names = resolve(source)
    if "class A" in source:
        # The class attribute does not shadow the module import inside methods.
        assert "torch.nn.DataParallel" in names
    else:
        assert "torch.nn.DataParallel" not in names


def _call(source: str) -> cst.Call:
    return cst.parse_expression(source)  # type: ignore[return-value]


def test_argument_reads_keywords_positions_and_known_dicts():
    assert argument(_call("f(ds, 1, False, None, None, 3)"), "num_workers", 5).value == 3
    assert argument(_call("f(ds, num_workers=0)"), "num_workers", 5).value == 0
    assert argument(_call("f(ds)"), "num_workers", 5).value is MISSING
    assert argument(_call("f(ds, **kw)"), "num_workers", 5).value is UNKNOWN
    assert argument(_call("f(*a)"), "num_workers", 5).value is UNKNOWN
    assert argument(_call("f(ds, **{'num_workers': 2})"), "num_workers", 5).value == 2
    assert argument(_call("f(ds, **dict(num_workers=0))"), "num_workers", 5).value == 0
    assert argument(_call("f(ds, **{'batch_size': 2})"), "num_workers", 5).value is MISSING
    assert argument(_call("f(ds, num_workers=args.n)"), "num_workers", 5).value is UNKNOWN


def test_noqa_comments_are_read_from_comments_only():
    source = "a = 1  # noqa: TPF101, TPF102\nb = '# noqa'\nc = 2  # noqa\n"
    assert noqa_comments(source) == {1: frozenset({"TPF101", "TPF102"}), 3: None}


DP = "import torch\nmodel = torch.nn.DataParallel(net)\n"


def test_noqa_suppresses_by_code_and_bare():
    settings = Settings()
    assert [d.code for d in lint_source(DP, Path("x.py"), settings).diagnostics] == ["TPF501"]
    assert lint_source(DP.rstrip() + "  # noqa: TPF501\n", Path("x.py"), settings).diagnostics == []
    assert lint_source(DP.rstrip() + "  # noqa\n", Path("x.py"), settings).diagnostics == []
    other = lint_source(DP.rstrip() + "  # noqa: TPF101\n", Path("x.py"), settings).diagnostics
    assert [d.code for d in other] == ["TPF501"]
    assert lint_source("# pytorch-perflint: noqa\n" + DP, Path("x.py"), settings).diagnostics == []


def test_the_file_wide_noqa_is_found_as_its_expression_finds_it():
    """``file_noqa`` (a search from each ``#``) answers as ``FILE_NOQA.search`` does: only
    blanks before the ``#`` on its line, nothing but blanks after ``noqa``, any case."""
    texts = [
        "# pytorch-perflint: noqa\n",
        "x = 1\n \t#\tPyTorch-PerfLint:noqa \t\ny = 2\n",
        "x = 1  # pytorch-perflint: noqa\n",
        "# # pytorch-perflint: noqa\n",
        "  # pytorch-perflint: noqa: TPF101\n",
        "s = '''\n# pytorch-perflint: noqa\n'''\n",
        "\r# pytorch-perflint: noqa\n",
        "# pytorch-perflint: noqa\r\n",
        "x\n# pytorch-perflint: noqa",
        "\u00e9 = 1\n  # pytorch-perflint: NOQA\n",
        "# pytorch-perflint: noqa x\n# pytorch-perflint: noqa\n",
        "",
    ]
    for text in texts:
        assert suppression.file_noqa(text) is (suppression.FILE_NOQA.search(text) is not None), text
    assert [suppression.file_noqa(t) for t in texts[:4]] == [True, True, False, False]


def test_unused_noqa_is_reported_only_when_selected():
    source = "import torch\nx = 1  # noqa: TPF501\n"
    assert lint_source(source, Path("x.py"), Settings()).diagnostics == []
    found = lint_source(source, Path("x.py"), settings_with({"extend_select": ("TPF002",)})).diagnostics
    assert [(d.code, d.location.row) for d in found] == [("TPF002", 2)]


def test_unused_noqa_in_a_file_no_rule_could_fire_in_is_still_checked():
    """No rule's trigger occurs, so the file is never parsed by LibCST: the unused noqa and
    a syntax error must still be found."""
    settings = settings_with({"extend_select": ("TPF002",)})
    source = "x = 1  # noqa: TPF101, E501\ny = 2  # noqa\n"
    found = lint_source(source, Path("x.py"), settings).diagnostics
    assert [(d.code, d.location.row, d.message) for d in found] == [
        ("TPF002", 1, "Unused `noqa` directive (non-matching: TPF101)")
    ]
    broken = lint_source("x = (  # noqa: TPF101\n", Path("x.py"), settings).diagnostics
    assert [d.code for d in broken][0] == "TPF001"


def test_syntax_error_is_tpf001_with_its_position():
    found = lint_source("import torch\ndef f(:\n    pass\n", Path("x.py"), Settings()).diagnostics
    assert [d.code for d in found] == ["TPF001"]
    assert found[0].location.row == 2


def test_clean_file_without_triggers_still_gets_syntax_check():
    assert lint_source("x = (\n", Path("x.py"), Settings()).diagnostics[0].code == "TPF001"
    assert lint_source("x = 1\n", Path("x.py"), Settings()).diagnostics == []


def test_locations_are_one_based_and_cover_the_node():
    (diagnostic,) = lint_source(DP, Path("x.py"), Settings()).diagnostics
    assert (diagnostic.location.row, diagnostic.location.column) == (2, 9)
    assert (diagnostic.end_location.row, diagnostic.end_location.column) == (2, 35)


class Crashes(Rule):
    """Test rule that crashes on every call."""

    code = "TPF901"
    name = "crashes"
    message = "never"

    def visit_Call(self, node: cst.Call) -> None:
        raise RuntimeError("boom")


def test_a_crashing_rule_is_reported_and_the_others_still_run():
    from pytorch_perflint.rules.parallel.tpf501_data_parallel import DataParallel

    result = lint_source(DP, Path("x.py"), Settings(), rules=[Crashes, DataParallel])
    assert [d.code for d in result.diagnostics] == ["TPF501"]
    assert len(result.errors) == 1 and "TPF901" in result.errors[0] and "boom" in result.errors[0]


class AddOne(Rule):
    """Test rule with a safe fix: ``f(x)`` becomes ``f(x, 1)``; unsafe for ``g``."""

    code = "TPF902"
    name = "add-one"
    message = "add one"
    fix_applicability = Applicability.SAFE
    fix_applicabilities = (Applicability.SAFE, Applicability.UNSAFE)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("f", "g") and len(node.args) == 1:
            kind = Applicability.SAFE if node.func.value == "f" else Applicability.UNSAFE
            new = node.with_changes(args=[*node.args, cst.Arg(cst.Integer("1"))])
            self.report(node, fix=self.fix([(node, new)], "add 1", kind, imports=("torch",)))


def test_fixer_applies_safe_fixes_adds_the_import_once_and_is_idempotent():
    source = '"""doc."""\nf(x)\nf(y)\ng(z)\n'
    outcome = fix_source(source, Path("x.py"), Settings(), rules=[AddOne])
    assert outcome.source == '"""doc."""\nimport torch\n\nf(x, 1)\nf(y, 1)\ng(z)\n'
    assert outcome.fixed == 2
    assert [d.location.row for d in outcome.diagnostics] == [6]
    again = fix_source(outcome.source, Path("x.py"), Settings(), rules=[AddOne])
    assert again.source == outcome.source and again.fixed == 0


def test_fixer_applies_unsafe_fixes_only_when_asked_and_respects_unfixable():
    source = "g(z)\n"
    assert fix_source(source, Path("x.py"), Settings(), rules=[AddOne]).source == source
    unsafe = settings_with({"unsafe_fixes": True})
    assert "g(z, 1)" in fix_source(source, Path("x.py"), unsafe, rules=[AddOne]).source


class Breaks(Rule):
    """Test rule whose fix produces code that does not parse."""

    code = "TPF903"
    name = "breaks"
    message = "breaks"
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        # Renders as ``return`` at module level: LibCST accepts it, Python does not.
        self.report(node, fix=self.fix([(node, cst.Return())], "break it"))


def test_a_fix_that_does_not_parse_is_never_applied():
    outcome = fix_source("f(x)\n", Path("x.py"), Settings(), rules=[Breaks])
    assert outcome.source == "f(x)\n"
    assert outcome.fixed == 0
    assert outcome.fix_errors and "does not parse" in outcome.fix_errors[0]


class BreaksBroken(Breaks):
    """Breaks only ``broken(...)`` calls: the other rules' fixes in the round are sound."""

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "broken":
            super().visit_Call(node)


def test_a_refused_fix_does_not_hold_back_the_other_fixes_of_its_round():
    source = "y = slow(1)\nbroken(x)\nz = slow(2)\n"
    outcome = fix_source(source, Path("x.py"), Settings(), rules=[BreaksBroken, SlowCall])
    assert outcome.source == "y = fast(1)\nbroken(x)\nz = fast(2)\n"
    assert outcome.fixed == 2
    (error,) = outcome.fix_errors
    assert "TPF903" in error and "TPF901" not in error and "does not parse" in error
    assert [d.code for d in outcome.diagnostics] == ["TPF903"]


def test_fix_edits_are_reported_as_text_edits():
    (diagnostic,) = [
        d for d in lint_source("f(x)\n", Path("x.py"), Settings(), rules=[AddOne]).diagnostics
    ]
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is Applicability.SAFE
    contents = "".join(edit.content for edit in diagnostic.fix.edits)
    assert "f(x, 1)" in contents and "import torch" in contents


def test_a_literal_dict_changed_in_place_is_no_longer_known():
    from pytorch_perflint.analysis.scope import build_scope

    source = (
        "kw = {'num_workers': 0}\n"
        "other = {'num_workers': 0}\n"
        "def main():\n"
        "    if cuda:\n"
        "        kw.update({'num_workers': 4})\n"
        "    local = {'a': 1}\n"
        "    local['a'] = 2\n"
    )
    module = cst.parse_module(source)
    scope = build_scope(module, None)
    assert scope.lookup_value("other") is not None
    assert scope.lookup_value("kw") is None
    function = build_scope(module.body[2], scope)
    assert function.lookup_value("local") is None
    # A mutation inside a function makes the module-level binding unknown too.
    assert scope.lookup_value("kw") is None and function.lookup_value("kw") is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch as th\nif th.cuda.is_available():\n    pass\n", True),
        ("import torch\nmodel = Net().cuda()\n", True),
        ("d = 'cuda:0'\n", True),
        ("x = y.to(f'cuda:{rank}')\n", True),
        ("import torch as th\nwith th.cuda.amp.autocast():\n    pass\n", True),
        ("import torch\ntorch.cuda.synchronize()\n", True),
        ("import torch\nx = torch.zeros(3, device='mps')\n", True),
        ("import torch\nif torch.accelerator.is_available():\n    pass\n", True),
        ("import torch\nif device == 'cuda':\n    pass\n", False),
        ("import torch\nwith torch.autocast('cpu'):\n    pass\n", False),
        ("s = '#'; m.cuda()\n", True),
        ("# model.cuda()\nx = 1\n", False),
        ("x = 1  # .to('cuda') once we have a GPU\n", False),
        ("s = '#'  # m.cuda()\n", False),
        ("import torch\nx = torch.zeros(3)\n", False),
        # Prose in docstrings is not code either.
        ('"""CPU-only trainer. Note: model.cuda() is deliberately NOT called."""\nimport torch\n', False),
        ("def f(x):\n    \'\'\'Moves ``x`` with x.cuda() when asked.\'\'\'\n    return x\n", False),
        ('"""Doc with a \\""" quote."""\nm.cuda()\n', True),
        ('s = """a"""; t = """b"""\nx.to("cuda")\n', True),
    ],
)
def test_a_lone_file_runs_on_an_accelerator_when_its_own_code_selects_one(source, expected):
    """Without a project, the file's own code decides (RULES.md's model, read from the
    ``ast``: comments and prose never count)."""
    assert runs_on_accelerator(Path("m.py"), source, None, Settings(), None) is expected


@pytest.mark.parametrize(("mode", "expected"), [("always", True), ("never", False)])
def test_the_accelerator_setting_decides_alone(mode, expected):
    settings = dataclasses.replace(Settings(), accelerator=mode)
    assert runs_on_accelerator(Path("m.py"), "x = y.cuda()\n" if not expected else "x = 1\n", None, settings, None) is expected


@pytest.mark.parametrize(
    "source",
    [
        "x = 1  # noqa: TPF101\n",
        's = "# noqa"\n',
        "s = 'it''s'  # NOQA\n",
        'x = """\n# noqa\n"""\n',
        'x = "a \\\n# noqa"\n',
        "y = f'{a!r}'  # noqa: E1, TPF2\n",
        'msg = ("can\'t "\n       "do it")  # noqa: TRY002\n',
        "a = 1  # noqa: TPF101\r\nb = 2 # noqa\r\n",
        "x = '#'  # not a noqa\n",
    ],
)
def test_noqa_lines_read_without_the_tokenizer_agree_with_it(source, monkeypatch):
    fast = noqa_comments(source)
    monkeypatch.setattr(suppression, "_comments_on_noqa_lines", lambda source: None)
    assert fast == noqa_comments(source)


def test_the_garbage_collector_is_paused_while_a_file_is_linted_and_restored(monkeypatch):
    seen = []
    real = engine._lint_source
    monkeypatch.setattr(engine, "_lint_source", lambda *args: seen.append(gc.isenabled()) or real(*args))
    assert gc.isenabled()
    engine.lint_source("x = 1\n", Path("a.py"), Settings())
    assert seen == [False] and gc.isenabled()
    monkeypatch.setattr(engine, "_lint_source", lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        engine.lint_source("x = 1\n", Path("a.py"), Settings())
    assert gc.isenabled()
    gc.disable()
    try:
        monkeypatch.setattr(engine, "_lint_source", real)
        engine.lint_source("x = 1\n", Path("a.py"), Settings())
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()
