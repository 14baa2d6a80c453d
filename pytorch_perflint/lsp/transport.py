"""Reading the client's messages: every request gets an answer, and a bad header does not
end the conversation.

pygls's own loop drops a message whose body is not JSON or whose params do not fit the
method without replying (a request with an id then waits forever), and after a header
such as ``Content-Length: abc`` it never answers again: the body that follows has no line
end, so it swallows the next message's header, and the next, and so on. Here a body that
is not JSON gets a parse error (-32700), a request whose params do not fit its method
gets an invalid-params error (-32602) with its id, and after a bad header the stream is
found again at the next ``Content-Length:``; the lost message, when it was a request,
gets an error with its id.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Optional, Tuple

from pygls.exceptions import JsonRpcInvalidParams

logger = logging.getLogger(__name__)

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32602, -32603
_HEADER = b"Content-Length:"
_LENGTH = re.compile(rb"^Content-Length:[ \t]*(\d+)[ \t]*\r?\n?$", re.IGNORECASE)
# A body larger than this is refused rather than read (the stream is then found again).
MAX_BODY = 512 * 1024 * 1024


def send_error(protocol: Any, msg_id: Any, code: int, message: str) -> None:
    """A JSON-RPC error response (``id`` null when the request's id is not known)."""
    if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
        msg_id = None
    protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def _request_id(raw: Any) -> Tuple[bool, Any]:
    """Whether a decoded message is a request (has a method and an id), and its id."""
    if isinstance(raw, dict) and "id" in raw and "method" in raw:
        return True, raw["id"]
    return False, None


def handle_body(protocol: Any, body: bytes) -> None:
    """Decode one message and hand it to pygls, answering a request that cannot be read."""
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError) as error:  # not JSON (or not UTF-8)
        send_error(protocol, None, PARSE_ERROR, f"Parse error: {error}")
        return
    if not isinstance(raw, dict) or raw.get("jsonrpc") != "2.0":
        is_request, msg_id = _request_id(raw)
        send_error(protocol, msg_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message object")
        return
    is_request, msg_id = _request_id(raw)
    if is_request and not isinstance(raw.get("method"), str):
        send_error(protocol, msg_id, INVALID_REQUEST, "Invalid Request: the method is not a string")
        return
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
    except JsonRpcInvalidParams as error:
        if is_request:
            send_error(protocol, msg_id, INVALID_PARAMS, f"Invalid params for {raw.get('method')}: {error.__cause__ or error}")
        else:
            logger.warning("invalid params in a notification %r", raw.get("method"))
        return
    except Exception as error:  # noqa: BLE001 - anything pygls cannot structure
        if is_request:
            send_error(protocol, msg_id, INVALID_REQUEST, f"Invalid Request: {error}")
        else:
            logger.warning("unreadable notification %r: %s", raw.get("method"), error)
        return
    try:
        protocol.handle_message(message)
    except Exception as error:  # noqa: BLE001 - the loop goes on
        logger.exception("Unable to handle message")
        if is_request:
            send_error(protocol, msg_id, INTERNAL_ERROR, f"Internal error: {error}")


def _lost(protocol: Any, junk: bytes) -> None:
    """Bytes read while the stream was lost (the body of a message whose header was bad):
    when they are a request, it gets an error with its id."""
    try:
        raw = json.loads(junk)
    except (ValueError, RecursionError):
        return
    is_request, msg_id = _request_id(raw)
    if is_request:
        send_error(protocol, msg_id, INVALID_REQUEST, "Invalid Request: its Content-Length header was missing or not a number")


async def serve(stop_event: Any, reader: Any, protocol: Any) -> None:
    """The message loop: headers up to an empty line, then exactly the body's bytes."""
    length: Optional[int] = None
    bad = False
    while not stop_event.is_set():
        line = await reader.readline()
        if not line:
            break
        start = line.find(_HEADER)
        if start > 0:  # a body without a line end, then the next message's header
            _lost(protocol, line[:start])
            line = line[start:]
            length, bad = None, False
        if line.strip():
            if line[: len(_HEADER)].lower() == _HEADER.lower():
                match = _LENGTH.match(line)
                if match is None or int(match.group(1)) > MAX_BODY:
                    bad = True
                else:
                    length = int(match.group(1))
            continue
        # The empty line that ends the headers.
        if length is None or bad:
            send_error(protocol, None, INVALID_REQUEST, "Invalid Request: the Content-Length header is missing or not a number")
            length, bad = None, False
            continue
        body = await reader.readexactly(length) if length else b""
        if length and not body:  # end of input
            break
        length = None
        handle_body(protocol, body)
