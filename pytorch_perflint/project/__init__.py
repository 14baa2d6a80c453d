"""Project-wide facts: module summaries built from ``ast``, imports resolved inside the
project, and which modules run on an accelerator.

A layer of its own beside ``analysis/``: it imports neither the rule contract nor the
engine nor LibCST, so the cache can ask it whether anything changed cheaply.
"""
