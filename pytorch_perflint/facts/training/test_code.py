"""Where a training finding would be noise: inside a unit test."""

from __future__ import annotations

from pathlib import PurePath
from typing import Optional, Sequence

import libcst as cst

from ...testfiles import is_test_file


# ---------------------------------------------------------------------------------------
# Where a finding would be noise
# ---------------------------------------------------------------------------------------
def enclosing_function(ancestors: Sequence[cst.CSTNode]) -> Optional[cst.FunctionDef]:
    for node in reversed(ancestors):
        if isinstance(node, cst.FunctionDef):
            return node
    return None


def is_test_path(path: PurePath) -> bool:
    """A file pytest collects tests from (``testfiles.is_test_file``)."""
    return is_test_file(path)


def in_test_code(ancestors: Sequence[cst.CSTNode], path: PurePath) -> bool:
    """Inside a unittest-style ``Test*`` class of a file that is not a test file.

    Test files themselves follow the ``test-files`` setting, the same for every rule (the
    engine skips them by default, see ``testfiles``); a rule that runs in one lints it like
    any file. Outside test files, ``test_img(model, loader)`` is research code's evaluation
    function, not a unit test, but a ``class TestX(unittest.TestCase)`` is still a test."""
    if is_test_file(path):
        return False
    return any(isinstance(node, cst.ClassDef) and node.name.value.startswith("Test") for node in ancestors)
