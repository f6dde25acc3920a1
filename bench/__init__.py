"""The benchmark runner: ``python -m bench`` (see bench/runner.py)."""
