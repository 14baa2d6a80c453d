"""The parallel rule family: one module per rule (``tpfNNN_*.py``); what they ask lives in
``facts/parallel/`` and the value engine (``project/``)."""
