"""Python's own verdict on a source text: ``compile`` as ``python file.py`` would run it.

Python is the judge of what is valid code. The tool's workers run with a recursion limit
of 100,000 (``workers.call_deep``), and at that limit CPython's parser accepts code that
``python`` itself rejects at its default limit of 1,000 (5,000 unary minuses, a
10,000-term ``a + a + ...``: "RecursionError: maximum recursion depth exceeded during
compilation"). Such a file is a syntax error to its user, and given to LibCST it costs
minutes and gigabytes. So every ``ast`` parse of a linted file is done here, at the
default limit, and a file Python rejects never reaches LibCST.
"""

from __future__ import annotations

import ast
import contextlib
import sys
import threading
import warnings
from pathlib import Path
from typing import Iterator, Optional, Tuple, Union

# The recursion limit ``python`` starts with (``sys.getrecursionlimit()`` in a fresh
# interpreter): the limit a file must compile under to count as valid.
PYTHON_RECURSION_LIMIT = 1000
# What ``compile`` raises for a text it rejects (ValueError: null bytes).
REJECTED = (SyntaxError, ValueError, RecursionError, MemoryError)

_LIMIT_LOCK = threading.Lock()


@contextlib.contextmanager
def _python_limit() -> Iterator[None]:
    """The process's recursion limit lowered to Python's default for a ``compile`` (the
    limit is process-wide: the lock keeps two threads of ours from restoring each other's)."""
    with _LIMIT_LOCK:
        limit = sys.getrecursionlimit()
        lowered = False
        if limit > PYTHON_RECURSION_LIMIT:
            try:
                sys.setrecursionlimit(PYTHON_RECURSION_LIMIT)
                lowered = True
            except RecursionError:  # already deeper than that: compile at the limit we have
                pass
        try:
            yield
        finally:
            if lowered:
                sys.setrecursionlimit(limit)


def compile_python(source: Union[str, ast.Module], path: Union[Path, str], flags: int = ast.PyCF_ONLY_AST):
    """Python's own ``compile`` of the user's code (an ``ast`` tree by default) at Python's
    default recursion limit, with the warnings it raises about that code (``"\\d"``,
    ``x is 1``) silenced: they are the user's business, printed they would clutter every
    run (in each worker), and under ``-W error`` they would turn valid code into a
    SyntaxError."""
    # Only a text is judged at Python's limit: turning a tree (the tool's own object) back
    # into code takes deeper recursion than compiling the same text, and is not the user's.
    limit = _python_limit() if isinstance(source, (str, bytes)) else contextlib.nullcontext()
    with warnings.catch_warnings(), limit:
        warnings.simplefilter("ignore")
        return compile(source, str(path), "exec", flags=flags, dont_inherit=True)


def verdict(source: str, path: Union[Path, str] = "<unknown>") -> Tuple[Optional[ast.Module], Optional[Exception]]:
    """``(tree, None)`` for a text Python accepts, ``(None, why)`` for one it rejects."""
    try:
        return compile_python(source, path), None
    except MemoryError as error:
        # Python's refusal says why ("Parser stack overflowed - Python source too complex
        # to parse"); a bare one is this process out of memory, not a verdict.
        if not str(error):
            raise
        return None, error
    except REJECTED as error:
        return None, error
