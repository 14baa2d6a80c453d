"""The roots of an array TPF401's second-stage screen asks the project about: a project name
counts as an array source unless the index rules it out (``never_array``), asked once per
name when first met; ``name + EACH`` asks about what walking or unpacking it gives."""

from __future__ import annotations

from typing import Callable, Set

EACH = "[*]"  # a project name asked with this suffix: could walking what it returns give arrays?


class AskedRoots:
    """The roots of an array: the array modules' names, and the project's names that
    ``never_array`` does not rule out (asked once per name, when first met)."""

    def __init__(self, arrays: Set[str], project: Set[str], never_array: Callable[[str], bool]) -> None:
        self.arrays, self.project, self.never_array = arrays, project, never_array
        self.answers: dict = {}

    def __contains__(self, name: object) -> bool:
        if name in self.arrays:
            return True
        if name not in self.project:
            return False
        if name not in self.answers:
            self.answers[name] = not self.never_array(name)  # type: ignore[arg-type]
        return self.answers[name]

    def each(self, name: str) -> bool:
        """Walking what project name ``name`` gives could give arrays (asked as ``name +
        EACH``: a generator's yields, a returned list's items)."""
        if name in self.arrays:
            return True
        if name not in self.project:
            return False
        key = name + EACH
        if key not in self.answers:
            self.answers[key] = not self.never_array(key)
        return self.answers[key]

    def unpacked(self) -> "UnpackedRoots":
        return UnpackedRoots(self)


class UnpackedRoots:
    """``AskedRoots`` for a value unpacked into names (``feats, names = load(p)``): a project
    name counts when what it gives may hold an array anywhere (asked as walking it is)."""

    def __init__(self, roots: AskedRoots) -> None:
        self.roots = roots

    def __contains__(self, name: object) -> bool:
        return self.roots.each(name)  # type: ignore[arg-type]
