"""Copy on write for the links in a ``bench SCRIPT`` copy: the user's files stay as they are.

A run's copy holds real copies of the project's files, except what would be too costly to
copy: folders git ignores (datasets, virtualenvs), ``.git``, and files over
``--link-above-mb``. Those are symlinks to the user's tree, fine for reading. This hook
(``sys.addaudithook``, installed in every Python process of the run through a
``sitecustomize`` shim) sees a write coming before it happens (``open`` for writing,
``os.remove``, ``os.rename``, ``os.mkdir``, ``os.truncate``...) and first replaces each
link on the written path by a private copy: a linked folder becomes a real folder of links,
a linked file a copy of it (none for ``O_TRUNC``: its content is about to go). The write
then lands in the copy. Writers outside Python (a shell child, C code) are not seen: the
run's ``LinkWatch`` reports what they changed.

Like ``bootstrap.py`` this runs inside the user's interpreter: standard library only,
nothing of this package.
"""

import os
import shutil
import sys
import threading

# Events that change the file system, and which of their arguments are paths.
_PATH_ARGS = {
    "open": (0,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.utime": (0,),
    "os.setxattr": (0,),
    "os.removexattr": (0,),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "shutil.rmtree": (0,),
    "os.rename": (0, 1),
    "os.link": (1,),
    "os.symlink": (1,),
}
# Events that change the entry itself (its bytes or metadata), not only its name.
_CONTENT = {"open", "os.truncate", "os.chmod", "os.chown", "os.utime", "os.setxattr", "os.removexattr"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def install(root):
    """Guard every write under ``root`` (the copy's root) from here on, in this process
    and in the processes it forks."""
    root = os.path.abspath(root)
    busy = threading.local()

    def hook(event, args):
        if event not in _PATH_ARGS or getattr(busy, "on", False):
            return
        if event == "open":
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            if not flags & _WRITE_FLAGS:
                return
        busy.on = True
        try:
            for index in _PATH_ARGS[event]:
                path = args[index] if index < len(args) else None
                if isinstance(path, (str, bytes, os.PathLike)):
                    truncate = event == "open" and bool(args[2] & os.O_TRUNC)
                    materialise(root, os.fsdecode(os.fspath(path)), event in _CONTENT, truncate)
        except Exception:  # noqa: BLE001 - the guard must never break the user's program
            pass
        finally:
            busy.on = False

    sys.addaudithook(hook)


def materialise(root, path, content=True, truncate=False):
    """Replace the links on ``path`` (inside ``root``) that lead out of the copy by private
    copies. ``content``: the last entry is written itself (else only its name changes, and a
    link there may stay a link); ``truncate``: its old bytes are not needed."""
    absolute = os.path.abspath(path)
    if not absolute.startswith(root + os.sep):
        return
    parts = absolute[len(root) + 1 :].split(os.sep)
    current = root
    for position, part in enumerate(parts):
        current = os.path.join(current, part)
        last = position == len(parts) - 1
        if not os.path.islink(current):
            if not os.path.lexists(current):
                return  # a new entry in a real folder: private already
            continue
        target = os.path.realpath(current)
        if target == root or target.startswith(root + os.sep):
            continue  # a link inside the copy
        if last and not content:
            return  # renaming or removing the link touches only the copy
        if os.path.isdir(target):
            _folder_of_links(current, target)
        elif last and truncate:
            _replace(current, None)
        else:
            _replace(current, target)


def _temporary(path):
    return f"{path}.perflint-{os.getpid()}-{threading.get_ident()}"


def _folder_of_links(link, target):
    staging = _temporary(link)
    os.mkdir(staging)
    for name in os.listdir(target):
        os.symlink(os.path.join(target, name), os.path.join(staging, name))
    try:
        os.unlink(link)
    except FileNotFoundError:  # another process of the run did it first
        shutil.rmtree(staging, ignore_errors=True)
        return
    try:
        os.rename(staging, link)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


def _replace(link, target):
    staging = _temporary(link)
    if target is None:
        open(staging, "wb").close()
        shutil.copymode(link, staging)
    else:
        shutil.copy2(target, staging)
    os.replace(staging, link)


SHIM = '''"""bench SCRIPT: copy on write for the links of the run's copy (guard.py), then the
interpreter's own sitecustomize, if any."""
import importlib.machinery, importlib.util, os, sys
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_root = os.environ.get("PERFLINT_BENCH_COPY_ROOT")
if _root:
    _spec = importlib.util.spec_from_file_location("_perflint_bench_guard", {guard!r})
    _guard = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_guard)
    _guard.install(_root)
_theirs = importlib.machinery.PathFinder.find_spec("sitecustomize")
if _theirs is not None:  # the interpreter's own, now that ours is off the path
    _mine = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")
    except Exception:
        sys.modules["sitecustomize"] = _mine
        raise
'''


def write_shim(folder):
    """A folder holding the ``sitecustomize.py`` that installs the guard; put it first on
    ``PYTHONPATH`` (it takes itself off ``sys.path`` again)."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as handle:
        handle.write(SHIM.format(guard=os.path.abspath(__file__)))
    return folder
