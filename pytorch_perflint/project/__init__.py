"""Project-wide facts: module summaries built from ``ast``, imports resolved inside the
project, and which modules run on an accelerator.

A layer of its own beside ``analysis/``: it imports neither the rule contract nor the
engine nor LibCST, so the cache can ask it whether anything changed cheaply. Rule families
ask a ``ProjectIndex`` (one per project root) for what they need from other modules.
"""

from .bodies import ClassBody, FunctionBody
from .index import ProjectIndex, stat_key
from .resolution import Definition
from .root import ModuleMap, find_project_root
from .summarizer import register_summarizer, summarize
from .summary import ModuleSummary

__all__ = [
    "ClassBody",
    "Definition",
    "FunctionBody",
    "ModuleMap",
    "ModuleSummary",
    "ProjectIndex",
    "find_project_root",
    "register_summarizer",
    "stat_key",
    "summarize",
]
