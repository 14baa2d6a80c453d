"""The benchmark harness: one scenario per rule, fixed by the tool itself, then timed.

Each scenario is a small PyTorch program written *with* a rule's anti-pattern. The harness
lints it (the rule must fire), applies the tool's own fix (the rule must then be silent),
checks that both programs compute the same result, and times them interleaved against an
A/A control that sets the noise floor. See docs/benchmarks/README.md for the method.

Only ``scenario`` and ``programs`` are importable without torch: the linter and
``pytorch-perflint bench --help`` must never pay for importing it.
"""
