#!/usr/bin/env python
"""Train a translation model: ``python scripts/train.py --out runs/en-de`` (see ``--help``).

Works under ``torchrun --nproc_per_node N`` for DistributedDataParallel training.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_hub.cli import main  # noqa: E402  (the command line's one-line errors, --debug)

if __name__ == "__main__":
    raise SystemExit(main(["train", *sys.argv[1:]]))
