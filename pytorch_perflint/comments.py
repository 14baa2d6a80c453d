"""Where a line's comment starts, read without tokenizing the file."""

from __future__ import annotations

from typing import Optional


def comment_start(line: str) -> Optional[int]:
    """The column of the ``#`` that starts the comment of a line that starts outside any
    string (-1: no comment); None when the line ends inside a string or continues with a
    backslash, so that only the tokenizer can tell."""
    quote = ""
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            return index
        index += 1
    return None if quote or line.rstrip().endswith("\\") else -1
