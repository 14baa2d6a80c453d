"""What the linted file's code is, read on its LibCST tree: loops that train or evaluate,
loaders and the loops that walk them, layers and the order they feed each other, no-grad
regions. Rules ask these facts (and the value engine, ``project/``) and say on top what they
flag; a fact module never imports a rule."""
