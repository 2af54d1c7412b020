"""``python -m transformer_hub adapt``: a saved model fine-tuned on a project's own translations in a time budget.

    adapt(AdaptConfig(base="space/models/multilingual-v4", data=["de.po", "fr.po", "cs.po"], out="runs/project",
                      minutes=30, replay_data=["captions=data/multi30k", "software=data/libreoffice-help"]))

``adaptation.py`` reads the data (one or more directions), grows the model by the project's tag, draws each
epoch's examples and scores; this module runs the loop; ``adapt_report.py`` writes the folder (model, card,
classifier, ``adapt.json``, plot).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Dict, List, Optional

import torch
from tqdm.auto import tqdm

from ..errors import UserError
from .adapt_report import write
from .adaptation import AdaptConfig, Adaptation, Scores, epoch_examples, measure, prepare, scores_in
from .data import iterate_batches
from .schedule import lr_factor, scheduled_lr

__all__ = ["AdaptConfig", "adapt"]

Curves = Dict[str, List[Dict]]  # direction -> the held-out points: step, seconds, BLEU, chrF, loss


def adapt(config: AdaptConfig, command: str = "") -> Path:
    """Prepare, score the base model, train, score again and write the folder (``adapt_report.write``)."""
    if config.threads:
        torch.set_num_threads(config.threads)
    a = prepare(config)
    base_domains: List[Optional[str]] = list(a.base.config.domains or [None])
    before = measure(a, a.base, base_domains)
    for d in a.directions:
        scores = before[d.name]
        tqdm.write(f"{d.name}: {len(d.train)} pairs to train, {len(d.held)} held out; before: held-out BLEU "
                   f"{scores['held_out']['bleu']:.2f}" + "".join(f", {k} BLEU {v['bleu']:.2f}"
                                                                 for k, v in scores.items() if k != "held_out"))
    if not a.replayed:
        tqdm.write("no --replay-data: the base domains are not replayed and may drift (give the base model's "
                   "corpora to mix them in)")
    run = fine_tune(a, start_points(a, before))
    after = measure(a, a.model, [a.domain])
    return write(a, before, after, run, command)


def start_points(a: Adaptation, before: Scores) -> Curves:
    """Each direction's curve at update 0: the base model's held-out scores (in the domain ``before`` chose), on
    the pairs the curve scores (``--eval-limit``)."""
    curves: Curves = {}
    for d in a.directions:
        scores = before[d.name]["held_out"]
        if len(d.curve_pairs(a.config.eval_limit)) < len(d.held):
            scores = scores_in(a, d, a.base, d.curve_pairs(a.config.eval_limit), scores.get("domain"), {})
        curves[d.name] = [{"step": 0, "seconds": 0.0, **{k: v for k, v in scores.items() if k != "domain"}}]
    return curves


def fine_tune(a: Adaptation, curves: Curves) -> Dict:
    """Train until the minutes are spent (or ``max_updates``); the held-out curves (``curves``, extended) and how
    the run ended."""
    c, model = a.config, a.model
    d_model = model.config.d_model
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    factor = lr_factor(c.peak_lr, d_model, c.warmup)
    project = {d.name: a.examples(model, d.train, a.domain, d) for d in a.directions}
    step, epoch, skipped, stopped, start = 0, 0, 0, "", time.perf_counter()
    bar = tqdm(total=c.max_updates or None, desc=f"adapt {a.domain}", unit="update", dynamic_ncols=True)
    while not stopped:
        first = step
        for _, (src, tgt_in, tgt_out) in iterate_batches(epoch_examples(a, epoch, project), c.max_tokens,
                                                        c.seed, epoch, model.config.pad_id):
            model.train()
            for group in optimizer.param_groups:
                group["lr"] = scheduled_lr(step + 1, d_model, c.warmup, factor)
            loss = model(src, tgt_in, tgt_out, c.label_smoothing)
            if torch.isfinite(loss):
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip_norm)
                optimizer.step()
            else:  # a bad batch is dropped, not learned from
                skipped += 1
            optimizer.zero_grad(set_to_none=True)
            step += 1
            bar.update(1)
            if step % c.eval_every == 0:
                held_points(a, curves, step, time.perf_counter() - start)
                bar.set_postfix(loss=f"{loss.item():.3f}", held_out_bleu="/".join(
                    f"{points[-1]['bleu']:.2f}" for points in curves.values()))
            stopped = ("minutes" if time.perf_counter() - start >= c.minutes * 60 else
                       "max_updates" if c.max_updates and step >= c.max_updates else "")
            if stopped:
                break
        if step == first:
            raise UserError(f"no training pair fits the model's {model.config.max_len} tokens: nothing to learn")
        epoch += 1
    bar.close()
    seconds = time.perf_counter() - start
    if next(iter(curves.values()))[-1]["step"] != step:
        held_points(a, curves, step, seconds)
    return {"updates": step, "epochs": epoch, "stopped_by": stopped, "train_minutes": round(seconds / 60, 2),
            "skipped_batches": skipped, "curves": curves}


def held_points(a: Adaptation, curves: Curves, step: int, seconds: float) -> None:
    """Each direction's held-out scores (greedy, ``--eval-limit`` pairs) of the model being trained, at update
    ``step``, appended to its curve."""
    for d in a.directions:
        point = {"step": step, "seconds": round(seconds, 1),
                 **scores_in(a, d, a.model, d.curve_pairs(a.config.eval_limit), a.domain, {})}
        point.pop("domain", None)
        curves[d.name].append(point)
