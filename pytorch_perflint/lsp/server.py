"""The language server on pygls: keeps the open buffers, lints them, answers requests.

Lints run on a few threads (``lanes``), each document on its own: a long buffer never
blocks the protocol nor a short file, the newest request goes first, and a lint whose
text an edit replaced is stopped. A change is linted once the typing pauses
(``lint_delay``); a result is published only if the buffer still holds the text that was
linted. An opened file that the on-disk cache of ``check`` answers is not linted at all
(``project``); a project without one is indexed in the background once its first file
was answered, with progress shown. Messages are read by ``transport``: every request
gets an answer, even one that cannot be read.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from . import convert, transport
from .documents import PROJECTS, Buffer, Cell, Linted, by_cell, join_cells, lint_buffer
from .lanes import Cancelled, Job, Lanes

if TYPE_CHECKING:
    from . import actions

# Seconds of quiet after a change before it is linted (initializationOptions.lintDelay).
LINT_DELAY = 0.25

# Files whose change can change any open buffer's findings: the settings, what git ignores,
# and other modules of the project (their facts reach a buffer through its imports).
WATCHED_GLOBS = ("**/pyproject.toml", "**/pytorch-perflint.toml", "**/.pytorch-perflint.toml", "**/.gitignore", "**/*.py")
WATCHED_NAMES = frozenset(("pyproject.toml", "pytorch-perflint.toml", ".pytorch-perflint.toml", ".gitignore"))


class PerflintServer(LanguageServer):
    """The server's state: pending lints, the latest lint of each buffer, and which
    notebook cells have diagnostics shown."""

    def __init__(self) -> None:
        super().__init__(
            name="pytorch-perflint",
            version=__version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")])]
            ),
        )
        self.lint_delay = LINT_DELAY
        self.pending: Dict[str, "asyncio.Future[None]"] = {}
        self.cache: Dict[Tuple[str, bool], Linted] = {}
        self.shown_cells: Dict[str, Tuple[str, ...]] = {}
        self.reported: Set[str] = set()
        self.lanes = Lanes()
        # The lint in progress of each (document, for fixes): its text and job.
        self.running: Dict[Tuple[str, bool], Tuple[str, Job]] = {}
        self.progress_tokens = 0
        self.rules_loaded = False

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve on stdin and stdout with ``transport``'s reader (see its docstring)."""
        from pygls.io_ import StdinAsyncReader, StdoutWriter

        self._stop_event = threading.Event()
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(transport.serve(self._stop_event, reader, self.protocol))
        except BrokenPipeError:
            pass  # the client is gone
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    async def in_lane(self, function, *args) -> Any:
        """``function(*args)`` on a lint thread (with a deep stack), awaited here."""
        job = self.lanes.submit(functools.partial(function, *args))
        return await asyncio.wrap_future(job.future)

    # -- the open buffers ----------------------------------------------------------------
    def key(self, uri: str) -> str:
        """The buffer a document belongs to: its notebook's, for a cell."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        return notebook.uri if notebook is not None else uri

    def buffer(self, uri: str) -> Optional[Buffer]:
        """The current text of an open document, a notebook, or the notebook of a cell."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri) or self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None:
            cells: List[Cell] = []
            for cell in notebook.cells:
                document = self.workspace.text_documents.get(unquote(cell.document))
                if cell.kind != types.NotebookCellKind.Code or document is None:
                    continue
                if document.language_id not in (None, "python"):
                    continue
                cells.append(Cell(cell.document, document.version, document.source))
            book = join_cells([cell.text for cell in cells])
            return Buffer(notebook.uri, self.path(notebook.uri), book.source, notebook.version, tuple(cells), book)
        document = self.workspace.text_documents.get(unquote(uri))
        if document is None:
            return None
        return Buffer(uri, self.path(uri), document.source, document.version)

    def path(self, uri: str) -> Path:
        """A document's file (for settings, per-file-ignores and messages); an unsaved,
        untitled buffer stands for a file in the workspace's root."""
        path = to_fs_path(uri)
        if path is not None:
            return Path(path)
        root = self.workspace.root_path or os.getcwd()
        return Path(root) / "untitled.py"

    @property
    def units(self):
        return self.workspace.position_codec.client_num_units

    # -- linting -------------------------------------------------------------------------
    async def linted(self, buffer: Buffer, *, for_fixes: bool) -> Optional[Linted]:
        """The lint of the buffer's current text (cached while the text stays the same);
        None when an edit replaced that text before its lint ended (it was stopped)."""
        key = (buffer.uri, for_fixes)
        cached = self.cache.get(key)
        if cached is not None and cached.text == buffer.text:
            return cached
        started = time.perf_counter()
        running = self.running.get(key)
        if running is not None and running[0] != buffer.text:
            if not running[1].future.done():
                self.lanes.cancel(running[1])  # superseded: its result would be thrown away
                self.trace(f"stopped a lint of {buffer.uri}: its text was replaced")
            running = None
        if running is None:
            job = self.lanes.submit(functools.partial(lint_buffer, buffer, for_fixes=for_fixes))
            running = self.running[key] = (buffer.text, job)
            self.trace(f"linting {buffer.uri} version {buffer.version}{' (for fixes)' if for_fixes else ''}")
        try:
            linted = await asyncio.wrap_future(running[1].future)
        except (Cancelled, asyncio.CancelledError):
            if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
            return None
        finally:
            if self.running.get(key) is running and running[1].future.done():
                del self.running[key]
        self.cache[key] = linted
        how = "answered from the on-disk cache" if linted.from_cache else "linted"
        self.trace(
            f"{how} {buffer.uri} version {buffer.version}: {len(linted.lint.diagnostics)} findings "
            f"in {1000 * (time.perf_counter() - started):.0f} ms{' (for fixes)' if for_fixes else ''}"
        )
        for error in linted.lint.errors:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=error))
        if linted.error is not None and linted.error not in self.reported:
            self.reported.add(linted.error)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"pytorch-perflint: {linted.error}"))
        return linted

    def relint_open_buffers(self) -> None:
        """Lint every buffer shown again: a file they may depend on changed on disk."""
        self.cache.clear()
        for key in {uri for uri, _ in self.shown()}:
            if self.buffer(key) is not None:
                self.schedule(key, self.lint_delay)

    def shown(self) -> Set[Tuple[str, bool]]:
        return set(self.cache) | {(uri, False) for uri in self.pending}

    def schedule(self, uri: str, delay: float) -> None:
        """Lint the buffer ``delay`` seconds from now, replacing a lint still waiting."""
        key = self.key(uri)
        waiting = self.pending.pop(key, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[key] = asyncio.ensure_future(self._lint_and_publish(key, delay))

    async def _lint_and_publish(self, key: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        buffer = self.buffer(key)
        if buffer is None:
            return
        linted = await self.linted(buffer, for_fixes=False)
        current = self.buffer(key)
        if linted is None or current is None or current.text != buffer.text:
            return  # changed meanwhile: the lint of the new text is scheduled
        self.publish(buffer, linted)
        if linted.from_cache and not self.rules_loaded:
            from .. import registry

            # Import the rules now that the first answer is out, not on the first keystroke.
            self.rules_loaded = True
            self.lanes.submit(registry.all_rules)
        if linted.settings is not None and not buffer.is_notebook:
            await self.index_in_background(buffer.path, linted.settings)

    async def index_in_background(self, path: Path, settings) -> None:
        """Once a project's first file was answered: build what the cache lacks (the
        summaries, the import graph) with progress shown, and keep it for next time."""
        if not await self.in_lane(PROJECTS.needs_indexing, path, settings):
            return
        self.progress_tokens += 1
        token = f"pytorch-perflint-indexing-{self.progress_tokens}"
        shown = False
        window = self.client_capabilities.window
        if window is not None and window.work_done_progress:
            try:
                await self.work_done_progress.create_async(token)
                shown = True
            except Exception:  # noqa: BLE001 - a client that refuses: no progress shown
                shown = False
        if shown:
            self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title="pytorch-perflint: indexing the project", percentage=0))
        loop = asyncio.get_running_loop()

        def report(done: int, total: int) -> None:
            if shown:
                value = types.WorkDoneProgressReport(message=f"{done}/{total} modules", percentage=int(100 * done / max(total, 1)))
                loop.call_soon_threadsafe(self.work_done_progress.report, token, value)

        try:
            count = await self.in_lane(PROJECTS.index_project, path, settings, report)
        except Exception as error:  # noqa: BLE001 - the buffers are linted without it
            count, message = 0, f"indexing stopped: {error}"
        else:
            message = f"{count} modules indexed"
        self.trace(f"project of {path}: {message}")
        if shown:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))

    def publish(self, buffer: Buffer, linted: Linted) -> None:
        if buffer.book is None:
            positions = convert.Positions(buffer.text, self.units)
            shown = [convert.diagnostic(d, positions) for d in linted.lint.diagnostics]
            self._send(buffer.uri, shown, buffer.version)
            return
        mapped = by_cell(buffer.book, linted.lint.diagnostics)
        for number, cell in enumerate(buffer.cells, start=1):
            positions = convert.Positions(cell.text, self.units)
            self._send(cell.uri, [convert.diagnostic(d, positions) for d in mapped.get(number, [])], cell.version)
        uris = tuple(cell.uri for cell in buffer.cells)
        for gone in set(self.shown_cells.get(buffer.uri, ())) - set(uris):
            self._send(gone, [], None)
        self.shown_cells[buffer.uri] = uris

    def clear(self, uri: str, cells: Tuple[str, ...] = ()) -> None:
        """Forget a closed buffer and take its diagnostics away."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        for for_fixes in (False, True):
            self.cache.pop((uri, for_fixes), None)
        for cell in (*self.shown_cells.pop(uri, ()), *cells):
            self._send(cell, [], None)
        if not cells:
            self._send(uri, [], None)

    def _send(self, uri: str, diagnostics: List[types.Diagnostic], version: Optional[int]) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    async def action_request(
        self, uri: str, where: types.Range, only: Optional[Tuple[str, ...]], sent: Tuple[types.Diagnostic, ...] = ()
    ) -> Optional["actions.Request"]:
        """A code action request on the buffer's current text, in the client's terms."""
        from . import actions  # the fixer and LibCST: when the editor first asks

        buffer = self.buffer(uri)
        if buffer is None:
            return None
        linted = await self.linted(buffer, for_fixes=True)
        if linted is None:
            return None
        capabilities = self.client_capabilities
        workspace_edit = capabilities.workspace.workspace_edit if capabilities.workspace else None
        code_action = capabilities.text_document.code_action if capabilities.text_document else None
        resolve = code_action.resolve_support if code_action is not None else None
        return actions.Request(
            buffer=buffer,
            linted=linted,
            uri=uri,
            range=where,
            only=only,
            units=self.units,
            versioned=bool(workspace_edit is not None and workspace_edit.document_changes),
            resolves=resolve is not None and "edit" in resolve.properties,
            sent=sent,
        )

    def trace(self, message: str) -> None:
        """A ``$/logTrace`` line, when the client asked for traces."""
        if self.protocol.trace not in (None, types.TraceValue.Off):
            self.log_trace(types.LogTraceParams(message=message))


def hover_text(diagnostic, infos: Dict[str, Dict[str, Any]]) -> str:
    """A finding's message, its rule's summary, fix safety, and the link to its docs."""
    info = infos.get(diagnostic.code, {})
    lines = [f"**{diagnostic.code}** `{diagnostic.name}`: {diagnostic.message}"]
    if info.get("summary"):
        lines.append(info["summary"])
    fix = diagnostic.fix.applicability if diagnostic.fix is not None else info.get("fix")
    lines.append(f"Fix: {fix or 'none'} · [{diagnostic.code} documentation]({diagnostic.url})")
    return "\n\n".join(lines)


@functools.lru_cache(maxsize=1)
def rule_infos() -> Dict[str, Dict[str, Any]]:
    from ..rules_list import rule_infos as _rule_infos  # what `pytorch-perflint rules` prints

    return {info["code"]: info for info in _rule_infos()}


def create_server() -> PerflintServer:
    server = PerflintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: PerflintServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("lintDelay"), (int, float)):
            ls.lint_delay = max(0.0, float(options["lintDelay"]))
        if params.trace is not None:
            ls.protocol.trace = params.trace

    @server.feature(types.INITIALIZED)
    def initialized(ls: PerflintServer, params: types.InitializedParams) -> None:
        workspace = ls.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace is not None else None
        if watched is not None and watched.dynamic_registration:
            ls.client_register_capability(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id="pytorch-perflint-watched-files",
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                watchers=[types.FileSystemWatcher(glob_pattern=glob) for glob in WATCHED_GLOBS]
                            ),
                        )
                    ]
                )
            )

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files_changed(ls: PerflintServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.relint_open_buffers()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: PerflintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: PerflintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.lint_delay)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: PerflintServer, params: types.DidSaveTextDocumentParams) -> None:
        if ls.path(params.text_document.uri).name in WATCHED_NAMES:  # a client that sends every save
            ls.relint_open_buffers()
        else:
            ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: PerflintServer, params: types.DidCloseTextDocumentParams) -> None:
        if ls.key(params.text_document.uri) == params.text_document.uri:
            ls.clear(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: PerflintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: PerflintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, ls.lint_delay)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: PerflintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: PerflintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.clear(params.notebook_document.uri, tuple(cell.uri for cell in params.cell_text_documents))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: PerflintServer, params: types.HoverParams) -> Optional[types.Hover]:
        buffer = ls.buffer(params.text_document.uri)
        if buffer is None:
            return None
        linted = await ls.linted(buffer, for_fixes=False)
        if linted is None:
            return None
        at = types.Range(start=params.position, end=params.position)
        found = convert.findings_at(buffer, linted, params.text_document.uri, at, ls.units)
        if not found:
            return None
        infos = rule_infos()
        text = "\n\n---\n\n".join(hover_text(raw, infos) for raw, _ in found)
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
            range=found[0][1].range,
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, convert.FIX_ALL_KIND], resolve_provider=True),
    )
    async def code_action(ls: PerflintServer, params: types.CodeActionParams) -> Optional[List[types.CodeAction]]:
        only = params.context.only
        kinds = tuple(getattr(kind, "value", kind) for kind in only) if only else None
        sent = tuple(params.context.diagnostics or ())
        request = await ls.action_request(params.text_document.uri, params.range, kinds, sent)
        if request is None:
            return None
        from . import actions

        return await ls.in_lane(actions.code_actions, request)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def resolve(ls: PerflintServer, action: types.CodeAction) -> types.CodeAction:
        uri = action.data.get("fixAll") if isinstance(action.data, dict) else None
        if not isinstance(uri, str):
            return action
        position = types.Position(line=0, character=0)
        request = await ls.action_request(uri, types.Range(start=position, end=position), None)
        if request is not None:
            from . import actions

            action.edit = await ls.in_lane(actions.fix_all_edit, request)
        return action

    return server


def serve() -> None:
    """Run the server on stdin and stdout until the client says exit."""
    create_server().start_io()
