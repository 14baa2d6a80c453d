"""The layers rule family: one module per rule (``tpfNNN_*.py``); what they ask lives in
``facts/layers/`` and the value engine.

What a model is (convolutional, a wrapper, from a command-line default) is the value
engine's (``project/module_values.py``, ``project/argparse_values.py``)."""
