"""``python -m pytorch_perflint.bench`` runs the harness without the main CLI."""

from .cli import main

if __name__ == "__main__":
    main()
