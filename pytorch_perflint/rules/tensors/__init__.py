"""The tensors rule family: one module per rule (``tpfNNN_*.py``); what they ask lives in
``facts/tensors/`` and the value engine (``project/``)."""
