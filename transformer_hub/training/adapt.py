"""``python -m transformer_hub adapt``: a saved model fine-tuned on a project's own translations in a time budget.

    adapt(AdaptConfig(base="space/models/multilingual-v3", data=["project.po"], out="runs/project", minutes=30,
                      replay_data=["captions=data/multi30k", "software=data/libreoffice-help"]))

``adaptation.py`` reads the data, grows the model by the project's tag, trains and scores; ``adapt_report.py``
writes the folder (model, card, classifier, ``adapt.json``, plot).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import torch
from tqdm.auto import tqdm

from .adapt_report import write
from .adaptation import AdaptConfig, fine_tune, measure, prepare

__all__ = ["AdaptConfig", "adapt"]


def adapt(config: AdaptConfig, command: str = "") -> Path:
    """Prepare, score the base model, train, score again and write the folder (``adapt_report.write``)."""
    if config.threads:
        torch.set_num_threads(config.threads)
    a = prepare(config)
    base_domains: List[Optional[str]] = list(a.base.config.domains or [None])
    before = measure(a, a.base, base_domains)
    tqdm.write(f"{len(a.train)} pairs to train, {len(a.held)} held out; before: held-out BLEU "
               f"{before['held_out']['bleu']:.2f}" + "".join(f", {k} BLEU {v['bleu']:.2f}" for k, v in before.items()
                                                            if k != "held_out"))
    if not a.replay:
        tqdm.write("no --replay-data: the base domains are not replayed and may drift (give the base model's "
                   "corpora to mix them in)")
    run = fine_tune(a)
    base_point = {k: v for k, v in before["held_out"].items() if k != "domain"}
    run["curve"].insert(0, {"step": 0, "seconds": 0.0, **base_point})  # the curve starts at the base model
    after = measure(a, a.model, [a.domain])
    return write(a, before, after, run, command)

