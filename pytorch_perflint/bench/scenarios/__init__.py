"""One benchmark scenario per rule, each in its own module named after the rule's code.

A module defines ``SCENARIO = Scenario(...)``; ``bench.scenario.discover`` finds it.
"""
