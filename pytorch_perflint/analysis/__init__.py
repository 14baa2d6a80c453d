"""Static facts that rules share, computed once per file and only when a rule asks."""
