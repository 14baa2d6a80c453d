"""Scans of every module's text for a word (``ProjectIndex.text_naming``) and the subclass
scan built on them read each file once per state of the file, not once per question: a
word a file did not spell is remembered with its ``stat`` key, and a class's subclasses
are kept with what they read (told again to the recordings, as ``_uses_of`` does)."""

from __future__ import annotations

import os

from pytorch_perflint.project import sources
from pytorch_perflint.project.index import TEXT_OF, TEXTS_NAMING

from project_tree import index_of

BASE = "class Base:\n    pass\n"
CHILD = "from base import Base\n\n\nclass Child(Base):\n    pass\n"


def _counting(monkeypatch):
    reads = []
    real = sources.read_source

    def read_source(path, *args):
        reads.append(path)
        return real(path, *args)

    monkeypatch.setattr(sources, "read_source", read_source)
    return reads


def test_a_word_a_file_does_not_spell_is_not_read_for_again(tmp_path, monkeypatch):
    index = index_of(tmp_path, {"plain.py": "x = 1\n"})
    path = str(tmp_path / "plain.py")
    reads = _counting(monkeypatch)
    assert index.text_naming(path, "Base") is None
    assert index.text_naming(path, "Base") is None
    assert reads == [path]
    assert index.text_naming(path, "x = 1") == "x = 1\n"  # another word: read


def test_an_edited_file_is_read_again(tmp_path):
    index = index_of(tmp_path, {"plain.py": "x = 1\n"})
    path = tmp_path / "plain.py"
    assert index.text_naming(str(path), "Base") is None
    path.write_text("x = Base()  # now it does\n", encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a new stat key even where the clock is coarse
    assert index.text_naming(str(path), "Base") == "x = Base()  # now it does\n"


def test_subclasses_are_kept_with_what_they_read(tmp_path, monkeypatch):
    index = index_of(tmp_path, {"base.py": BASE, "child.py": CHILD, "other.py": "y = 2\n"})
    base = index.resolve(str(tmp_path / "base.py"), "Base")
    assert base is not None
    with index.recording() as first:
        assert [d.name for d in index.resolution.subclasses(base)] == ["Child"]
    reads = _counting(monkeypatch)
    with index.recording() as again:
        assert [d.name for d in index.resolution.subclasses(base)] == ["Child"]
    assert again == first and TEXTS_NAMING + "Base" in again and TEXT_OF + str(tmp_path / "child.py") in again
    assert reads == []
