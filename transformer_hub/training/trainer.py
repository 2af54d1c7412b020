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

import argparse
import logging
import math
import signal
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from . import checkpoint as ckpt
from . import distributed
from .data import Track, iterate_batches, load_mixed
from ..model.losses import label_smoothed_cross_entropy
from .metrics import MetricsLog, plot_curves, score
from ..hub import results as results_json
from .schedule import lr_factor, scheduled_lr
from .options import build_parser
from .run import Place, Run, build_run, data_sources
from .warm_start import provenance, shown_source

logger = logging.getLogger("transformer_hub.training.trainer")
MAX_BAD_STEPS = 5


class Trainer:
    """Trains a ``Run`` (``run.py``): the loop, validation, checkpoints, metrics. ``train()`` trains to the end."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        device = torch.device(args.device)
        self.place = Place(Path(args.out), device, *distributed.setup(device))
        if args.threads:
            torch.set_num_threads(args.threads)
        self.stop_requested = False  # a stop signal arrived (on any rank, once agreed by _done)
        self.skipped: List[Dict[str, int]] = []  # the batches every rank skipped together (non-finite loss)
        self.bad_in_a_row = 0
        self.metrics = MetricsLog(self.place.out / "metrics.jsonl")
        self.run: Run = build_run(args, self.place, self.metrics)
        self.factor = args.lr_factor or lr_factor(args.peak_lr, self.run.config.d_model, args.warmup)

    # ---------------------------------------------------------------- loop
    def _loss(self, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
        return self.run.net(src, tgt_in, tgt_out, self.args.label_smoothing)  # fused projection + loss

    def _done(self) -> bool:
        """Whether to stop now: the same answer on every rank (a rank stopping alone would hang the others)."""
        a, s = self.args, self.run.state
        out_of_time = a.max_minutes > 0 and s.wall_seconds >= a.max_minutes * 60
        self.stop_requested, out_of_time = distributed.agree_to_stop(self.stop_requested, out_of_time, self.place.rank,
                                                                     self.place.world, self.place.device)
        return self.stop_requested or out_of_time or s.step >= a.max_updates or s.epoch >= a.max_epochs

    def train(self) -> Optional[Path]:
        """Train until a limit is reached, then average, evaluate and save the final model (rank 0)."""
        a, s = self.args, self.run.state
        self._install_signal_handlers()
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
        a, s = self.args, self.run.state
        started = time.perf_counter()
        self.run.net.train()
        lr = scheduled_lr(s.step + 1, self.run.config.d_model, a.warmup, self.factor, a.max_updates,
                          a.cooldown_updates)
        for group in self.run.optimizer.param_groups:
            group["lr"] = lr
        src, tgt_in, tgt_out = (t.to(self.place.device) for t in batch)
        loss = self._loss(src, tgt_in, tgt_out)
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

    # ---------------------------------------------------------------- evaluation and checkpoints
    @torch.inference_mode()
    def _loss_sum(self, examples: Sequence) -> Tuple[float, int]:
        """Summed cross-entropy (no smoothing) over ``examples`` and their number of target tokens."""
        self.run.model.eval()
        total, count = 0.0, 0
        for _, (src, tgt_in, tgt_out) in iterate_batches(examples, self.args.max_tokens, 0, 0, self.run.config.pad_id):
            logits = self.run.model(src.to(self.place.device), tgt_in.to(self.place.device))
            total += label_smoothed_cross_entropy(logits, tgt_out.to(self.place.device), self.run.config.pad_id, 0.0,
                                                  reduction="sum").item()
            count += int((tgt_out != self.run.config.pad_id).sum())
        return total, count

    def validate(self, bleu: bool = True) -> Dict[str, float]:
        """Validation loss (per direction too, when multilingual) and greedy BLEU / chrF."""
        multilingual, result = self.run.config.multilingual, {}
        totals = [0.0, 0]
        for direction in self.run.valid_sets:
            name = direction.name
            total, count = self._loss_sum([e for e in self.run.valid_examples if e.direction == name])
            totals[0], totals[1] = totals[0] + total, totals[1] + count
            if multilingual:
                result[f"val_loss/{name}"] = total / max(count, 1)
        mean = totals[0] / max(totals[1], 1)
        result.update(val_loss=mean, val_ppl=math.exp(min(mean, 50)))
        if bleu and not multilingual:
            result.update(self.bleu(self.run.valid_pairs, *next(iter(self.run.valid_sets))))
        elif bleu:
            scores = [self.bleu(self.run.valid_sets[d], *d) for d in self._bleu_directions()]
            for d, scored in zip(self._bleu_directions(), scores):
                result[f"bleu/{d.name}"] = scored["bleu"]
            result["bleu"] = sum(x["bleu"] for x in scores) / len(scores)
            self.run.state.validations += 1
        return result

    def _bleu_directions(self) -> List[Track]:
        """The directions this validation scores: the next ``--bleu-directions`` of them, in rotation."""
        directions = list(self.run.valid_sets)
        k = min(max(self.args.bleu_directions, 1), len(directions))
        start = self.run.state.validations * k
        return [directions[(start + i) % len(directions)] for i in range(k)]

    def bleu(self, pairs: Sequence[Tuple[str, str]], src_lang: Optional[str], tgt_lang: Optional[str],
             domain: str = "", **options) -> Dict[str, float]:
        from ..decoding import translate

        languages = {"src_lang": src_lang, "tgt_lang": tgt_lang} if self.run.config.pairs() else {}
        if self.run.config.domains and domain:
            languages["domain"] = domain
        hypotheses = translate(self.run.model, [p[0] for p in pairs], batch_size=200, **languages, **options)
        return score(hypotheses, [p[1] for p in pairs])

    def _checkpoint(self, validate: bool, bleu: bool = True) -> None:
        if not self.place.main:
            return
        s = self.run.state
        record = self.validate(bleu=bleu) if validate else {}
        if record:
            self.metrics.append(kind="val", step=s.step, epoch=s.epoch, **record)
            tqdm.write(f"epoch {s.epoch} step {s.step}: " + ", ".join(f"{k} {v:.3f}" for k, v in record.items()))
        if self.run.config.multilingual:  # BLEU rotates through directions: the loss is the comparable number
            best = float("inf") if s.best_val_loss is None else s.best_val_loss
            improved = "val_loss" in record and record["val_loss"] < best
            if improved:
                s.best_val_loss = record["val_loss"]
        else:
            improved = "bleu" in record and (s.best_bleu is None or record["bleu"] > s.best_bleu)
            if improved:
                s.best_bleu = record["bleu"]
        path = ckpt.save_checkpoint(self.place.out / "checkpoints", self.run.model, self.run.optimizer, s, self.args.keep_last)
        if improved:
            ckpt.copy_as(path, self.place.out / "best")
        plot_curves(self.metrics.read(), self.place.out / "training_curves.png", self.args.name or "transformer_hub")
        if self.pusher is not None:
            message = f"step {s.step}" + (f", val BLEU {record['bleu']:.2f}" if "bleu" in record else "")
            self.pusher.push(path, message)

    @property
    def pusher(self) -> Optional[ckpt.HubPusher]:
        if not self.args.push_to_hub or not self.place.main:
            return None
        if not hasattr(self, "_pusher"):
            self._pusher = ckpt.HubPusher(self.args.push_to_hub, self.args.hub_private, self.args.hub_revision)
        return self._pusher

    def _install_signal_handlers(self) -> None:
        def handler(signum, frame):  # finish the current update, checkpoint, exit
            if self.stop_requested:
                raise KeyboardInterrupt
            self.stop_requested = True
            tqdm.write(f"signal {signum}: saving a checkpoint after this update, then stopping")
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                signal.signal(sig, handler)
            except ValueError:  # not in the main thread (e.g. under a test runner thread)
                pass

    def finish(self) -> Optional[Path]:
        """Average the last checkpoints into ``final/``, score it, write the card; push it if asked."""
        a, s = self.args, self.run.state
        if not self.place.main or self.stop_requested:  # interrupted: the checkpoint is saved, resume later
            self._close()
            return None
        found = ckpt.list_checkpoints(self.place.out / "checkpoints")[-max(a.average_last, 1):]
        ckpt.average_checkpoints(found, self.run.model)
        results, training = [], {
            "updates": s.step, "epochs": s.epoch, "train_wall_minutes": round(s.wall_seconds / 60, 1),
            "train_compute_minutes": round(s.train_seconds / 60, 1),
            "train_tokens_per_s": round(s.tokens / max(s.train_seconds, 1e-9)),
            "averaged_checkpoints": len(found), "max_tokens_per_batch": a.max_tokens * self.place.world,
            "peak_lr": a.peak_lr, "warmup": a.warmup, "label_smoothing": a.label_smoothing, "seed": a.seed,
        }
        if a.cooldown_updates:
            training["cooldown_updates"] = a.cooldown_updates
        if self.run.model.tokenizer.sampling is not None:
            training["subword_sampling"] = self.run.model.tokenizer.sampling.describe()
        if s.init:
            training["init_from"] = shown_source(s.init["source"])
        if a.final_beam:
            results = self.evaluate_splits(beam=a.final_beam)
        default_name = f"transformer_hub {'-'.join(self.run.langs)}" if self.run.langs else f"transformer_hub {a.src_lang}-{a.tgt_lang}"
        corpora = [source.describe() for source in data_sources(a)]
        self.run.model.card_data = {"name": a.name or default_name, "data": corpora,
                                "datasets": [c["corpus"].lower() for c in corpora], "results": results,
                                "training": training,
                                "plot": str(self.place.out / "training_curves.png")}
        if s.init:
            self.run.model.card_data["provenance"] = provenance(s.init)
        final = self.place.out / "final"
        self.run.model.save_pretrained(final)
        (final / "metrics.jsonl").write_text(self.metrics.path.read_text() if self.metrics.path.is_file() else "")
        name = self.run.model.card_data["name"]
        results_json.save(results_json.Results(
            models=[results_json.ModelResult(name=name, path="final", parameters=self.run.model.num_parameters(),
                                             training=training)],
            results=results_json.scores_from_card(name, results)), self.place.out / "results.json")
        if self.pusher is not None:
            self.pusher.push(final, f"final model: average of {len(found)} checkpoints")
        self._close()
        return final

    def evaluate_splits(self, beam: int) -> List[Dict]:
        """Beam-search scores of the validation and test splits, every direction whose files exist."""
        a, results = self.args, []
        sets = [(a.valid_split, self.run.valid_sets)]
        if not a.train_src:
            sets += [(name, self._maybe_split(name)) for name in a.test_splits.split(",") if name]
        for split, by_direction in sets:
            for track, pairs in by_direction.items():
                scores = self.bleu(pairs, *track, strategy="beam", beam_size=beam)
                tqdm.write(f"{split} {track.name} (beam {beam}): "
                           + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
                results += result_records(scores, split, f"{track.src}-{track.tgt}", track.domain)
        return results

    def _maybe_split(self, name: str) -> Dict[Track, List[Tuple[str, str]]]:
        found = {}
        sources = {source.domain: source for source in data_sources(self.args)}
        for track in self.run.valid_sets:
            try:
                found.update(load_mixed([sources[track.domain]], name, [track[:2]]))
            except ValueError:  # e.g. no Czech test_2017 files: that direction is skipped
                continue
        return found

    def _close(self) -> None:
        if self.place.main and self.args.push_to_hub:
            self.pusher.close()
        if self.place.world > 1 and dist.is_initialized():
            dist.destroy_process_group()


def result_records(scores: Dict[str, float], split: str, direction: str, corpus: str = "") -> List[Dict]:
    """Model-card result entries (one per metric) for one split and direction (of the corpus named ``corpus``;
    unnamed: Multi30k)."""
    dataset = {"dataset_name": corpus, "dataset_type": corpus} if corpus else \
        {"dataset_name": "Multi30k", "dataset_type": "multi30k"}
    return [{**dataset, "split": split, "direction": direction,
             "metric": "bleu" if metric.startswith("bleu") else "chrf", "metric_name": results_json.METRICS[metric],
             "value": round(value, 2)} for metric, value in scores.items()]


def main(argv: Optional[Sequence[str]] = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    Trainer(args).train()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
