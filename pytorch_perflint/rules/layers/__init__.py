"""The layers rule family: its rules (``tpfNNN_*.py``) and the facts only they use.

What a model is (convolutional, a wrapper, from a command-line default) is the value
engine's (``project/module_values.py``, ``project/argparse_values.py``)."""
