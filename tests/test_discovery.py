"""Which files get linted: walking, excludes, .gitignore, explicit paths, bad paths."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path
from typing import List

import pytest

from pytorch_perflint.config import Settings
from pytorch_perflint.discovery import discover

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def _names(paths) -> List[str]:
    return [p.as_posix() for p in paths]


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _settings(root: Path, **changes) -> Settings:
    return dataclasses.replace(Settings(project_root=str(root)), **changes)


def test_walks_py_and_pyi_files_in_sorted_order(tree):
    _touch(tree, "b.py", "a.pyi", "pkg/z.py", "pkg/sub/y.py", "notes.txt", "script", "pkg/data.json")
    found = discover(["."], _settings(tree))
    assert _names(found.files) == ["a.pyi", "b.py", "pkg/sub/y.py", "pkg/z.py"]
    assert found.errors == () and found.warnings == ()


def test_default_excludes_and_virtualenvs(tree):
    _touch(
        tree,
        "keep.py",
        ".git/hook.py",
        ".venv/lib/x.py",
        "venv/x.py",
        "__pycache__/x.py",
        "build/x.py",
        "dist/x.py",
        "pkg.egg-info/x.py",
        ".tox/x.py",
        "node_modules/x.py",
        "lib/site-packages/x.py",
        "myenv/lib/x.py",
        "src/buildtools.py",
    )
    (tree / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    assert _names(discover(["."], _settings(tree)).files) == ["keep.py", "src/buildtools.py"]


def test_exclude_replaces_defaults_and_extend_exclude_adds(tree):
    _touch(tree, "keep.py", "build/x.py", "gen/out.py", "src/gen/deep.py", "src/a_pb2.py", "tests/fixtures/f.py")
    settings = _settings(tree, extend_exclude=("*_pb2.py", "tests/fixtures", "src/gen/"))
    assert _names(discover(["."], settings).files) == ["gen/out.py", "keep.py"]
    settings = _settings(tree, exclude=("gen",))
    assert _names(discover(["."], settings).files) == [
        "build/x.py",
        "keep.py",
        "src/a_pb2.py",
        "tests/fixtures/f.py",
    ]


def test_path_patterns_are_relative_to_the_project_root_not_cwd(tree, monkeypatch):
    _touch(tree, "src/gen/a.py", "src/keep.py")
    monkeypatch.chdir(tree / "src")
    found = discover(["."], _settings(tree, extend_exclude=("src/gen",)))
    assert _names(found.files) == ["keep.py"]


def test_explicit_file_is_linted_even_if_excluded_unless_force_exclude(tree):
    _touch(tree, "build/gen.py", "keep.py")
    settings = _settings(tree)
    assert _names(discover(["build/gen.py", "keep.py"], settings).files) == ["build/gen.py", "keep.py"]
    forced = dataclasses.replace(settings, force_exclude=True)
    assert _names(discover(["build/gen.py", "keep.py"], forced).files) == ["keep.py"]


def test_explicit_file_of_any_extension_and_duplicates(tree):
    _touch(tree, "tool", "a.py")
    found = discover(["tool", "a.py", "./a.py", str(tree / "a.py"), "."], _settings(tree))
    assert _names(found.files) == ["a.py", "tool"]


def test_files_outside_cwd_keep_absolute_paths(tree, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    _touch(other, "far.py")
    found = discover([str(other)], _settings(tree))
    assert found.files == (other / "far.py",)


def test_nonexistent_path_is_an_error_and_the_rest_is_found(tree):
    _touch(tree, "a.py")
    found = discover(["missing.py", "a.py"], _settings(tree))
    assert _names(found.files) == ["a.py"]
    assert found.errors == ("missing.py: no such file or folder",)


def test_symlinks_loops_and_broken_links(tree):
    _touch(tree, "pkg/a.py", "real.py")
    (tree / "pkg" / "loop").symlink_to(tree / "pkg")  # a folder loop: not followed
    (tree / "pkg" / "alias.py").symlink_to(tree / "real.py")  # a symlinked file: linted once
    (tree / "pkg" / "dangling.py").symlink_to(tree / "nowhere.py")
    (tree / "self.py").symlink_to(tree / "self.py")
    found = discover(["."], _settings(tree))
    assert _names(found.files) == ["pkg/a.py", "pkg/alias.py"] or _names(found.files) == ["pkg/a.py", "real.py"]
    assert len(found.files) == 2
    assert sorted(found.warnings) == ["pkg/dangling.py: skipped: a broken symlink", "self.py: skipped: a symlink loop"]
    assert found.errors == ()
    explicit = discover(["self.py"], _settings(tree))
    assert explicit.files == () and explicit.errors == ("self.py: symlink loop",)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_unreadable_folder_is_an_error_and_the_rest_is_found(tree):
    _touch(tree, "a.py", "locked/b.py")
    (tree / "locked").chmod(0)
    try:
        found = discover(["."], _settings(tree))
    finally:
        (tree / "locked").chmod(0o755)
    assert _names(found.files) == ["a.py"]
    assert len(found.errors) == 1 and "locked: cannot read folder" in found.errors[0]


def test_folder_that_cannot_be_listed_is_an_error(tree, monkeypatch):
    """The same as above for a run as root, which reads every folder: scandir fails."""
    from pytorch_perflint import discovery

    _touch(tree, "a.py", "locked/b.py")
    real = os.scandir

    def scandir(path):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    found = discover(["."], _settings(tree))
    assert _names(found.files) == ["a.py"]
    assert found.errors == ("locked: cannot read folder: Permission denied",)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@needs_git
def test_gitignored_files_are_skipped_in_a_work_tree(tree):
    _git(tree, "init", "-q")
    (tree / ".gitignore").write_text("ignored.py\nout/\n*.gen.py\n")
    (tree / "pkg").mkdir()
    (tree / "pkg" / ".gitignore").write_text("local.py\n")
    _touch(tree, "a.py", "ignored.py", "out/x.py", "pkg/b.gen.py", "pkg/local.py", "pkg/c.py")
    settings = _settings(tree)
    assert _names(discover(["."], settings).files) == ["a.py", "pkg/c.py"]
    # From a subfolder, and for a subfolder path.
    assert _names(discover(["pkg"], settings).files) == ["pkg/c.py"]
    # Named explicitly: linted anyway, unless --force-exclude.
    assert _names(discover(["ignored.py"], settings).files) == ["ignored.py"]
    assert discover(["ignored.py"], dataclasses.replace(settings, force_exclude=True)).files == ()
    # respect-gitignore = false
    everything = discover(["."], dataclasses.replace(settings, respect_gitignore=False)).files
    assert _names(everything) == ["a.py", "ignored.py", "out/x.py", "pkg/b.gen.py", "pkg/c.py", "pkg/local.py"]


@needs_git
def test_tracked_file_matching_gitignore_is_linted(tree):
    _git(tree, "init", "-q")
    _touch(tree, "tracked.py")
    _git(tree, "add", "tracked.py")
    (tree / ".gitignore").write_text("tracked.py\n")
    assert _names(discover(["."], _settings(tree)).files) == ["tracked.py"]


@needs_git
def test_nested_repository_uses_its_own_ignore_rules(tree):
    _touch(tree, "plain/a.py", "plain/repo/keep.py", "plain/repo/skip.py")
    _git(tree / "plain" / "repo", "init", "-q")
    (tree / "plain" / "repo" / ".gitignore").write_text("skip.py\n")
    assert _names(discover(["."], _settings(tree)).files) == ["plain/a.py", "plain/repo/keep.py"]


def test_without_git_nothing_is_gitignored(tree, monkeypatch):
    monkeypatch.setenv("PATH", str(tree / "no-bin"))
    (tree / ".gitignore").write_text("a.py\n")
    _touch(tree, "a.py")
    assert _names(discover(["."], _settings(tree)).files) == ["a.py"]


# -- .gitignore semantics, without running git ------------------------------------------


def _repo(root: Path) -> Path:
    """A work tree as discovery sees one: a `.git` folder (nothing of git is run)."""
    (root / ".git" / "info").mkdir(parents=True)
    return root


def test_nested_gitignores_negation_anchors_and_folders(tree):
    _repo(tree)
    (tree / ".gitignore").write_text(
        "# comments and blank lines are ignored\n\n"
        "*.gen.py\n"
        "!keep.gen.py\n"
        "/top_only.py\n"
        "out/\n"
        "docs/**/draft_*.py\n"
    )
    (tree / "pkg").mkdir()
    (tree / "pkg" / ".gitignore").write_text("local.py\n!/force.gen.py\nsub/\n")
    _touch(
        tree,
        "a.py",
        "a.gen.py",
        "keep.gen.py",
        "top_only.py",
        "pkg/top_only.py",
        "out/x.py",
        "pkg/out/y.py",
        "out.py",
        "docs/guide/draft_1.py",
        "docs/guide/final.py",
        "pkg/local.py",
        "pkg/deeper/local.py",
        "pkg/force.gen.py",
        "pkg/deeper/force.gen.py",
        "pkg/sub/z.py",
        "sub/z.py",
    )
    assert _names(discover(["."], _settings(tree)).files) == [
        "a.py",
        "docs/guide/final.py",
        "keep.gen.py",
        "out.py",
        "pkg/force.gen.py",
        "pkg/top_only.py",
        "sub/z.py",
    ]
    # Started below the root, the root's rules still apply.
    assert _names(discover(["pkg"], _settings(tree)).files) == ["pkg/force.gen.py", "pkg/top_only.py"]
    assert _names(discover(["docs/guide"], _settings(tree)).files) == ["docs/guide/final.py"]


def test_a_file_in_an_ignored_folder_cannot_be_re_included(tree):
    _repo(tree)
    (tree / ".gitignore").write_text("build_out/\n!build_out/keep.py\n")
    _touch(tree, "a.py", "build_out/keep.py")
    assert _names(discover(["."], _settings(tree)).files) == ["a.py"]


def test_info_exclude_and_global_excludes_file(tree, monkeypatch):
    _repo(tree)
    (tree / ".git" / "info" / "exclude").write_text("private.py\n")
    config = tree / "xdg"
    (config / "git").mkdir(parents=True)
    (config / "git" / "ignore").write_text("*.local.py\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("HOME", str(tree / "home"))
    (tree / ".gitignore").write_text("xdg/\n")
    _touch(tree, "a.py", "private.py", "settings.local.py")
    assert _names(discover(["."], _settings(tree)).files) == ["a.py"]


def test_linting_runs_nothing_from_the_tree_fsmonitor(tree, tmp_path_factory):
    """Issue 11 item 7: `git ls-files` honoured the tree's core.fsmonitor and ran it."""
    if shutil.which("git") is None:
        pytest.skip("git is needed to build the repository")
    marker = tmp_path_factory.mktemp("marker") / "PWNED"
    _git(tree, "init", "-q")
    _touch(tree, "a.py")
    _git(tree, "add", "a.py")
    _git(tree, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x")
    _git(tree, "config", "core.fsmonitor", f"touch {marker}; false")
    (tree / ".gitignore").write_text("ignored.py\n")
    _touch(tree, "ignored.py", "b.py")
    settings = _settings(tree)
    assert _names(discover(["."], settings).files) == ["a.py", "b.py"]
    assert discover(["ignored.py"], dataclasses.replace(settings, force_exclude=True)).files == ()
    assert not marker.exists()


@needs_git
def test_the_same_files_as_git_ls_files_on_a_tricky_tree(tree, monkeypatch):
    """The reading of .gitignore agrees with git itself (run here on a tree the test built)."""
    monkeypatch.setenv("HOME", str(tree / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tree / "home" / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    _git(tree, "init", "-q")
    _touch(tree, "tracked/ignored_but_tracked.py")
    _git(tree, "add", "-f", "tracked/ignored_but_tracked.py")
    (tree / ".gitignore").write_text(
        "*.tmp.py\n!important.tmp.py\n/root_only.py\nlogs/\n**/cache/*.py\n!**/cache/keep.py\n"
        "tracked/\na?c.py\n[xy]z.py\ntrail\\ space.py\n\\!bang.py\nsub/dir/\n"
    )
    (tree / "lib").mkdir()
    (tree / "lib" / ".gitignore").write_text("*.py\n!*_ok.py\n!/nested/\n")
    (tree / ".git" / "info" / "exclude").write_text("secret.py\n")
    _touch(
        tree,
        "a.py", "x.tmp.py", "important.tmp.py", "root_only.py", "deep/root_only.py", "logs/l.py",
        "deep/logs/l.py", "deep/cache/c.py", "deep/cache/keep.py", "cache/c.py", "tracked/new.py",
        "abc.py", "abbc.py", "xz.py", "zz.py", "trail space.py", "!bang.py", "bang.py",
        "sub/dir/s.py", "other/sub/dir/s.py", "lib/one.py", "lib/two_ok.py", "lib/nested/n.py",
        "secret.py", "deep/secret.py",
    )
    listed = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=tree, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    expected = sorted(name for name in listed if name.endswith(".py"))
    assert _names(discover(["."], _settings(tree)).files) == expected
    assert "tracked/ignored_but_tracked.py" in expected and "deep/cache/keep.py" in expected


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_ignore_files_that_are_fifos_or_symlinks_are_not_read(tree, tmp_path_factory):
    """A tree must not be able to stall discovery (a FIFO blocks a plain read forever) or
    make it read outside the tree (git does not follow a symlinked .gitignore either)."""
    _repo(tree)
    os.mkfifo(tree / ".gitignore")
    outside = tmp_path_factory.mktemp("outside") / "rules"
    outside.write_text("b.py\n")
    (tree / "pkg").mkdir()
    (tree / "pkg" / ".gitignore").symlink_to(outside)
    _touch(tree, "a.py", "pkg/b.py")
    assert _names(discover(["."], _settings(tree)).files) == ["a.py", "pkg/b.py"]


# -- issue 21: named paths ------------------------------------------------------------


def test_a_named_folder_git_ignores_is_linted_unless_force_exclude(tree):
    """Item 13: `check out/` on a git-ignored folder found nothing and passed (exit 0)."""
    _repo(tree)
    (tree / ".gitignore").write_text("out/\ngen/\n")
    _touch(tree, "out/x.py", "out/sub/y.py", "out/skip.py", "gen/deep/z.py", "a.py")
    (tree / "out" / ".gitignore").write_text("skip.py\n")  # its own rules still hold
    settings = _settings(tree)
    assert _names(discover(["."], settings).files) == ["a.py"]
    assert _names(discover(["out"], settings).files) == ["out/sub/y.py", "out/x.py"]
    assert _names(discover(["gen/deep"], settings).files) == ["gen/deep/z.py"]
    assert discover(["out"], dataclasses.replace(settings, force_exclude=True)).files == ()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_path_that_is_not_a_regular_file_is_an_error(tree):
    """Item 7: a named FIFO blocked the run for 120 s; `/dev/zero` filled the memory."""
    os.mkfifo(tree / "pipe.py")
    (tree / "zero.py").symlink_to("/dev/zero")
    _touch(tree, "a.py")
    found = discover(["pipe.py", "zero.py", "a.py"], _settings(tree))
    assert _names(found.files) == ["a.py"]
    assert found.errors == (
        "pipe.py: not a regular file (a named pipe): not linted",
        "zero.py: not a regular file (a device or special file): not linted",
    )
    # A folder run skips them, as before.
    assert _names(discover(["."], _settings(tree)).files) == ["a.py"]
