"""The training rule family: one module per rule (``tpfNNN_*.py``); what they ask lives in
``facts/training/`` and the value engine (``project/``)."""
