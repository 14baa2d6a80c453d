"""``--select ALL`` is valid whatever the rules are: checking it lists no rule, so a run
that selects ALL (the TorchFix comparison's command) does not parse every rule module's
``ast`` for the catalogue at settings time, only to import them all a moment later. Other
selectors are still checked against the rules."""

from __future__ import annotations

import pytest

from pytorch_perflint import registry


def test_all_is_valid_without_listing_the_rules(monkeypatch):
    def listed():
        raise AssertionError("the rules were listed")

    monkeypatch.setattr(registry, "_all_codes", listed)
    registry.validate(["ALL", " all "])


def test_an_unknown_selector_is_still_refused():
    with pytest.raises(registry.SelectorError):
        registry.validate(["ALL", "TPF999"])
