"""``python -m pytorch_perflint`` works the same as the console script."""

from .cli import main

if __name__ == "__main__":
    main()
