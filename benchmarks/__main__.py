"""``python -m benchmarks NAME``: see ``benchmarks/benchmark.py``."""
from .benchmark import main

raise SystemExit(main())
