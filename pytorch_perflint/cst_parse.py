"""LibCST's ``parse_module`` without its per-node validation, for the engine's parse.

Every LibCST node checks itself when it is made (``CSTNode.__post_init__`` calls
``_validate``): right for nodes a fix builds, wasted on the parser's own output, which its
grammar already made valid (a fifth of the parse on the torch package's files). The
engine parses only text Python accepted (``pyparse.verdict``), so here the check is
switched off for the parse alone, in the parsing thread alone: a node another thread
builds meanwhile (the language server lints on several threads) is still checked, and
a second parse at the same time takes the checked path rather than wait.
"""

from __future__ import annotations

import threading
from typing import Callable

import libcst as cst
from libcst import CSTNode

_LOCK = threading.Lock()


def parse_module(text: str) -> cst.Module:
    """``cst.parse_module(text)``, its nodes not validated one by one."""
    if not _LOCK.acquire(blocking=False):
        return cst.parse_module(text)
    try:
        owner = threading.get_ident()
        current = threading.get_ident
        checked: Callable[[CSTNode], None] = CSTNode.__post_init__

        def unchecked(node: CSTNode) -> None:
            if current() != owner:
                checked(node)

        CSTNode.__post_init__ = unchecked  # type: ignore[method-assign]
        try:
            return cst.parse_module(text)
        finally:
            CSTNode.__post_init__ = checked  # type: ignore[method-assign]
    finally:
        _LOCK.release()
