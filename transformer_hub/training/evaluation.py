"""A run's scores: validation loss and BLEU while it trains, beam-search BLEU of every split at the end."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from tqdm.auto import tqdm

from ..hub import results as results_json
from ..model.losses import label_smoothed_cross_entropy
from .config import TrainingConfig
from .data import Track, iterate_batches, load_mixed
from .metrics import score
from .run import Place, Run, data_sources


class Evaluator:
    """Scores ``run``'s model on its validation sets (and, at the end, its test splits)."""

    def __init__(self, config: TrainingConfig, run: Run, place: Place) -> None:
        self.config, self.run, self.place = config, run, place

    def _loss_sum(self, examples: Sequence) -> Tuple[float, int]:
        return loss_sum(self.run.model, examples, self.config.max_tokens, self.place.device)

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
            directions = self._bleu_directions()
            scores = [self.bleu(self.run.valid_sets[d], *d) for d in directions]
            for d, scored in zip(directions, scores):
                result[f"bleu/{d.name}"] = scored["bleu"]
            result["bleu"] = sum(x["bleu"] for x in scores) / len(scores)
            self.run.state.validations += 1
        return result

    def _bleu_directions(self) -> List[Track]:
        """The directions this validation scores: the next ``bleu_directions`` of them, in rotation."""
        directions = list(self.run.valid_sets)
        k = min(max(self.config.bleu_directions, 1), len(directions))
        start = self.run.state.validations * k
        return [directions[(start + i) % len(directions)] for i in range(k)]

    def bleu(self, pairs: Sequence[Tuple[str, str]], src_lang: Optional[str], tgt_lang: Optional[str],
             domain: str = "", **options) -> Dict[str, float]:
        """sacreBLEU / chrF of the model's translations of ``pairs`` (greedy unless ``options`` say otherwise)."""
        return translation_scores(self.run.model, pairs, src_lang, tgt_lang, domain, **options)

    def evaluate_splits(self, beam: int) -> List[Dict]:
        """Beam-search scores of the validation and test splits, every direction whose files exist."""
        c, results = self.config, []
        sets = [(c.valid_split, self.run.valid_sets)]
        if not c.train_src:
            sets += [(name, self._maybe_split(name)) for name in c.test_splits.split(",") if name]
        for split, by_direction in sets:
            for track, pairs in by_direction.items():
                scores = self.bleu(pairs, *track, strategy="beam", beam_size=beam)
                tqdm.write(f"{split} {track.name} (beam {beam}): "
                           + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
                results += result_records(scores, split, f"{track.src}-{track.tgt}", track.domain)
        return results

    def _maybe_split(self, name: str) -> Dict[Track, List[Tuple[str, str]]]:
        found = {}
        sources = data_sources(self.config)
        for track in self.run.valid_sets:
            try:
                found.update(load_mixed([s for s in sources if s.domain == track.domain], name, [track[:2]]))
            except ValueError:  # e.g. no Czech test_2017 files: that direction is skipped
                continue
        return found


@torch.inference_mode()
def loss_sum(model, examples: Sequence, max_tokens: int, device: torch.device = torch.device("cpu")
             ) -> Tuple[float, int]:
    """Summed cross-entropy (no smoothing) of ``model`` over ``examples`` and their number of target tokens."""
    pad = model.config.pad_id
    model.eval()
    total, count = 0.0, 0
    for _, (src, tgt_in, tgt_out) in iterate_batches(examples, max_tokens, 0, 0, pad):
        logits = model(src.to(device), tgt_in.to(device))
        total += label_smoothed_cross_entropy(logits, tgt_out.to(device), pad, 0.0, reduction="sum").item()
        count += int((tgt_out != pad).sum())
    return total, count


def translation_scores(model, pairs: Sequence[Tuple[str, str]], src_lang: Optional[str], tgt_lang: Optional[str],
                       domain: Optional[str] = "", **options) -> Dict[str, float]:
    """sacreBLEU / chrF of ``model``'s translations of ``pairs`` (greedy unless ``options`` say otherwise), the
    sources read in ``domain`` by a model trained with domain tags (empty: its default)."""
    languages = {"src_lang": src_lang, "tgt_lang": tgt_lang} if model.config.pairs() else {}
    if model.config.domains and domain:
        languages["domain"] = domain
    hypotheses = model.translate([p[0] for p in pairs], batch_size=200, **languages, **options)
    return score(hypotheses, [p[1] for p in pairs])


def result_records(scores: Dict[str, float], split: str, direction: str, corpus: str = "") -> List[Dict]:
    """Model-card result entries (one per metric) for one split and direction (of the corpus named ``corpus``;
    unnamed: Multi30k)."""
    dataset = {"dataset_name": corpus, "dataset_type": corpus} if corpus else \
        {"dataset_name": "Multi30k", "dataset_type": "multi30k"}
    return [{**dataset, "split": split, "direction": direction,
             "metric": "bleu" if metric.startswith("bleu") else "chrf", "metric_name": results_json.METRICS[metric],
             "value": round(value, 2)} for metric, value in scores.items()]
