"""Facts of the parallel rules' code, read on the linted file: who calls a DDP-wrapped model and how."""
