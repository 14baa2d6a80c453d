"""Facts of the dataloader rules' code, read on the linted file: loaders, their arguments, samplers, datasets and the loops that walk them."""
