"""Project roots, dotted module names, and which file an import names."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from project_tree import write_project

from pytorch_perflint.config import Settings
from pytorch_perflint.project import ProjectIndex, find_project_root
from pytorch_perflint.project.root import ModuleMap, Target


def _map(root: Path, *names: str) -> ModuleMap:
    write_project(root, {name: "x = 1\n" for name in names})
    return ModuleMap(root, [str(root / name) for name in names])


def _rel(root: Path, target: Target) -> str:
    path = target.path or target.namespace
    assert path is not None, target
    return Path(path).relative_to(root).as_posix()


@pytest.mark.parametrize("marker", ["pyproject.toml", ".git", "pytorch-perflint.toml", ".pytorch-perflint.toml"])
def test_the_root_is_the_nearest_folder_with_a_marker(tmp_path, marker):
    root = tmp_path / "repo"
    write_project(root, {"pkg/sub/mod.py": "x = 1\n"}, marker=marker)
    assert find_project_root(root / "pkg" / "sub" / "mod.py") == root
    assert find_project_root(root / "pkg") == root


def test_a_git_file_marks_a_worktree_root_and_the_nearest_marker_wins(tmp_path):
    outer = write_project(tmp_path / "outer", {"inner/pkg/a.py": "x = 1\n"})
    (outer / "inner" / ".git").write_text("gitdir: /elsewhere\n")
    assert find_project_root(outer / "inner" / "pkg" / "a.py") == outer / "inner"


def test_without_a_marker_the_files_folder_is_the_root(tmp_path, monkeypatch):
    folder = tmp_path / "loose"
    folder.mkdir()
    (folder / "a.py").write_text("x = 1\n")
    # Whatever sits above the test's temporary folder, no marker of this name does.
    monkeypatch.setattr("pytorch_perflint.project.root.ROOT_MARKERS", ("no-such-marker.toml",))
    assert find_project_root(folder / "a.py") == folder
    assert find_project_root(folder) == folder


def test_module_names(tmp_path):
    modules = _map(tmp_path, "train.py", "pkg/__init__.py", "pkg/model.py", "scripts/run.py", "my-tools/x.py")
    root = str(tmp_path)
    assert modules.name_of(os.path.join(root, "train.py")) == "train"
    assert modules.name_of(os.path.join(root, "pkg", "__init__.py")) == "pkg"
    assert modules.name_of(os.path.join(root, "pkg", "model.py")) == "pkg.model"
    assert modules.name_of(os.path.join(root, "scripts", "run.py")) == "scripts.run"  # a namespace package
    assert modules.name_of(os.path.join(root, "my-tools", "x.py")) is None  # not a dotted name
    assert modules.name_of(str(tmp_path.parent / "elsewhere.py")) is None


def test_src_layout(tmp_path):
    modules = _map(tmp_path, "src/mylib/__init__.py", "src/mylib/nets.py", "tools/train.py")
    assert modules.name_of(str(tmp_path / "src" / "mylib" / "nets.py")) == "mylib.nets"
    assert _rel(tmp_path, modules.resolve_absolute("mylib.nets", str(tmp_path / "tools" / "train.py"))) == "src/mylib/nets.py"


def test_a_src_folder_that_is_a_package_is_not_a_source_root(tmp_path):
    modules = _map(tmp_path, "src/__init__.py", "src/nets.py", "train.py")
    assert modules.name_of(str(tmp_path / "src" / "nets.py")) == "src.nets"
    assert _rel(tmp_path, modules.resolve_absolute("src.nets", str(tmp_path / "train.py"))) == "src/nets.py"


def test_a_script_imports_its_siblings_first(tmp_path):
    modules = _map(tmp_path, "model.py", "scripts/train.py", "scripts/model.py")
    train = str(tmp_path / "scripts" / "train.py")
    assert _rel(tmp_path, modules.resolve_absolute("model", train)) == "scripts/model.py"
    assert _rel(tmp_path, modules.resolve_absolute("model", str(tmp_path / "other.py"))) == "model.py"


def test_a_package_module_imports_from_the_source_roots_first(tmp_path):
    modules = _map(tmp_path, "utils.py", "pkg/__init__.py", "pkg/utils.py", "pkg/net.py", "pkg/only_here.py")
    net = str(tmp_path / "pkg" / "net.py")
    assert _rel(tmp_path, modules.resolve_absolute("utils", net)) == "utils.py"
    # Found beside it when the roots do not have it (a script run from inside the package).
    assert _rel(tmp_path, modules.resolve_absolute("only_here", net)) == "pkg/only_here.py"


def test_libraries_the_rules_name_are_never_project_modules(tmp_path):
    modules = _map(tmp_path, "torch.py", "utils/torch.py", "utils/helpers.py", "numpy/__init__.py")
    for importer in ("train.py", "utils/helpers.py"):
        for name in ("torch", "torch.nn", "numpy"):
            target = modules.resolve_absolute(name, str(tmp_path / importer))
            assert target.external == name and not target.in_project


def test_standard_library_names_are_local_only_beside_a_script(tmp_path):
    modules = _map(tmp_path, "scripts/train.py", "scripts/profile.py", "pkg/__init__.py", "pkg/a.py", "pkg/profile.py", "logging.py")
    assert _rel(tmp_path, modules.resolve_absolute("profile", str(tmp_path / "scripts" / "train.py"))) == "scripts/profile.py"
    assert modules.resolve_absolute("profile", str(tmp_path / "pkg" / "a.py")).external == "profile"
    # A standard-library name at the root is the library for modules elsewhere.
    assert modules.resolve_absolute("logging", str(tmp_path / "scripts" / "train.py")).external == "logging"


def test_a_regular_module_anywhere_wins_over_a_namespace_folder(tmp_path):
    modules = _map(tmp_path, "scripts/data.py", "scripts/train.py", "data/raw/convert.py")
    assert _rel(tmp_path, modules.resolve_absolute("data", str(tmp_path / "scripts" / "train.py"))) == "scripts/data.py"
    namespace = modules.resolve_absolute("data", str(tmp_path / "main.py"))
    assert namespace.namespace == str(tmp_path / "data") and namespace.path is None
    assert _rel(tmp_path, modules.resolve_absolute("data.raw.convert", str(tmp_path / "main.py"))) == "data/raw/convert.py"


def test_relative_imports(tmp_path):
    modules = _map(tmp_path, "pkg/__init__.py", "pkg/a.py", "pkg/sub/__init__.py", "pkg/sub/b.py", "pkg/utils/io.py")
    b = str(tmp_path / "pkg" / "sub" / "b.py")
    assert _rel(tmp_path, modules.resolve_relative(1, "", b)) == "pkg/sub/__init__.py"
    assert _rel(tmp_path, modules.resolve_relative(2, "a", b)) == "pkg/a.py"
    assert _rel(tmp_path, modules.resolve_relative(2, "utils.io", b)) == "pkg/utils/io.py"
    assert _rel(tmp_path, modules.resolve_relative(2, "utils", b)) == "pkg/utils"  # a namespace folder
    assert modules.resolve_relative(2, "missing", b) is None


def test_relative_imports_beyond_the_root_resolve_to_nothing(tmp_path):
    modules = _map(tmp_path, "pkg/__init__.py", "pkg/a.py")
    a = str(tmp_path / "pkg" / "a.py")
    assert modules.resolve_relative(3, "x", a) is None
    assert modules.resolve_relative(5, "", a) is None


def test_submodules_of_packages_and_namespaces(tmp_path):
    modules = _map(tmp_path, "pkg/__init__.py", "pkg/model.py", "ns/tool.py")
    package = modules.resolve_absolute("pkg", str(tmp_path / "x.py"))
    assert _rel(tmp_path, modules.submodule(package, "model")) == "pkg/model.py"
    assert modules.submodule(package, "missing") is None
    namespace = modules.resolve_absolute("ns", str(tmp_path / "x.py"))
    assert _rel(tmp_path, modules.submodule(namespace, "tool")) == "ns/tool.py"
    module = modules.resolve_absolute("pkg.model", str(tmp_path / "x.py"))
    assert modules.submodule(module, "anything") is None  # a plain module has no submodules


def test_excluded_files_are_not_project_modules(tmp_path):
    write_project(tmp_path, {"train.py": "from vendored.model import Net\n", "vendored/model.py": "class Net: pass\n"})
    settings = dataclasses.replace(Settings(project_root=str(tmp_path)), extend_exclude=("vendored",))
    index = ProjectIndex(tmp_path, settings)
    assert str(tmp_path / "vendored" / "model.py") not in index.files
    assert index.imported_modules(tmp_path / "train.py") == frozenset()
    assert index.resolve(tmp_path / "train.py", "Net").kind == "external"


def test_a_torch_module_in_the_project_does_not_shadow_torch(tmp_path):
    write_project(
        tmp_path,
        {
            "torch.py": "def cuda():\n    pass\n",
            "utils/torch.py": "x = 1\n",
            "utils/helpers.py": "import torch\nfrom torch import nn\nlayer = nn.Conv2d(1, 1, 1)\n",
            "train.py": "import torch\nmodel = torch.nn.Linear(1, 1).cuda()\n",
        },
    )
    index = ProjectIndex(tmp_path)
    helpers = tmp_path / "utils" / "helpers.py"
    assert index.resolve(helpers, "nn.Conv2d").qualname == "torch.nn.Conv2d"
    assert index.resolve(tmp_path / "train.py", "torch.nn.Linear").kind == "external"
    assert index.imported_modules(helpers) == frozenset() and index.imported_modules(tmp_path / "train.py") == frozenset()
    assert not index.runs_on_accelerator(tmp_path / "torch.py")  # not imported by train.py
