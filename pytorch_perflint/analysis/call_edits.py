"""Editing a call's arguments the way its author formatted them.

A fix that adds ``device=`` or ``dtype=`` must look hand-written: a call laid out one argument
per line with a trailing comma gets the new argument on its own line the same way; any other
call gets ``, name=value`` appended.
"""

from __future__ import annotations

from typing import Optional, Sequence

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
        after_last = last_comma.whitespace_after
        assert isinstance(after_last, cst.ParenthesizedWhitespace)
        if not isinstance(line_break, cst.ParenthesizedWhitespace):  # `f(a,  # note\n)`
            between = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            args[-1] = args[-1].with_changes(comma=between)
            tail = [arg.with_changes(comma=between) for arg in new[:-1]]
            return call.with_changes(args=[*args, *tail, new[-1].with_changes(comma=last_comma)])
        between = cst.Comma(whitespace_after=_bare(line_break))
        # A comment on the old last argument's line stays there; the comment lines and
        # the indentation before ``)`` move after the new last argument.
        own_line = _bare(line_break).with_changes(first_line=after_last.first_line)
        args[-1] = args[-1].with_changes(comma=last_comma.with_changes(whitespace_after=own_line))
        tail = [arg.with_changes(comma=between) for arg in new[:-1]]
        closing = after_last.with_changes(first_line=cst.TrailingWhitespace())
        tail.append(new[-1].with_changes(comma=last_comma.with_changes(whitespace_after=closing)))
        return call.with_changes(args=[*args, *tail])
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    closing: cst.BaseParenthesizableWhitespace = cst.SimpleWhitespace("")
    if args:
        # What stood between the last argument and ``)`` (a line break, say) now follows
        # the new last argument.
        closing = args[-1].whitespace_after_arg
        args[-1] = args[-1].with_changes(comma=space, whitespace_after_arg=cst.SimpleWhitespace(""))
    tail = [arg.with_changes(comma=space) for arg in new[:-1]]
    tail.append(new[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=closing))
    return call.with_changes(args=[*args, *tail])



def find_keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    """The explicit ``name=`` argument of ``call``, if any."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def with_argument_value(call: cst.Call, arg: cst.Arg, value: cst.BaseExpression) -> cst.Call:
    """``call`` with the value of one of its own arguments replaced."""
    return call.with_changes(args=[a.with_changes(value=value) if a is arg else a for a in call.args])


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` passing ``name=value``: an explicit argument gets the new value, else one is
    added in the call's own layout."""
    existing = find_keyword(call, name)
    if existing is not None:
        return with_argument_value(call, existing, value)
    return with_keywords(call, [keyword_arg(name, value)])
