"""One module per rule, named after it (``tpf101_dataloader_sync_loading``).

The registry discovers the rules here; nothing else needs editing to add one.
"""
