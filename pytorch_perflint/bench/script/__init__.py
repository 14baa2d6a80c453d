"""``bench SCRIPT``: the tool's fixes measured on the user's own training script.

``cli`` (the click command) -> ``session`` (copies, fixes, interleaved runs, verdicts) ->
``copies``, ``fixes``, ``runs`` (one process per run, started through ``bootstrap.py``,
which with ``profiling.py`` runs inside the user's interpreter and imports nothing from this
package), ``fingerprints``; ``report`` and ``evidence`` turn a session into tables, JSON
and chart rows. It uses the scenario harness's verdicts, machine facts, table styles and
chart, never its command: ``bench/cli.py`` imports ``script.cli``, not the other way round.
"""
