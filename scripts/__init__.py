"""Drivers and studies (training recipes, pilots, the variant study, results and tables, the Space's upload),
run as modules from the repository root: ``python -m scripts.NAME ...``, so that ``transformer_hub`` and ``space``
are this checkout's.  Benchmarks live in ``benchmarks/``."""
