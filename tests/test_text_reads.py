"""Facts that look for a word in other modules' texts read them through ``text_naming``: a
module that does not spell the word is no dependency of the answer (a comment edit there
leaves a cached result valid), and a module that cannot be read still counts as before."""

from __future__ import annotations

from pathlib import Path

from pytorch_perflint.facts.dataloader.caller_scopes import mentions as _mentions
from pytorch_perflint.project import ProjectIndex
from pytorch_perflint.project.choices import _lacks
from pytorch_perflint.project.index import TEXT_OF, TEXTS_NAMING
from pytorch_perflint.project.reads import spells


def _project(root: Path) -> ProjectIndex:
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.pytorch-perflint]\n")
    (root / "plain.py").write_text("# nothing here\ndef helper(x):\n    return x\n")
    (root / "epochs.py").write_text("def setup(sampler, epoch):\n    sampler.set_epoch(epoch)\n")
    (root / "train.py").write_text("import plain\nimport epochs\nloader = make()\n")
    return ProjectIndex.for_path(root / "train.py")


def test_a_word_scan_depends_only_on_the_modules_that_spell_it(tmp_path):
    root = tmp_path / "project"
    index = _project(root)
    train, plain, epochs = (str(root / name) for name in ("train.py", "plain.py", "epochs.py"))
    with index.recording() as used:
        assert _mentions(index, train, (root / "train.py").read_text(), "set_epoch")
    assert TEXTS_NAMING + "set_epoch" in used and TEXT_OF + epochs in used
    assert TEXT_OF + plain not in used  # read, but it does not spell the word
    with index.recording() as used:
        assert _lacks(index, plain, "make_model")
    assert TEXT_OF + plain not in used


def test_an_unreadable_module_is_told_from_one_without_the_word(tmp_path):
    root = tmp_path / "project"
    index = _project(root)
    broken = root / "broken.py"
    broken.write_bytes(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    assert spells(index, str(root / "plain.py"), "set_epoch") is False
    assert spells(index, str(root / "epochs.py"), "set_epoch") is True
    assert spells(index, str(broken), "set_epoch") is None
    assert not _lacks(index, str(broken), "make_model")  # unknown: it may have it
