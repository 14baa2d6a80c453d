"""Facts of the training rules' code, read on the linted file: training and evaluation loops, no-grad regions, syncs, losses and their graphs."""
