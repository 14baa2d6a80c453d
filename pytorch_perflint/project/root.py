"""Where a project starts, and which file a dotted module name means inside it.

The project root is the nearest folder at or above a path that holds ``pyproject.toml``,
``.git`` or one of the tool's standalone config files: the same folders config discovery
looks in (``config.STANDALONE_NAMES``). Without one, the path's own folder is the root.

Module names follow what Python does at run time, statically:

- Source roots: the project root, and ``src/`` under it when that is not itself a package
  (the src layout). A file's dotted name is relative to the deepest source root holding it.
- Folders without ``__init__.py`` are namespace packages: ``scripts/train.py`` is
  ``scripts.train``.
- An absolute import is looked up beside the importing file too, because a script run as
  ``python scripts/train.py`` has its own folder first on ``sys.path``: ``from model import
  Net`` there means ``scripts/model.py``. For a file inside a regular package (its folder
  has ``__init__.py``) the source roots are tried first, for a script folder its own folder.
- A project inside this one (a folder below the root with its own root marker, when a
  config one folder up made that folder the root) is tried last for its own files: its
  scripts import its packages from its folder, as when it is linted alone.
- Libraries the rules name (torch, numpy, ...) are never project modules: a ``utils/torch.py``
  helper must not turn every ``import torch`` beside it into a project import. A standard
  library name is a project module only beside a script that is not in a package (where
  Python itself would pick the local file first).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from ..config import ROOT_MARKERS

# Top-level packages that are always the installed library, never a project file.
EXTERNAL_PACKAGES: FrozenSet[str] = frozenset(
    {
        "torch", "torchvision", "torchaudio", "torchtext", "numpy", "scipy", "h5py", "cv2",
        "timm", "accelerate", "lightning", "pytorch_lightning", "transformers", "PIL",
        "pandas", "sklearn", "tensorflow", "jax", "functorch", "triton",
    }
)  # fmt: skip
STDLIB_MODULES: FrozenSet[str] = frozenset(getattr(sys, "stdlib_module_names", ()))

MODULE_SUFFIXES = (".py", ".pyi")


def find_project_root(start: Path) -> Path:
    """The nearest folder at or above ``start`` (a file or a folder) holding a root marker;
    ``start``'s own folder when there is none."""
    start = Path(os.path.abspath(start))
    first = start if start.is_dir() else start.parent
    for folder in (first, *first.parents):
        if any(os.path.exists(os.path.join(folder, marker)) for marker in ROOT_MARKERS):
            return folder
    return first


@dataclass(frozen=True)
class Target:
    """What an import names: a project file, a project namespace folder, or something
    outside the project (``external`` holds its dotted name)."""

    path: Optional[str] = None  # a project module file (absolute)
    namespace: Optional[str] = None  # a project folder without __init__.py (absolute)
    external: Optional[str] = None

    @property
    def in_project(self) -> bool:
        return self.path is not None or self.namespace is not None


class ModuleMap:
    """Dotted module names for the files of one project, and back.

    ``files`` are the project's module files (absolute paths), as discovery lists them:
    a git-ignored or excluded file is not a project module.
    """

    def __init__(self, root: Path, files: Iterable[str]) -> None:
        self.root = os.path.abspath(root)
        self.files: FrozenSet[str] = frozenset(os.path.abspath(f) for f in files if f.endswith(MODULE_SUFFIXES))
        folders = set()
        for path in self.files:
            parent = os.path.dirname(path)
            while parent.startswith(self.root) and parent not in folders:
                folders.add(parent)
                parent = os.path.dirname(parent)
        self.folders: FrozenSet[str] = frozenset(folders)
        src = os.path.join(self.root, "src")
        roots = [self.root]
        if src in self.folders and not self._is_package(src):
            roots.insert(0, src)
        self.source_roots: Tuple[str, ...] = tuple(roots)  # deepest first
        self._cache: Dict[Tuple[str, str], Target] = {}
        self._nested: Dict[str, Optional[str]] = {}  # folder -> nested project root above it
        self._names: Optional[FrozenSet[str]] = None  # every module's and folder's own name

    # -- names of files ---------------------------------------------------------------------
    def _is_package(self, folder: str) -> bool:
        return os.path.join(folder, "__init__.py") in self.files or os.path.join(folder, "__init__.pyi") in self.files

    def name_of(self, path: str) -> Optional[str]:
        """``pkg.mod`` for ``<root>/pkg/mod.py``, ``pkg`` for its ``__init__.py``; None
        outside the project or for a file whose path is not a valid dotted name."""
        path = os.path.abspath(path)
        for base in self.source_roots:
            if path.startswith(base + os.sep):
                rel = os.path.relpath(path, base)
                stem, _ = os.path.splitext(rel)
                parts = stem.split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                if parts and all(part.isidentifier() for part in parts):
                    return ".".join(parts)
                return None
        return None

    def is_package_init(self, path: str) -> bool:
        return os.path.basename(path) in ("__init__.py", "__init__.pyi")

    # -- files of names ---------------------------------------------------------------------
    def _lookup(self, base: str, parts: Sequence[str], namespaces: bool = True) -> Optional[Target]:
        """The module ``parts`` below folder ``base``: a file, a package, or (when
        ``namespaces``) a folder without ``__init__.py``."""
        folder = os.path.join(base, *parts)
        for suffix in MODULE_SUFFIXES:
            if folder + suffix in self.files:
                return Target(path=folder + suffix)
        for suffix in MODULE_SUFFIXES:
            init = os.path.join(folder, "__init__" + suffix)
            if init in self.files:
                return Target(path=init)
        if namespaces and folder in self.folders:
            return Target(namespace=folder)
        return None

    def names_somewhere(self, name: str) -> bool:
        """Whether some project module or folder is called ``name`` (below any folder):
        an import of any other top-level name is never a project module."""
        if self._names is None:
            stems = {os.path.splitext(os.path.basename(f))[0] for f in self.files}
            self._names = frozenset(stems | {os.path.basename(f) for f in self.folders})
        return name in self._names

    def lookup_under(self, base: str, dotted: str) -> Optional[Target]:
        """The module ``dotted`` below project folder ``base`` (a folder a script put on
        ``sys.path``): a module or package first, as Python prefers, else a namespace."""
        parts = dotted.split(".")
        if not all(part.isidentifier() for part in parts):
            return None
        return self._lookup(base, parts, False) or self._lookup(base, parts, True)

    def _bases_for(self, importer: str) -> List[str]:
        own = os.path.dirname(os.path.abspath(importer))
        if self._is_package(own):
            order = [*self.source_roots, own]
        else:
            order = [own, *self.source_roots]
        nested = self._nested_root(own)
        if nested is not None:
            order.append(nested)  # last: a name nothing else resolves
        return list(dict.fromkeys(order))

    def _ancestors(self, importer: str) -> List[str]:
        """The folders above the importer's own, up to the root: a script run from one puts
        it on ``sys.path`` (``src/main.py`` beside package ``src/model``, whose modules
        import ``from model import common``). Tried last, for modules and packages only."""
        out, folder = [], os.path.dirname(os.path.dirname(os.path.abspath(importer)))
        while folder == self.root or folder.startswith(self.root + os.sep):
            out.append(folder)
            folder = os.path.dirname(folder)
        return out

    def _nested_root(self, folder: str) -> Optional[str]:
        """The nearest folder at or above ``folder``, below the root, with a root marker of
        its own: a project inside this one (``fixtures/projects/x/pyproject.toml``) whose
        scripts import its packages from its folder, as when it is linted alone."""
        if folder not in self._nested:
            found = None
            if folder.startswith(self.root + os.sep):
                if any(os.path.lexists(os.path.join(folder, marker)) for marker in ROOT_MARKERS):
                    found = folder
                else:
                    found = self._nested_root(os.path.dirname(folder))
            self._nested[folder] = found
        return self._nested[folder]

    def resolve_absolute(self, dotted: str, importer: str) -> Target:
        """The module ``import dotted`` means in ``importer``."""
        key = (os.path.dirname(os.path.abspath(importer)), dotted)
        cached = self._cache.get(key)
        if cached is not None:
            return self._sibling_of_itself(dotted, importer) if cached.path == os.path.abspath(importer) else cached
        target = self._resolve_absolute(dotted, importer)
        self._cache[key] = target
        return self._sibling_of_itself(dotted, importer) if target.path == os.path.abspath(importer) else target

    def _sibling_of_itself(self, dotted: str, importer: str) -> Target:
        """A module that names itself (``from config import *`` in ``config/__init__.py``,
        beside ``config/config.py``) is Python 2 code importing its sibling implicitly: no
        module imports itself to use it, so the next module on the path is read."""
        own = os.path.abspath(importer)
        key = (own, dotted)
        if key not in self._cache:
            self._cache[key] = self._resolve_absolute(dotted, importer, skip=own)
        return self._cache[key]

    def _resolve_absolute(self, dotted: str, importer: str, skip: Optional[str] = None) -> Target:
        parts = dotted.split(".")
        if not dotted or not all(part.isidentifier() for part in parts) or parts[0] in EXTERNAL_PACKAGES:
            return Target(external=dotted)
        bases = self._bases_for(importer)
        if parts[0] in STDLIB_MODULES:
            own = os.path.dirname(os.path.abspath(importer))
            bases = [own] if not self._is_package(own) else []
        # Python prefers a module or regular package anywhere on the path to a namespace.
        for namespaces in (False, True):
            for base in bases:
                found = self._lookup(base, parts, namespaces)
                if found is not None and (skip is None or found.path != skip):
                    return found
        if parts[0] not in STDLIB_MODULES:
            for base in self._ancestors(importer):
                found = self._lookup(base, parts, False)
                if found is not None:
                    return found
        return Target(external=dotted)

    def resolve_relative(self, level: int, dotted: str, importer: str) -> Optional[Target]:
        """The module ``from <level dots><dotted> import ...`` means in ``importer``; None
        when the dots climb above the project root (Python: "beyond top-level package")."""
        base = os.path.dirname(os.path.abspath(importer))
        for _ in range(level - 1):
            base = os.path.dirname(base)
        if base != self.root and not base.startswith(self.root + os.sep):
            return None
        parts = [p for p in dotted.split(".") if p]
        if not parts:
            for suffix in MODULE_SUFFIXES:
                init = os.path.join(base, "__init__" + suffix)
                if init in self.files:
                    return Target(path=init)
            return Target(namespace=base)
        if not all(part.isidentifier() for part in parts):
            return None
        return self._lookup(base, parts)

    def submodule(self, package: Target, name: str) -> Optional[Target]:
        """``package.name`` as a module of its own (``from pkg import mod``)."""
        if package.namespace is not None:
            folder = package.namespace
        elif package.path is not None and self.is_package_init(package.path):
            folder = os.path.dirname(package.path)
        else:
            return None
        if not name.isidentifier():
            return None
        return self._lookup(folder, [name])
