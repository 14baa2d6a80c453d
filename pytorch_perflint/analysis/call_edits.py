"""Editing a call's arguments the way its author formatted them.

A fix that adds ``device=`` or ``dtype=`` must look hand-written: a call laid out one argument
per line with a trailing comma gets the new argument on its own line the same way; any other
call gets ``, name=value`` appended.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst


def _one_per_line(call: cst.Call) -> bool:
    """Whether the call's last argument ends in a comma followed by a line break."""
    if not call.args:
        return False
    comma = call.args[-1].comma
    return isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace)


def _bare(whitespace: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """A line break with its indentation but without the comment or blank lines it carried."""
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return whitespace


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    """``name=value`` with no spaces around ``=`` (PEP 8 for keyword arguments)."""
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def with_keywords(call: cst.Call, new: Sequence[cst.Arg]) -> cst.Call:
    """``call`` with the keyword arguments ``new`` added after its own, in its own style."""
    if not new:
        return call
    args = list(call.args)
    if _one_per_line(call):
        last_comma = args[-1].comma
        assert isinstance(last_comma, cst.Comma)
        # Every added line is broken like the ones before it; the last keeps the line
        # break (and indentation) that leads to the closing parenthesis.
        if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
            line_break = args[-2].comma.whitespace_after
        else:
            line_break = call.whitespace_before_args
        between = cst.Comma(whitespace_after=_bare(line_break))
        args[-1] = args[-1].with_changes(comma=between)
        tail = [arg.with_changes(comma=between) for arg in new[:-1]]
        tail.append(new[-1].with_changes(comma=last_comma))
        return call.with_changes(args=[*args, *tail])
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if args:
        args[-1] = args[-1].with_changes(comma=space)
    tail = [arg.with_changes(comma=space) for arg in new[:-1]]
    tail.append(new[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT))
    return call.with_changes(args=[*args, *tail])

