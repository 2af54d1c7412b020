"""What a run leaves behind: checkpoints (the best one copied), the curves, the final averaged model with its
card and results file, and the Hub pushes of each (rank 0 only)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List

from ..hub import results as results_json
from . import checkpoint as ckpt
from .config import TrainingConfig
from .metrics import MetricsLog, plot_curves
from .run import Place, Run, data_sources
from .warm_start import provenance, shown_source


class Publisher:
    """Saves ``run``'s checkpoints and final model under ``place.out``, pushing each to the Hub when asked."""

    def __init__(self, config: TrainingConfig, place: Place, metrics: MetricsLog) -> None:
        self.config, self.place, self.metrics = config, place, metrics
        self.pusher = ckpt.HubPusher(config.push_to_hub, config.hub_private, config.hub_revision) \
            if config.push_to_hub and place.main else None

    def checkpoint(self, run: Run, record: Dict[str, float]) -> None:
        """Save a checkpoint after ``record`` (a validation's scores, or empty): ``best/`` too when it improved."""
        s = run.state
        if run.config.multilingual:  # BLEU rotates through directions: the loss is the comparable number
            best = float("inf") if s.best_val_loss is None else s.best_val_loss
            improved = "val_loss" in record and record["val_loss"] < best
            if improved:
                s.best_val_loss = record["val_loss"]
        else:
            improved = "bleu" in record and (s.best_bleu is None or record["bleu"] > s.best_bleu)
            if improved:
                s.best_bleu = record["bleu"]
        path = ckpt.save_checkpoint(self.place.out / "checkpoints", run.model, run.optimizer, s, self.config.keep_last)
        if improved:
            ckpt.copy_as(path, self.place.out / "best")
        plot_curves(self.metrics.read(), self.place.out / "training_curves.png", self.config.name or "transformer_hub")
        if self.pusher is not None:
            self.pusher.push(path, f"step {s.step}" + (f", val BLEU {record['bleu']:.2f}" if "bleu" in record else ""))

    def average(self, run: Run) -> int:
        """Load the mean of the last ``average_last`` checkpoints into the model; how many there were."""
        found = ckpt.list_checkpoints(self.place.out / "checkpoints")[-max(self.config.average_last, 1):]
        ckpt.average_checkpoints(found, run.model)
        return len(found)

    def final(self, run: Run, averaged: int, results: List[Dict]) -> Path:
        """Save the final model (card, metrics, ``results.json``) into ``out/final`` and push it if asked."""
        c, model = self.config, run.model
        training = training_record(c, run, averaged, self.place.world)
        default_name = f"transformer_hub {'-'.join(run.langs)}" if run.langs else f"transformer_hub {c.src_lang}-{c.tgt_lang}"
        corpora = [source.describe() for source in data_sources(c)]
        model.card_data = {"name": c.name or default_name, "data": corpora,
                           "datasets": [corpus["corpus"].lower() for corpus in corpora], "results": results,
                           "training": training, "plot": str(self.place.out / "training_curves.png")}
        if run.state.init:
            model.card_data["provenance"] = provenance(run.state.init)
        final = self.place.out / "final"
        model.save_pretrained(final)
        (final / "metrics.jsonl").write_text(self.metrics.path.read_text() if self.metrics.path.is_file() else "")
        name = model.card_data["name"]
        results_json.save(results_json.Results(
            models=[results_json.ModelResult(name=name, path="final", parameters=model.num_parameters(),
                                             training=training)],
            results=results_json.scores_from_card(name, results)), self.place.out / "results.json")
        if self.pusher is not None:
            self.pusher.push(final, f"final model: average of {averaged} checkpoints")
        return final

    def close(self) -> None:
        """Wait for the pushes still queued."""
        if self.pusher is not None:
            self.pusher.close()


def training_record(config: TrainingConfig, run: Run, averaged: int, world: int) -> Dict:
    """The card's ``training`` entry: how long, how fast, the recipe, what the run started from."""
    s, c = run.state, config
    training = {
        "updates": s.step, "epochs": s.epoch, "train_wall_minutes": round(s.wall_seconds / 60, 1),
        "train_compute_minutes": round(s.train_seconds / 60, 1),
        "train_tokens_per_s": round(s.tokens / max(s.train_seconds, 1e-9)),
        "averaged_checkpoints": averaged, "max_tokens_per_batch": c.max_tokens * world,
        "peak_lr": c.peak_lr, "warmup": c.warmup, "label_smoothing": c.label_smoothing, "seed": c.seed,
    }
    if c.cooldown_updates:
        training["cooldown_updates"] = c.cooldown_updates
    if run.model.tokenizer.sampling is not None:
        training["subword_sampling"] = run.model.tokenizer.sampling.describe()
    if s.init:
        training["init_from"] = shown_source(s.init["source"])
    return training
