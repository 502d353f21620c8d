"""Command-line tools, each run as a module from the repository root: python -m scripts.NAME."""
