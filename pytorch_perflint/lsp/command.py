"""The ``server`` command: imports the server only when run, and says plainly what to
install when its optional dependencies are missing."""

from __future__ import annotations

import sys

import click

EXIT_ERROR = 2
INSTALL_HINT = "pip install 'pytorch-perflint[server]'"


@click.command("server")
def server() -> None:
    """Run the language server (LSP) on stdin/stdout, for editors."""
    try:
        import lsprotocol.types  # noqa: F401
        from pygls.lsp.server import LanguageServer  # noqa: F401 - pygls 2's module
    except ImportError as error:
        click.echo(
            f"error: the language server needs pygls (2.0 or newer) and lsprotocol, which are not installed ({error}).\n"
            f"Install them with: {INSTALL_HINT}",
            err=True,
        )
        sys.exit(EXIT_ERROR)
    from .server import serve

    serve()
