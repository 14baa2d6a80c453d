"""Reading a Python file's bytes as the interpreter does (BOM, PEP 263 cookie, UTF-8), and
saying plainly why bytes that are not Python source cannot be (TPF001)."""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass


class Undecodable(Exception):
    """The bytes are not Python source text; the message says why (becomes TPF001)."""


@dataclass(frozen=True)
class Decoded:
    """Source text and how to turn it back into the same kind of bytes."""

    text: str
    # The codec; "utf-8-sig" when the file starts with a BOM (encoding writes it back).
    encoding: str


def decode(data: bytes) -> Decoded:
    """Decode Python source as the interpreter would: a BOM, else a PEP 263 cookie, else
    UTF-8. Newlines are left as they are (LibCST keeps ``\\r\\n``)."""
    if b"\0" in data:
        raise Undecodable("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        # An unknown codec in the cookie, a BOM that contradicts it, or (tokenize's words for
        # it) bytes in the first two lines that are not UTF-8: say which byte.
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise Undecodable(_bad_byte(data, bad, "utf-8")) from None
        raise Undecodable(str(error)) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise Undecodable(_bad_byte(data, error, "utf-8" if encoding == "utf-8-sig" else encoding)) from None
    except LookupError as error:
        raise Undecodable(str(error)) from None
    return Decoded(text, encoding)


def _bad_byte(data: bytes, error: UnicodeDecodeError, encoding: str) -> str:
    line = data.count(b"\n", 0, error.start) + 1
    return f"not valid {encoding} text: byte 0x{data[error.start]:02x} on line {line}"
