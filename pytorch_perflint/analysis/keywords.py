"""Setting a keyword argument of a call in the call's own layout, for fixes.

A fix that adds ``num_workers=4`` must read as if the author had written it: appended as
``, num_workers=4`` on a call written on one line (or wrapped without a trailing comma), and
on a line of its own, with a trailing comma, in a call written one argument per line.
"""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

_NO_SPACE = cst.SimpleWhitespace("")


def keyword_arg(call: cst.Call, keyword: str) -> Optional[cst.Arg]:
    """The explicit ``keyword=`` argument of ``call``, if any."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    return None


def with_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` passing ``keyword=value``: an explicit argument gets the new value, else one
    is appended in the call's layout."""
    existing = keyword_arg(call, keyword)
    if existing is not None:
        return call.with_changes(args=[a.with_changes(value=value) if a is existing else a for a in call.args])
    new = cst.Arg(
        value=value,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE),
    )
    return call.with_changes(args=_append(call, list(call.args), new))


def with_positional_value(call: cst.Call, arg: cst.Arg, value: cst.BaseExpression) -> cst.Call:
    """``call`` with the value of one of its own arguments replaced."""
    return call.with_changes(args=[a.with_changes(value=value) if a is arg else a for a in call.args])


def _append(call: cst.Call, args: List[cst.Arg], new: cst.Arg) -> List[cst.Arg]:
    if not args:
        return [new]
    last = args[-1]
    comma = last.comma
    if isinstance(comma, cst.Comma):
        after = comma.whitespace_after
        if isinstance(after, cst.ParenthesizedWhitespace):
            # One argument per line, trailing comma: the new one goes on its own line.
            indent = _argument_indent(call, args)
            kept = comma.with_changes(whitespace_after=after.with_changes(last_line=indent))
            args[-1] = last.with_changes(comma=kept)
            closing = cst.ParenthesizedWhitespace(
                first_line=cst.TrailingWhitespace(),
                empty_lines=[],
                indent=after.indent,
                last_line=after.last_line,
            )
            return [*args, new.with_changes(comma=cst.Comma(whitespace_after=closing))]
        # A trailing comma on one line: keep it after the new argument.
        args[-1] = last.with_changes(comma=comma.with_changes(whitespace_after=cst.SimpleWhitespace(" ")))
        return [*args, new.with_changes(comma=cst.Comma(whitespace_before=comma.whitespace_before))]
    # No trailing comma: append `, keyword=value` where the last argument ends.
    args[-1] = last.with_changes(
        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
        whitespace_after_arg=_NO_SPACE,
    )
    return [*args, new.with_changes(whitespace_after_arg=last.whitespace_after_arg)]


def _argument_indent(call: cst.Call, args: List[cst.Arg]) -> cst.SimpleWhitespace:
    """The indentation of the arguments of a call written one per line."""
    if len(args) >= 2:
        previous = args[-2].comma
        if isinstance(previous, cst.Comma) and isinstance(previous.whitespace_after, cst.ParenthesizedWhitespace):
            return previous.whitespace_after.last_line
    opening = call.whitespace_before_args
    if isinstance(opening, cst.ParenthesizedWhitespace):
        return opening.last_line
    return cst.SimpleWhitespace("    ")
