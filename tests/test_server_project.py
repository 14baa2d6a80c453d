"""The language server on a project: each document linted on its own (a long buffer does
not hold a short file back), quick fixes for the diagnostics the client sends, the first
answers from ``check``'s on-disk cache, and a project without one indexed in the
background with progress shown after the opened file was answered (issues 21 and 25).

A real LSP client (pytest-lsp) drives ``pytorch-perflint server``; waits are on what the
client received, with generous timeouts: nothing here times the server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import List, Tuple

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp (Python 3.10+) drives the server")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from pytorch_perflint.cache import CACHE_DIR  # noqa: E402
from test_cache_and_notebooks_cli import run  # noqa: E402
from test_server import TIMEOUT, Doc, codes, count, published  # noqa: E402
from test_server_command import server_command  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

TRACES: List[str] = []
EVENTS: List[Tuple[str, str]] = []  # ("diagnostics", uri) and ("progress", kind), in arrival order


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=server_command()))
async def client(lsp_client: LanguageClient):
    @lsp_client.feature(types.LOG_TRACE)
    def log_trace(params: types.LogTraceParams) -> None:
        TRACES.append(params.message)

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        pass  # the server asks to watch files; nothing here changes them behind its back

    # pytest-lsp's own handlers record what arrived; these wrap them to keep the order.
    features = lsp_client.protocol.fm.features

    def recorded(name: str, event) -> None:
        handler = features[name]

        def wrapper(*args):
            EVENTS.append(event(args[-1]))
            return handler(*args)

        features[name] = wrapper

    def kind(params: types.ProgressParams) -> str:
        value = params.value
        return str(value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None))

    recorded(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, lambda params: ("diagnostics", params.uri))
    recorded(types.PROGRESS, lambda params: ("progress", kind(params)))

    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"lintDelay": 0.2},
            trace=types.TraceValue.Verbose,
        )
    )
    yield
    await lsp_client.shutdown_session()


LOADER = "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(ds, batch_size=8, num_workers=4)\nfor x in loader:\n    x = x.cuda()\n"


def _long_buffer(functions: int) -> str:
    lines = ["import torch", "from torch.utils.data import DataLoader", ""]
    for number in range(functions):
        lines += [f"def f{number}(ds, model):", f"    loader = DataLoader(ds, batch_size={number + 1})", "    for x in loader:", "        y = model(x.cuda())", ""]
    return "\n".join(lines) + "\n"


async def test_a_short_file_is_answered_while_a_long_buffer_is_still_linted(client: LanguageClient, tmp_path):
    """Issue 21 item 11: a 14-line file waited 46 s behind a 50,000-line buffer."""
    long = Doc(client, tmp_path / "long.py", _long_buffer(3500))  # about 17,500 lines
    short = Doc(client, tmp_path / "short.py", LOADER)
    assert "TPF102" in codes(await published(client, short.uri, count(1)))
    assert long.uri not in client.diagnostics  # its lint goes on beside
    assert len(await published(client, long.uri)) > 1000


async def test_a_lint_that_an_edit_made_useless_is_stopped(client: LanguageClient, tmp_path):
    long = Doc(client, tmp_path / "edited.py", _long_buffer(3500))
    assert await _traced(f"linting {long.uri} version 1")
    long.change(LOADER)  # the whole buffer replaced while its first lint runs
    assert codes(await published(client, long.uri, count(1))) == ["TPF102"]
    assert any(m == f"stopped a lint of {long.uri}: its text was replaced" for m in TRACES)
    assert not any(m.startswith(f"linted {long.uri} version 1") for m in TRACES)


async def test_quick_fixes_come_for_the_diagnostics_the_client_sends(client: LanguageClient, tmp_path):
    """A cursor at column 0 of the flagged line (outside the flagged span): editors send
    that line's diagnostics in the request's context, and expect their fixes."""
    doc = Doc(client, tmp_path / "cursor.py", LOADER)
    (shown,) = await published(client, doc.uri, count(1))
    assert shown.range.start.character > 0
    cursor = types.Position(line=shown.range.start.line, character=0)
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=types.Range(start=cursor, end=cursor),
            context=types.CodeActionContext(diagnostics=[shown]),
        )
    )
    titles = [action.title for action in found or [] if isinstance(action, types.CodeAction)]
    assert any(title.startswith("Fix TPF102") for title in titles), titles
    assert "Disable TPF102 for this line" in titles


async def _traced(start: str) -> bool:
    """Whether the server traced a line starting with ``start`` (waiting for it)."""
    for _ in range(int(TIMEOUT / 0.2)):
        if any(m.startswith(start) for m in TRACES):
            return True
        await asyncio.sleep(0.2)
    return False


def _project(root: Path, modules: int) -> Path:
    root.mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "model.py").write_text("import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.cuda()\n")
    (root / "train.py").write_text("from torch.utils.data import DataLoader\nfrom model import Net\n\nloader = DataLoader(ds, num_workers=2)\nnet = Net()\n")
    for number in range(modules):
        (root / f"helper_{number}.py").write_text(f"import torch\n\n\ndef helper_{number}(x):\n    return x + {number}\n")
    return root


async def test_the_first_diagnostics_come_from_the_on_disk_cache_of_check(client: LanguageClient, tmp_path):
    """Issue 25: the server started from nothing (13.8 s on the torch package); a file
    that ``check`` cached and that is unchanged is answered without being linted."""
    root = _project(tmp_path / "warm", 5)
    assert "train.py:4" in run(["check", "--output-format", "concise", "."], root).output
    doc = Doc(client, root / "train.py", (root / "train.py").read_text())
    assert codes(await published(client, doc.uri, count(1))) == ["TPF102"]
    assert any(m.startswith(f"answered from the on-disk cache {doc.uri}") for m in TRACES), TRACES[-3:]
    doc.type_at_end("# edited\n")  # a buffer that is not the file: linted
    assert await _traced(f"linted {doc.uri} version 2")


async def test_a_project_without_a_cache_is_indexed_after_the_opened_file_was_answered(client: LanguageClient, tmp_path):
    root = _project(tmp_path / "cold", 30)
    before = len(EVENTS)
    doc = Doc(client, root / "train.py", (root / "train.py").read_text())
    assert codes(await published(client, doc.uri, count(1))) == ["TPF102"]
    for _ in range(int(TIMEOUT / 0.2)):
        if ("progress", "end") in EVENTS[before:]:
            break
        await asyncio.sleep(0.2)
    events = EVENTS[before:]
    assert ("progress", "begin") in events and ("progress", "end") in events, events
    assert events.index(("diagnostics", doc.uri)) < events.index(("progress", "begin"))  # the file first
    # What was indexed is kept for the next start, in check's own cache.
    assert len(list((root / CACHE_DIR / "summaries").glob("*.json"))) == 32  # the file on disk, not the buffer
    state = json.loads((root / CACHE_DIR / "lint.json").read_text())["projects"][str(root)]
    assert str(root / "model.py") in state["modules"]
