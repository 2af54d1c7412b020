#!/usr/bin/env python
"""Thin wrapper: `python scripts/translate.py ARGS` == `python -m transformer_hub translate ARGS`."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from transformer_hub.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["translate", *sys.argv[1:]]))
