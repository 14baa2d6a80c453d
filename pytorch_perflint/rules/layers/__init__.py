"""The layers rule family: its rules (``tpfNNN_*.py``) and the facts only they use.

Importing the family registers its module summariser (``layers.argparse``: the
command-line defaults a model name may come from, ``arg_defaults``)."""

from . import arg_defaults  # noqa: F401  (registers the summariser)
