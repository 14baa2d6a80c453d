"""What the harness needs installed, and what to tell a user who lacks it.

Shared by ``bench`` (the scenarios) and ``bench SCRIPT`` (``script/cli.py``), which sit on
either side of the command dispatch: a module of its own keeps them from importing each
other. Nothing here imports torch.
"""

TORCH_MISSING = (
    "pytorch-perflint bench needs torch, which is not installed.\n"
    "Install torch pinned for your platform first, so pip does not pull a build you did not "
    "ask for, e.g. for CPU only:\n"
    "  pip install 'torch==2.13.0' --index-url https://download.pytorch.org/whl/cpu\n"
    "then the harness's other dependencies:\n"
    "  pip install 'pytorch-perflint[bench]' 'torch==2.13.0'"
)
MATPLOTLIB_MISSING = "--plot needs matplotlib: pip install 'pytorch-perflint[plot]'"
