"""pytorch-perflint: find, fix and measure PyTorch performance anti-patterns."""

__version__ = "0.1.0"
