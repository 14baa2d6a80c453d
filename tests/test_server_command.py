"""``pytorch-perflint server`` as a command: the README's editor snippets run it, and
without its optional dependencies it says what to install (no pytest-lsp needed here)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

from pytorch_perflint.cli import LAZY_COMMANDS

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_commands() -> List[List[str]]:
    """Every server command line in the README's editor snippets (Lua and VS Code JSON)."""
    text = README.read_text(encoding="utf-8")
    commands = [re.findall(r'"([^"]*)"', body) for body in re.findall(r"\bcmd\s*=\s*\{([^}]*)\}", text)]
    for block in re.findall(r"```json\n(.*?)```", text, re.DOTALL):
        settings = json.loads(block)
        if "glspc.server.command" in settings:
            commands.append([settings["glspc.server.command"], *settings["glspc.server.commandArguments"]])
    return commands


def server_command() -> List[str]:
    """The README's command line, its program found beside this Python (the test venv)."""
    program, *arguments = readme_commands()[0]
    local = Path(sys.executable).parent / program
    return [str(local) if local.exists() else (shutil.which(program) or program), *arguments]


def test_the_readme_snippets_run_the_command_the_tests_start():
    commands = readme_commands()
    assert len(commands) == 3  # Neovim's vim.lsp.start and vim.lsp.config, VS Code's settings
    assert all(command == ["pytorch-perflint", "server"] for command in commands)
    started = server_command()
    assert Path(started[0]).name == "pytorch-perflint" and started[1:] == ["server"]
    assert "server" in LAZY_COMMANDS


def test_the_fix_all_kind_in_the_readme_is_the_servers():
    fix_all = re.search(r'"(source\.fixAll\.[^"]+)"', README.read_text(encoding="utf-8"))
    assert fix_all is not None
    try:
        from pytorch_perflint.lsp.actions import FIX_ALL_KIND
    except ImportError:  # without the server extra
        return
    assert fix_all.group(1) == FIX_ALL_KIND


def test_without_pygls_the_server_says_what_to_install_and_exits_2():
    blocked = "import sys; sys.modules['pygls'] = None; sys.modules['pygls.lsp'] = None; sys.modules['pygls.lsp.server'] = None\n"
    run = "from pytorch_perflint.cli import main; main(['server'])"
    completed = subprocess.run(
        [sys.executable, "-c", blocked + run], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert completed.returncode == 2, completed.stderr
    assert "pip install 'pytorch-perflint[server]'" in completed.stderr
    assert "Traceback" not in completed.stderr
    assert completed.stdout == ""


def test_server_help_needs_no_pygls():
    blocked = "import sys; sys.modules['pygls'] = None\n"
    run = "from pytorch_perflint.cli import main; main(['server', '--help'])"
    completed = subprocess.run([sys.executable, "-c", blocked + run], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0 and "language server" in completed.stdout


def test_help_does_not_import_the_server():
    helped = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pytorch_perflint", "--help"], capture_output=True, text=True, timeout=120
    )
    assert helped.returncode == 0 and "server" in helped.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in helped.stderr.splitlines() if "|" in line}
    assert not {"pygls", "lsprotocol", "pytorch_perflint.lsp.server", "pytorch_perflint.lsp.command"} & imported
