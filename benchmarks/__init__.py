"""Benchmarks (not tests): each prints its figures with ratios against a reference measured in the same run.

    python -m benchmarks NAME [options]   # benchmark.py's registry: python -m benchmarks --help lists them

Run from the repository root (``python -m`` puts it on the path: ``transformer_hub`` and ``space`` are this
checkout's).  docs/benchmarks.md holds the tables and the command of each.
"""
