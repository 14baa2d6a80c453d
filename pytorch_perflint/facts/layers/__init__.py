"""Facts of the layers rules' code, read on the linted file: layers and the order they feed each other, trained models, entry scripts and their settings."""
