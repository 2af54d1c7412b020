"""``python -m transformer_hub train``: the trainer's own command line (``transformer_hub.training.trainer``)."""
from __future__ import annotations

from typing import List

from .commands import command


@command("train", "train a model (forwards its arguments to transformer_hub.training.trainer)")
def train_command(argv: List[str]) -> int:
    from ..training import trainer as train

    status = train.main(argv)
    return status if isinstance(status, int) else 0
