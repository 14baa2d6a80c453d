"""Which files are unit tests, and what a run does with them (the ``test-files`` setting).

One policy for every rule, decided per file before any rule runs, so no rule has its own
idea of what a test is. Test files are the ones pytest collects by its default conventions:
``test_*.py``, ``*_test.py``, ``conftest.py``, and any file under a folder named ``test`` or
``tests`` (below the project root, so a checkout that itself lies in a ``tests`` folder is not
all tests). A file that has a test's name but not a test's content (``test_net.py`` with an
``argparse`` main and an evaluation loop, as detection and segmentation repositories name
their evaluation scripts) is not a test: named files are tests only when their code imports
pytest or unittest, or defines a ``test_*`` function or a ``Test*`` class. Tests run a few tiny steps on purpose and often exercise exactly what a rule
flags (``num_workers=0``, ``zero_grad(set_to_none=False)``); rewriting them buys no speed and
can break what they check.

Policies:

* ``skip`` (default): no rule reports in a test file (a syntax error is still TPF001);
* ``no-fix``: test files are reported like any file, but their fixes are display-only;
* ``lint``: test files are linted and fixed like any other file.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath
from typing import Optional, Union

POLICIES = ("skip", "no-fix", "lint")
DEFAULT_POLICY = "skip"
_TEST_FOLDERS = frozenset({"test", "tests"})
# What a test module's code shows (at the start of a line, so prose and strings rarely match):
# pytest or unittest imported, or a test function or test class defined.
_TEST_CONTENT = re.compile(
    r"^[ \t]*(?:(?:import|from)[ \t]+(?:pytest|unittest)\b|(?:async[ \t]+)?def[ \t]+test_\w*[ \t]*\(|class[ \t]+Test(?:[A-Z0-9_]\w*)?\b)",
    re.MULTILINE,
)


def looks_like_tests(source: str) -> bool:
    """Whether the code imports pytest/unittest or defines ``test_*`` functions or ``Test*``
    classes: what a module pytest collects from has and an evaluation script has not."""
    return _TEST_CONTENT.search(source) is not None


def is_test_file(path: Union[str, PurePath], root: Optional[str] = None, source: Optional[str] = None) -> bool:
    """Whether pytest's default conventions make ``path`` a test file.

    Folders count only below ``root`` (the project root) when the file lies under it. With
    ``source``, a file that is a test by its name only (``test_*.py``, ``*_test.py``, not under
    a test folder) must also look like one (``looks_like_tests``).
    """
    path = PurePath(path)
    name = path.name
    if name == "conftest.py":
        return True
    if (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py"):
        return source is None or looks_like_tests(source) or _under_test_folder(path, root)
    return _under_test_folder(path, root)


def _under_test_folder(path: PurePath, root: Optional[str]) -> bool:
    folders = path.parts[:-1]
    if root is not None:
        try:
            folders = PurePath(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).parts[:-1]
        except ValueError:  # another drive (Windows)
            pass
        if folders and folders[0] == os.pardir:
            folders = path.parts[:-1]  # outside the project: the path as given
    return any(part in _TEST_FOLDERS for part in folders)


def policy_for(
    path: Union[str, PurePath], policy: str, root: Optional[str] = None, source: Optional[str] = None
) -> Optional[str]:
    """The policy that applies to ``path`` (with ``source``: decided by content as well as by
    name): None for a file that is not a test file."""
    return policy if is_test_file(path, root, source) else None
