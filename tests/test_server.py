"""The language server end to end: a real LSP client (pytest-lsp) drives
``pytorch-perflint server`` as a subprocess, started with the command the README shows.

One server serves the whole module (each test uses its own documents). Waits are on what
the client has received, with generous timeouts: nothing here times the server.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp (Python 3.10+) drives the server")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from pytorch_perflint.rules_list import rule_infos  # noqa: E402
from pytorch_perflint.lsp.actions import FIX_ALL_KIND  # noqa: E402
from test_server_command import server_command  # noqa: E402 - the README's command line

TIMEOUT = 90  # seconds: a loaded 2-core machine starts Python slowly
LINT_DELAY = 1.0  # the server's pause after a change (the debounce test needs a clear gap)

pytestmark = pytest.mark.asyncio(loop_scope="module")


# --------------------------------------------------------------------------------------
# The client.

TRACES: List[str] = []
REGISTRATIONS: List[types.Registration] = []  # what the server asked the client to watch


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=server_command()))
async def client(lsp_client: LanguageClient):
    @lsp_client.feature(types.LOG_TRACE)
    def log_trace(params: types.LogTraceParams) -> None:
        TRACES.append(params.message)

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        REGISTRATIONS.extend(params.registrations)

    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"lintDelay": LINT_DELAY},
            trace=types.TraceValue.Verbose,
        )
    )
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, uri: str, ready: Callable[[Sequence[types.Diagnostic]], bool] = lambda d: True):
    """The diagnostics of ``uri`` once the published ones satisfy ``ready``."""

    async def wait() -> Sequence[types.Diagnostic]:
        while True:
            # Registered before looking, so a notification between the two is not missed.
            arrived = client.protocol.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            shown = client.diagnostics.get(uri)
            if shown is not None and ready(shown):
                return list(shown)
            await asyncio.wrap_future(arrived)

    return await asyncio.wait_for(wait(), TIMEOUT)


def count(n: int) -> Callable[[Sequence[types.Diagnostic]], bool]:
    return lambda diagnostics: len(diagnostics) == n


def codes(diagnostics: Sequence[types.Diagnostic]) -> List[str]:
    return sorted(str(d.code) for d in diagnostics)


class Doc:
    """A document the test edits as an editor would: full-text changes, versions counted."""

    def __init__(self, client: LanguageClient, path: Path, text: str) -> None:
        self.client, self.uri, self.text, self.version = client, path.as_uri(), text, 1
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=self.uri, language_id="python", version=1, text=text)
            )
        )

    def change(self, text: str) -> None:
        self.text, self.version = text, self.version + 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def type_at_end(self, typed: str) -> None:
        """An incremental change, as editors send while typing: insert at the end."""
        lines = self.text.split("\n")
        end = types.Position(line=len(lines) - 1, character=len(lines[-1].encode("utf-16-le")) // 2)
        self.text, self.version = self.text + typed, self.version + 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=end, end=end), text=typed)],
            )
        )

    def close(self) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=self.uri)))

    async def actions(self, where: types.Range, only: Optional[List[str]] = None) -> List[types.CodeAction]:
        found = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=self.uri),
                range=where,
                context=types.CodeActionContext(diagnostics=[], only=only),
            )
        )
        return [action for action in found or [] if isinstance(action, types.CodeAction)]


def offset(text: str, position: types.Position) -> int:
    """A UTF-16 LSP position as an offset into ``text`` (lines end at \\r\\n, \\r or \\n)."""
    starts = [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", text))]
    if position.line >= len(starts):
        return len(text)
    at, units = starts[position.line], 0
    while units < position.character and at < len(text) and text[at] not in "\r\n":
        units += 2 if ord(text[at]) > 0xFFFF else 1
        at += 1
    return at


def apply_edit(texts: Dict[str, str], edit: Optional[types.WorkspaceEdit], versions: Dict[str, int]) -> Dict[str, str]:
    """The documents after a workspace edit, as an editor applies it (checking versions)."""
    assert edit is not None
    changed = dict(texts)
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit)
        uri = change.text_document.uri
        assert change.text_document.version == versions[uri], "the edit is for another version"
        text = changed[uri]
        for text_edit in sorted(change.edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
            assert isinstance(text_edit, types.TextEdit)
            text = text[: offset(text, text_edit.range.start)] + text_edit.new_text + text[offset(text, text_edit.range.end) :]
        changed[uri] = text
    assert not edit.changes, "versioned documentChanges are expected from a client that supports them"
    return changed


def at(line: int, character: int) -> types.Range:
    """An empty range: a cursor."""
    position = types.Position(line=line, character=character)
    return types.Range(start=position, end=position)


async def hover_at(client: LanguageClient, uri: str, position: types.Position) -> Optional[types.Hover]:
    return await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=position)
    )


KINDS = {"python": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}


def titled(actions: Sequence[types.CodeAction], start: str) -> types.CodeAction:
    (action,) = [a for a in actions if a.title.startswith(start)]
    return action


CUDA_LOADER = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "\n"
    'device = torch.device("cuda")\n'
    "loader = DataLoader(dataset, batch_size=32)\n"
    "for x, y in loader:\n"
    "    x = x.to(device)\n"
)
FIXED = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "\n"
    'device = torch.device("cuda")\n'
    "loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)\n"
    "for x, y in loader:\n"
    "    x = x.to(device, non_blocking=True)\n"
)


# --------------------------------------------------------------------------------------
# The tests.


async def test_diagnostic_fix_and_cleared_diagnostics(client: LanguageClient, tmp_path):
    (tmp_path / "train.py").write_text("import torch\n")  # on disk; the buffer is what counts
    doc = Doc(client, tmp_path / "train.py", CUDA_LOADER)
    shown = await published(client, doc.uri, lambda d: len(d) > 0)
    assert codes(shown) == ["TPF101", "TPF102"]
    first = shown[0]
    assert first.source == "pytorch-perflint"
    assert first.severity == types.DiagnosticSeverity.Warning
    assert first.range == types.Range(start=types.Position(line=4, character=9), end=types.Position(line=4, character=43))
    assert first.code_description is not None and first.code_description.href.endswith("#tpf101")
    assert "num_workers" in first.message

    actions = await doc.actions(first.range)
    unsafe = titled(actions, "Fix TPF101 (unsafe)")
    safe = titled(actions, "Fix TPF102 (safe)")
    assert unsafe.kind == types.CodeActionKind.QuickFix and not unsafe.is_preferred
    assert safe.is_preferred
    assert unsafe.diagnostics and codes(unsafe.diagnostics) == ["TPF101"]

    texts = apply_edit({doc.uri: doc.text}, unsafe.edit, {doc.uri: doc.version})
    assert texts[doc.uri] == CUDA_LOADER.replace("batch_size=32)", "batch_size=32, num_workers=4)")
    doc.change(texts[doc.uri])
    assert codes(await published(client, doc.uri, lambda d: codes(d) == ["TPF102"])) == ["TPF102"]

    (fix_all,) = await doc.actions(at(0, 0), only=[types.CodeActionKind.SourceFixAll])
    assert fix_all.kind == FIX_ALL_KIND
    assert fix_all.edit is None  # computed when picked: the client resolves it
    fix_all = await client.code_action_resolve_async(fix_all)
    texts = apply_edit({doc.uri: doc.text}, fix_all.edit, {doc.uri: doc.version})
    assert texts[doc.uri] == FIXED  # pin_memory, then the non_blocking copy it enables
    doc.change(texts[doc.uri])
    assert await published(client, doc.uri, lambda d: len(d) == 0) == []

    doc.change(CUDA_LOADER)
    await published(client, doc.uri, lambda d: len(d) > 0)
    doc.close()
    assert await published(client, doc.uri, lambda d: len(d) == 0) == []


async def test_fix_all_leaves_unsafe_fixes_and_is_only_offered_when_there_is_a_safe_one(client: LanguageClient, tmp_path):
    doc = Doc(client, tmp_path / "unsafe_only.py", "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n")
    assert codes(await published(client, doc.uri, lambda d: len(d) > 0)) == ["TPF101"]
    everything = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=2, character=0))
    assert await doc.actions(everything, only=[types.CodeActionKind.SourceFixAll]) == []
    quick = await doc.actions(everything, only=[types.CodeActionKind.QuickFix])
    assert sorted(a.title for a in quick) == ["Disable TPF101 for this line", "Fix TPF101 (unsafe): Add `num_workers=4`"]
    doc.close()


async def test_disable_for_this_line_adds_or_extends_the_noqa(client: LanguageClient, tmp_path):
    text = "import torch\nmodel = torch.nn.DataParallel(model)\nother = torch.nn.DataParallel(other)  # noqa: E501\n"
    doc = Doc(client, tmp_path / "noqa.py", text)
    shown = await published(client, doc.uri, count(2))
    for remaining in (1, 0):
        actions = await doc.actions(shown[0].range)
        assert [a.title for a in actions] == ["Disable TPF501 for this line"]  # display-only: no fix
        texts = apply_edit({doc.uri: doc.text}, actions[0].edit, {doc.uri: doc.version})
        doc.change(texts[doc.uri])
        shown = await published(client, doc.uri, count(remaining))
    assert doc.text == (
        "import torch\nmodel = torch.nn.DataParallel(model)  # noqa: TPF501\n"
        "other = torch.nn.DataParallel(other)  # noqa: E501, TPF501\n"
    )
    doc.close()


async def test_hover_shows_the_rule_summary_and_link(client: LanguageClient, tmp_path):
    doc = Doc(client, tmp_path / "a folder" / "hover é.py", "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n")
    (diagnostic,) = await published(client, doc.uri, lambda d: len(d) > 0)
    hover = await hover_at(client, doc.uri, at(1, 12).start)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    summary = next(info["summary"] for info in rule_infos() if info["code"] == "TPF101")
    assert summary and summary in hover.contents.value
    assert "**TPF101**" in hover.contents.value and "docs/rules.md#tpf101" in hover.contents.value
    assert hover.range == diagnostic.range
    assert await hover_at(client, doc.uri, at(0, 2).start) is None
    doc.close()


async def test_columns_are_utf16_code_units(client: LanguageClient, tmp_path):
    text = 'from torch.utils.data import DataLoader\ns = "\U0001f600é"; loader = DataLoader(ds)\n'
    doc = Doc(client, tmp_path / "wide.py", text)
    (diagnostic,) = await published(client, doc.uri, lambda d: len(d) > 0)
    # `s = "😀é"; loader = ` is 19 characters but 20 UTF-16 units (the emoji takes two).
    assert diagnostic.range.start == types.Position(line=1, character=20)
    assert diagnostic.range.end == types.Position(line=1, character=34)
    for title, expected in [
        ("Fix TPF101", 's = "\U0001f600é"; loader = DataLoader(ds, num_workers=4)\n'),
        ("Disable TPF101", 's = "\U0001f600é"; loader = DataLoader(ds)  # noqa: TPF101\n'),
    ]:
        action = titled(await doc.actions(diagnostic.range), title)
        texts = apply_edit({doc.uri: doc.text}, action.edit, {doc.uri: doc.version})
        assert texts[doc.uri].splitlines(keepends=True)[1] == expected
    doc.close()


async def test_a_syntax_error_is_an_error_diagnostic_until_it_is_fixed(client: LanguageClient, tmp_path):
    doc = Doc(client, tmp_path / "broken.py", "import torch\ndef f(:\n    pass\n")
    (diagnostic,) = await published(client, doc.uri, lambda d: len(d) > 0)
    assert diagnostic.code == "TPF001" and diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.range.start.line == 1
    assert [a.title for a in await doc.actions(diagnostic.range)] == []  # no fix, no noqa for it
    doc.change("import torch\ndef f():\n    pass\n")
    assert await published(client, doc.uri, lambda d: len(d) == 0) == []
    doc.close()


async def test_changes_are_linted_once_typing_pauses(client: LanguageClient, tmp_path):
    doc = Doc(client, tmp_path / "typing.py", "import torch\n")
    await published(client, doc.uri)
    start = len(TRACES)
    for typed in ["model", " =", " torch.nn", ".DataParallel", "(model)  # é\U0001f600\n", "x = 1"]:
        doc.type_at_end(typed)  # six changes in a burst, well inside the lint delay
    assert codes(await published(client, doc.uri, lambda d: len(d) > 0)) == ["TPF501"]
    lints = [line for line in TRACES[start:] if line.startswith(f"linted {doc.uri} ") and "for fixes" not in line]
    assert lints and all(f"version {doc.version}:" in line for line in lints), lints
    assert len(lints) == 1, lints
    (diagnostic,) = client.diagnostics[doc.uri]
    assert diagnostic.range.end == types.Position(line=1, character=36)  # the buffer as typed
    doc.close()


async def test_project_settings_per_file_ignores_and_excludes_apply(client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.pytorch-perflint]\n"
        'ignore = ["TPF102"]\n'
        'extend-exclude = ["generated"]\n'
        'per-file-ignores = { "tests/*" = ["TPF101"] }\n'
    )
    (tmp_path / "src").mkdir()
    doc = Doc(client, tmp_path / "src" / "train.py", CUDA_LOADER)
    assert codes(await published(client, doc.uri)) == ["TPF101"]
    test_doc = Doc(client, tmp_path / "tests" / "test_train.py", CUDA_LOADER)
    assert codes(await published(client, test_doc.uri)) == []
    generated = Doc(client, tmp_path / "generated" / "train.py", CUDA_LOADER)
    assert codes(await published(client, generated.uri)) == []
    for each in (doc, test_doc, generated):
        each.close()


async def test_an_invalid_config_is_shown_not_linted_with_defaults(client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselectt = ["ALL"]\n')
    doc = Doc(client, tmp_path / "train.py", CUDA_LOADER)
    assert await published(client, doc.uri) == []
    assert any("unknown key 'selectt'" in message.message for message in client.messages)
    doc.close()


async def test_notebook_cells_get_their_diagnostics_and_fixes(client: LanguageClient, tmp_path):
    notebook_uri = (tmp_path / "explore.ipynb").as_uri()
    cells = {
        f"{notebook_uri}#cell1": ("python", 'import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device("cuda")'),
        f"{notebook_uri}#cell2": ("markdown", "# Loading"),
        f"{notebook_uri}#cell3": ("python", "%time x = 1\nloader = DataLoader(ds)\nmodel = torch.nn.DataParallel(model)"),
    }
    texts = {uri: text for uri, (_, text) in cells.items()}
    versions = {uri: 1 for uri in cells}
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=KINDS[language], document=uri) for uri, (language, _) in cells.items()],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
                for uri, (language, text) in cells.items()
            ],
        )
    )
    third = f"{notebook_uri}#cell3"
    shown = await published(client, third, lambda d: len(d) > 0)
    assert codes(shown) == ["TPF101", "TPF102", "TPF501"]
    assert {d.range.start.line for d in shown} == {1, 2}  # rows of the cell, magic line kept
    assert await published(client, f"{notebook_uri}#cell1") == []
    parallel = next(d for d in shown if d.code == "TPF501")
    hover = await hover_at(client, third, parallel.range.start)
    assert hover is not None and "**TPF501**" in hover.contents.value  # type: ignore[union-attr]

    async def act(title: str, diagnostic: types.Diagnostic, only: Optional[List[str]] = None) -> None:
        found = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=third),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic], only=only),
            )
        )
        action = titled([a for a in found or [] if isinstance(a, types.CodeAction)], title)
        if action.edit is None:
            action = await client.code_action_resolve_async(action)
        texts.update(apply_edit(texts, action.edit, versions))
        versions[third] += 1
        client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook_uri, version=versions[third]),
                change=types.NotebookDocumentChangeEvent(
                    cells=types.NotebookDocumentCellChanges(
                        text_content=[
                            types.NotebookDocumentCellContentChanges(
                                document=types.VersionedTextDocumentIdentifier(uri=third, version=versions[third]),
                                changes=[types.TextDocumentContentChangeWholeDocument(text=texts[third])],
                            )
                        ]
                    )
                ),
            )
        )

    await act("pytorch-perflint: apply all safe fixes", parallel, only=[types.CodeActionKind.SourceFixAll])
    assert texts[third] == "%time x = 1\nloader = DataLoader(ds, pin_memory=True)\nmodel = torch.nn.DataParallel(model)"
    loader = next(d for d in await published(client, third, lambda d: codes(d) == ["TPF101", "TPF501"]) if d.code == "TPF101")
    await act("Fix TPF101 (unsafe)", loader)
    assert texts[third] == "%time x = 1\nloader = DataLoader(ds, pin_memory=True, num_workers=4)\nmodel = torch.nn.DataParallel(model)"
    (parallel,) = await published(client, third, lambda d: codes(d) == ["TPF501"])
    await act("Disable TPF501", parallel)
    assert texts[third].endswith("model = torch.nn.DataParallel(model)  # noqa: TPF501")
    assert await published(client, third, lambda d: len(d) == 0) == []

    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=notebook_uri),
            cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri in cells],
        )
    )


async def test_a_changed_setting_on_disk_relints_the_open_buffers(client: LanguageClient, tmp_path):
    """The editor reports the saved pyproject.toml through the watchers the server
    registered; every open buffer is linted again with the new settings."""
    (tmp_path / "pyproject.toml").write_text("[tool.pytorch-perflint]\n")
    doc = Doc(client, tmp_path / "train.py", CUDA_LOADER)
    assert "TPF101" in codes(await published(client, doc.uri, lambda d: len(d) > 0))
    (options,) = [r.register_options for r in REGISTRATIONS if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    assert {"**/pyproject.toml", "**/*.py"} <= {watcher["globPattern"] for watcher in options["watchers"]}
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\nignore = ["TPF101"]\n')
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=(tmp_path / "pyproject.toml").as_uri(), type=types.FileChangeType.Changed)]
        )
    )
    after = await published(client, doc.uri, lambda d: "TPF101" not in codes(d))
    assert after and "TPF101" not in codes(after)
    doc.close()


async def test_saving_the_settings_in_a_client_that_sends_every_save_relints(client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.pytorch-perflint]\n")
    doc = Doc(client, tmp_path / "train.py", CUDA_LOADER)
    assert "TPF101" in codes(await published(client, doc.uri, lambda d: len(d) > 0))
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\nignore = ["TPF101"]\n')
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=(tmp_path / "pyproject.toml").as_uri()))
    )
    after = await published(client, doc.uri, lambda d: "TPF101" not in codes(d))
    assert after and "TPF101" not in codes(after)
    doc.close()


async def test_deep_but_valid_code_gets_its_findings(client: LanguageClient, tmp_path):
    """A long implicit string concatenation (as in CPython's pydoc_data/topics.py) needs
    the stack and recursion limit the CLI lints with; the server lints it too."""
    text = CUDA_LOADER + "s = (\n" + "".join('    "a"\n' for _ in range(1500)) + ")\n"
    doc = Doc(client, tmp_path / "topics.py", text)
    assert "TPF101" in codes(await published(client, doc.uri, lambda d: len(d) > 0))
    doc.close()
