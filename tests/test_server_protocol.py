"""Issue 21 item 11: the server answers every request, even one it cannot read, and a bad
header does not end the conversation. Bytes are written to the server as a broken client
would write them (no pytest-lsp: its client only sends well-formed messages)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any, Dict, List, Optional

import pytest

pytest.importorskip("pygls", reason="the server's optional dependency")

from test_server_command import server_command  # noqa: E402

TIMEOUT = 90  # seconds: a loaded machine starts Python slowly


class RawClient:
    def __init__(self) -> None:
        self.process = subprocess.Popen(server_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self.seen: List[Dict[str, Any]] = []  # read, not asked for yet
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert length is not None
            self.messages.put(json.loads(out.read(length)))

    def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: Dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def reply(self, msg_id: Any) -> Dict[str, Any]:
        """The response with ``msg_id`` (None: an error response without an id)."""
        while True:
            for message in self.seen:
                if "method" not in message and message.get("id") == msg_id:
                    self.seen.remove(message)
                    return message
            self.seen.append(self.messages.get(timeout=TIMEOUT))

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def client():
    raw = RawClient()
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "processId": None, "rootUri": None}})
    assert "result" in raw.reply(1)
    raw.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    yield raw
    raw.close()


def _error(message: Dict[str, Any]) -> Optional[int]:
    return message.get("error", {}).get("code")


def test_a_body_that_is_not_json_gets_a_parse_error(client):
    body = b'{"jsonrpc": "2.0", "id": 7, "method": '
    client.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert _error(client.reply(None)) == -32700
    client.send({"jsonrpc": "2.0", "id": 8, "method": "shutdown"})
    assert "result" in client.reply(8)  # and it goes on


@pytest.mark.parametrize("params", [None, {"textDocument": 5}, []])
def test_a_request_with_null_or_invalid_params_gets_an_error_with_its_id(client, params):
    client.send({"jsonrpc": "2.0", "id": 9, "method": "textDocument/hover", "params": params})
    reply = client.reply(9)
    assert _error(reply) in (-32602, -32600), reply


def test_after_a_content_length_that_is_not_a_number_it_answers_again(client):
    lost = json.dumps({"jsonrpc": "2.0", "id": 10, "method": "shutdown"}).encode()
    client.send_raw(b"Content-Length: abc\r\n\r\n" + lost)
    client.send({"jsonrpc": "2.0", "id": 11, "method": "shutdown"})
    assert "result" in client.reply(11)
    assert _error(client.reply(10)) == -32600  # the lost request is answered too, not left waiting
