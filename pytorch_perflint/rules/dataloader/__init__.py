"""The dataloader rule family: one module per rule (``tpfNNN_*.py``); what they ask lives in
``facts/dataloader/`` and the value engine (``project/``)."""
