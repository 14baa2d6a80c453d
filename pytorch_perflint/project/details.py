"""Facts a rule needs about a few definitions, read on demand from their own lines: what a
function returns, what a class's ``__init__`` assigns, where a module calls project names,
and every ``.method(...)`` call of the project. Each is kept with the summary it was read
from (a mixin of ``ProjectIndex``, which provides ``summary``, ``text`` and the files)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple, Union

from .bodies import ClassBody, FunctionBody, class_body, function_body, locate, offered_tree
from .callsites import call_sites, method_call_sites
from .reads import ALL_TEXTS, TEXTS_NAMING
from .resolution import Definition
from .root import EXTERNAL_PACKAGES
from .scan import line_text
from .summarizer import parse
from .summary import CallSite, ModuleSummary

__all__ = ["ALL_TEXTS", "TEXTS_NAMING", "Details"]


class Details:
    """On-demand facts of ``ProjectIndex`` (see the module docstring)."""

    _details: Dict[Tuple[str, str], Tuple[ModuleSummary, object]]

    def _detail(self, path: str, what: str, compute):
        summary = self.summary(path)  # type: ignore[attr-defined]
        self.note_text(path)  # type: ignore[attr-defined]  # every detail is read from the text
        kept = self._details.get((path, what))
        if kept is not None and kept[0] is summary:
            return kept[1]
        value = compute(summary)
        self._details[(path, what)] = (summary, value)
        return value

    def function_body(self, definition: Definition) -> Optional[FunctionBody]:
        """What a project function or method returns (read from its own lines on demand)."""
        function = definition.function
        if function is None or definition.path is None:
            return None

        def compute(summary: ModuleSummary) -> Optional[FunctionBody]:
            text = self.text(definition.path)  # type: ignore[attr-defined]
            node = None if text is None else locate(text, function.line, function.end_line, function.name, False)
            return None if node is None else function_body(node, dict(summary.aliases))

        return self._detail(definition.path, f"def {definition.name}:{function.line}", compute)

    def class_body(self, definition: Definition) -> Optional[ClassBody]:
        """The ``__init__`` attributes of a project class (read on demand)."""
        klass = definition.klass
        if klass is None or definition.path is None or definition.kind != "class":
            return None

        def compute(summary: ModuleSummary) -> Optional[ClassBody]:
            text = self.text(definition.path)  # type: ignore[attr-defined]
            node = None if text is None else locate(text, klass.line, klass.end_line, klass.name, True)
            return None if node is None else class_body(node, dict(summary.aliases))  # type: ignore[arg-type]

        return self._detail(definition.path, f"class {definition.name}:{klass.line}", compute)

    def uses(self, path: Union[str, Path]) -> Tuple[CallSite, ...]:
        """Where the module calls or mentions names that may be project functions or
        classes (read on demand: only ``callers`` needs it)."""
        path = os.path.abspath(path)

        def compute(summary: ModuleSummary) -> Tuple[CallSite, ...]:
            text = self.text(path)  # type: ignore[attr-defined]
            tree = None if text is None or not summary.ok else offered_tree(text) or parse(text)[0]
            if tree is None:
                return ()
            names = {f.name for f in summary.functions} | {c.name for c in summary.classes}
            names |= {r.bound for r in summary.imports if not r.star and (r.level or r.module.split(".")[0] not in EXTERNAL_PACKAGES)}
            names |= {b.name for b in summary.bindings}
            methods = {m.name for c in summary.classes for m in c.methods}
            return call_sites(tree, line_text(text), names, methods, dict(summary.aliases))  # type: ignore[arg-type]

        return self._detail(path, "uses", compute)

    def star_uses(self, name: str, skip: str, only: Optional[Callable[[str], bool]] = None) -> Tuple[Tuple[str, CallSite], ...]:
        """Uses of ``name`` (bare, or the head of a chain) in the modules with a star import,
        which may bind it unseen (``from test import *`` then ``lfw_test(model)``: ``uses``
        looks only for the names a module binds itself); ``skip``: the defining module.
        ``only``: the modules the caller keeps, asked before a module's text is read."""
        out = []
        self.note_read(TEXTS_NAMING + name)  # type: ignore[attr-defined]  # (as text_naming notes it)
        for path in self.spelling(name, self.import_graph()):  # type: ignore[attr-defined]
            if path == skip or (only is not None and not only(path)):
                continue
            # The texts that spell the name, noted with the word: an edit elsewhere (a comment
            # in a module every other imports) leaves the answer valid.
            text = self.text_naming(path, name)  # type: ignore[attr-defined]
            if text is None:
                continue
            summary = self.summary(path)  # type: ignore[attr-defined]
            if not summary.ok or not any(r.star and r.module_scope for r in summary.imports):
                continue

            def compute(summary: ModuleSummary, path: str = path, text: str = text) -> Tuple[CallSite, ...]:
                tree = offered_tree(text) or parse(text)[0]
                return () if tree is None else call_sites(tree, line_text(text), {name}, (), dict(summary.aliases))

            known = {(site.line, site.callee) for site in self.uses(path)}
            found = self._detail(path, f"star uses {name}", compute)
            out.extend((path, site) for site in found if (site.line, site.callee) not in known)
        return tuple(out)

    def method_calls(self, method: str) -> Tuple[Tuple[str, CallSite], ...]:
        """Every ``<anything>.method(...)`` call in the project, with the calling module: the
        calls a method of any class may get (``trainer.train_step(batch)`` in a loop)."""
        out = []
        for path in self.spelling(method, self.module_paths()):  # type: ignore[attr-defined]  # the graph's nodes
            text = self.text_naming(path, f".{method}")  # type: ignore[attr-defined]
            if text is None:
                continue

            def compute(summary: ModuleSummary, path: str = path, text: str = text) -> Tuple[CallSite, ...]:
                tree = (offered_tree(text) or parse(text)[0]) if summary.ok else None
                return () if tree is None else method_call_sites(tree, line_text(text), method, dict(summary.aliases))

            out.extend((path, site) for site in self._detail(path, f"calls .{method}", compute))
        return tuple(out)

