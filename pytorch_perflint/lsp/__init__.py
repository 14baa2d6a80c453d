"""The language server, ``pytorch-perflint server``: findings, fixes, ``noqa`` and hover in
editors, over LSP on stdin/stdout.

It needs the optional ``server`` extra (pygls, lsprotocol); only ``command`` may be
imported without them.
"""
