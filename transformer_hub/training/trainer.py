"""The paper's training recipe (section 5) on parallel text, resumable exactly, optionally distributed.

    python -m transformer_hub train --out runs/en-de                 # Multi30k En->De, shipped-model recipe
    python -m transformer_hub train --out runs/en-de --resume        # continue where it stopped
    torchrun --nproc_per_node 2 -m transformer_hub train --out runs/ddp ...  # DistributedDataParallel (gloo on CPU)

Label-smoothed cross-entropy, Adam (0.9, 0.98, 1e-9), the warm-up schedule
lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), dropout,
gradient clipping, atomic checkpoints every epoch, and averaging of the last N
checkpoints (section 6.1) for the final model.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from . import distributed
from .config import TrainingConfig
from .data import iterate_batches
from .evaluation import Evaluator
from .metrics import MetricsLog
from .precision import autocast, resolve_precision
from .options import parse_config
from .publish import Publisher
from .run import Place, Run, build_run
from .schedule import lr_factor, scheduled_lr
from .signals import StopSignal

logger = logging.getLogger("transformer_hub.training.trainer")
MAX_BAD_STEPS = 5


class Trainer:
    """Runs the training loop of a ``Run`` (``run.py``) built from a ``TrainingConfig``; validation is the
    ``Evaluator``'s, checkpoints and pushes the ``Publisher``'s, stop signals the ``StopSignal``'s.
    ``train()`` trains to the end."""

    def __init__(self, config: TrainingConfig) -> None:
        if not isinstance(config, TrainingConfig):
            raise TypeError(f"Trainer takes a TrainingConfig (training.options.parse_config builds one from a "
                            f"command line), not {type(config).__name__}")
        self.config = config
        device = torch.device(config.device)
        self.place = Place(Path(config.out), device, *distributed.setup(device))
        if config.threads:
            torch.set_num_threads(config.threads)
        self.stop = StopSignal()  # a stop signal arrived (on any rank, once agreed by _done)
        self.skipped: List[Dict[str, int]] = []  # the batches every rank skipped together (non-finite loss)
        self.bad_in_a_row = 0
        self.metrics = MetricsLog(self.place.out / "metrics.jsonl")
        self.run: Run = build_run(config, self.place, self.metrics)
        self.evaluator = Evaluator(config, self.run, self.place)
        self.publisher = Publisher(config, self.place, self.metrics)
        self.factor = config.lr_factor or lr_factor(config.peak_lr, self.run.config.d_model, config.warmup)
        self.precision = resolve_precision(config.precision, device)  # weights and optimizer stay float32
        logger.info("training in %s (--precision %s)", self.precision, config.precision)

    # ---------------------------------------------------------------- loop
    def _loss(self, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
        return self.run.net(src, tgt_in, tgt_out, self.config.label_smoothing)  # fused projection + loss

    def _done(self) -> bool:
        """Whether to stop now: the same answer on every rank (a rank stopping alone would hang the others)."""
        a, s = self.config, self.run.state
        out_of_time = a.max_minutes > 0 and s.wall_seconds >= a.max_minutes * 60
        self.stop.requested, out_of_time = distributed.agree_to_stop(self.stop.requested, out_of_time, self.place.rank,
                                                                     self.place.world, self.place.device)
        return self.stop.requested or out_of_time or s.step >= a.max_updates or s.epoch >= a.max_epochs

    def train(self) -> Optional[Path]:
        """Train until a limit is reached, then average, evaluate and save the final model (rank 0)."""
        a, s = self.config, self.run.state
        self.stop.install()
        self.last = time.perf_counter()
        self.bar = tqdm(total=a.max_updates, initial=s.step, desc="train", disable=not self.place.main,
                        dynamic_ncols=True)
        while not self._done():
            for index, batch in iterate_batches(self.run.epoch_examples(s.epoch), a.max_tokens, a.seed, s.epoch,
                                                self.run.config.pad_id, s.batch, self.place.rank, self.place.world):
                if not self._train_step(index, batch):
                    continue
                if a.valid_every and s.step % a.valid_every == 0:
                    self._checkpoint(validate=True)
                elif a.save_every and s.step % a.save_every == 0:
                    self._checkpoint(validate=False)
                if self._done():
                    break
            else:  # the epoch ran to its end
                s.epoch += 1
                s.batch = 0
                self._checkpoint(validate=True, bleu=(s.epoch % a.bleu_every == 0))
                continue
            self._checkpoint(validate=True)
        self.bar.close()
        return self.finish()

    def _train_step(self, index: int, batch: Tuple[torch.Tensor, ...]) -> bool:
        """One update on ``batch``; False when every rank skipped it (a non-finite loss on any of them)."""
        a, s = self.config, self.run.state
        started = time.perf_counter()
        self.run.net.train()
        lr = scheduled_lr(s.step + 1, self.run.config.d_model, a.warmup, self.factor, a.max_updates,
                          a.cooldown_updates)
        for group in self.run.optimizer.param_groups:
            group["lr"] = lr
        src, tgt_in, tgt_out = (t.to(self.place.device) for t in batch)
        with autocast(self.precision, self.place.device):
            loss = self._loss(src, tgt_in, tgt_out).float()
        s.batch = index + 1
        finite = bool(torch.isfinite(loss))
        if distributed.any_rank(not finite, self.place.world, self.place.device):  # agreed: all ranks skip backward together
            self._skip(index, finite)
            return False
        self.bad_in_a_row = 0
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.run.model.parameters(), a.clip_norm)
        self.run.optimizer.step()
        self.run.optimizer.zero_grad(set_to_none=True)
        tokens = int((tgt_out != self.run.config.pad_id).sum()) * self.place.world
        seconds = time.perf_counter() - started
        s.step += 1
        s.tokens += tokens
        s.train_seconds += seconds
        s.wall_seconds += time.perf_counter() - self.last
        self.last = time.perf_counter()
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{lr:.2e}", tok_s=f"{tokens / seconds:,.0f}",
                             epoch=s.epoch)
        if self.place.main and s.step % 10 == 0:
            self.metrics.append(kind="train", step=s.step, epoch=s.epoch, loss=loss.item(), lr=lr,
                                tokens_per_s=tokens / seconds)
        return True

    def _skip(self, index: int, finite_here: bool) -> None:
        """Drop this batch's gradients on every rank; too many bad batches in a row end the run (on every rank)."""
        s = self.run.state
        self.bad_in_a_row += 1
        self.skipped.append({"step": s.step + 1, "epoch": s.epoch, "batch": index})
        logger.warning("non-finite loss at step %d (batch %d of epoch %d%s): batch skipped", s.step + 1, index,
                       s.epoch, ", on another rank" if finite_here else "")
        self.run.optimizer.zero_grad(set_to_none=True)
        if self.bad_in_a_row >= MAX_BAD_STEPS:
            raise RuntimeError(f"{MAX_BAD_STEPS} non-finite losses in a row: aborting (lower the lr?)")

    # ---------------------------------------------------------------- checkpoints and the end
    def _checkpoint(self, validate: bool, bleu: bool = True) -> None:
        """Validate (when asked) and save a checkpoint (rank 0)."""
        if not self.place.main:
            return
        s = self.run.state
        record = self.evaluator.validate(bleu=bleu) if validate else {}
        if record:
            self.metrics.append(kind="val", step=s.step, epoch=s.epoch, **record)
            tqdm.write(f"epoch {s.epoch} step {s.step}: " + ", ".join(f"{k} {v:.3f}" for k, v in record.items()))
        self.publisher.checkpoint(self.run, record)

    def finish(self) -> Optional[Path]:
        """Average the last checkpoints into ``final/``, score it, write the card; push it if asked."""
        final = None
        if self.place.main and not self.stop.requested:  # interrupted: the checkpoint is saved, resume later
            averaged = self.publisher.average(self.run)
            results = self.evaluator.evaluate_splits(self.config.final_beam) if self.config.final_beam else []
            final = self.publisher.final(self.run, averaged, results)
        self.publisher.close()
        if self.place.world > 1 and dist.is_initialized():
            dist.destroy_process_group()
        return final


def main(argv: Optional[Sequence[str]] = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    Trainer(parse_config(argv)).train()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
