"""``python -m pytorch_perflint`` works the same as the console script.

``python -m`` puts the current folder first on ``sys.path``, and the current folder is
usually the tree being linted: its own ``click.py`` or ``torch.py`` would then be imported
(and run) in place of the real ones. That entry goes before anything else is imported.
(The package itself is already imported by then, and imports its own modules relatively.)
"""

import os
import sys


def _drop_current_folder() -> None:
    if getattr(sys.flags, "safe_path", False) or not sys.path:  # python -P: nothing was added
        return
    if sys.path[0] in ("", os.curdir) or os.path.abspath(sys.path[0]) == os.getcwd():
        del sys.path[0]


_drop_current_folder()

from .cli import main  # noqa: E402 - after the sys.path fix, on purpose

if __name__ == "__main__":
    main()
