"""Tuning a direction's reranker on validation lists: coordinate search over a small grid, on corpus BLEU.

The objective is lowercased corpus sacreBLEU of the chosen candidates against the references (the targets'
metric), computed from each candidate's cached n-gram statistics, so one trial of a weight costs a few array
operations.  The search starts from the beam's choice (all weight on ``forward``, normalised with the beam's
length penalty), then visits the length penalty and each feature's weight in turn, keeping a value only if
it gains at least ``min_gain`` BLEU, for up to ``rounds`` rounds.  Last, a feature that needs a model pass
(``EXPENSIVE``) is dropped when the weights do as well, within ``min_gain``, without it.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

from .features import FEATURES, NBestList, SearchSettings
from .reranker import DirectionWeights

ALPHAS = (0.0, 0.3, 0.6, 1.0, 1.5, 2.0)
_LOGPROB_GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)
GRIDS: Dict[str, Sequence[float]] = {
    "reverse": _LOGPROB_GRID, "second": _LOGPROB_GRID, "second_reverse": _LOGPROB_GRID,
    "length_ratio": (-2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0),
    "mbr_chrf": (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0),
    "mbr_bleu": (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0),
}


# features that cost a forward pass of a model over every candidate (the others cost a little Python)
EXPENSIVE = ("second_reverse", "second", "reverse")


class CorpusBleu:
    """Lowercased corpus BLEU of one candidate per list, from per-candidate sufficient statistics."""

    def __init__(self, lists: Sequence[NBestList], references: Sequence[str]) -> None:
        from sacrebleu.metrics import BLEU

        if len(lists) != len(references):
            raise ValueError(f"{len(lists)} lists but {len(references)} references")
        self.metric = BLEU(lowercase=True)
        width = max(len(n.texts) for n in lists)
        self.stats = np.zeros((len(lists), width, 10), dtype=np.int64)
        for i, (nbest, ref) in enumerate(zip(lists, references)):
            rows = self.metric._extract_corpus_statistics(nbest.texts, [[ref] * len(nbest.texts)])
            self.stats[i, : len(rows)] = rows

    def __call__(self, choice: np.ndarray) -> float:
        total = self.stats[np.arange(len(choice)), choice].sum(0)
        return float(self.metric._compute_score_from_stats(total.tolist()).score)


class Table:
    """The lists' features as arrays (lists x candidates), missing candidates at -inf, forward per alpha."""

    def __init__(self, lists: Sequence[NBestList], alphas: Sequence[float] = ALPHAS) -> None:
        self.width = max(len(n.texts) for n in lists)
        self.valid = np.zeros((len(lists), self.width), dtype=bool)
        for i, nbest in enumerate(lists):
            self.valid[i, : len(nbest.texts)] = True
        self.features = [f for f in FEATURES if f != "forward" and all(f in n.features for n in lists)]
        self.columns = {f: self._array([n.features[f] for n in lists]) for f in self.features}
        self.forward = {a: self._array([n.forward(a) for n in lists]) for a in alphas}

    def _array(self, rows: List[List[float]]) -> np.ndarray:
        out = np.zeros((len(rows), self.width))
        for i, row in enumerate(rows):
            out[i, : len(row)] = row
        return out

    def choose(self, weights: Dict[str, float], alpha: float) -> np.ndarray:
        total = weights.get("forward", 0.0) * self.forward[alpha]
        for name, w in weights.items():
            if name != "forward" and w:
                total = total + w * self.columns[name]
        return np.where(self.valid, total, -np.inf).argmax(1)  # ties: the first, the beam's order


def tune(lists: Sequence[NBestList], references: Sequence[str], search: SearchSettings, rounds: int = 3,
         min_gain: float = 0.05, progress=None) -> DirectionWeights:
    """The best weights found for these lists (see the module docstring); ``val`` records what they scored."""
    table, bleu = Table(lists), CorpusBleu(lists, references)
    weights = {"forward": 1.0, **{f: 0.0 for f in table.features}}
    alpha = search.length_penalty if search.length_penalty in table.forward else ALPHAS[2]
    beam = bleu(np.zeros(len(lists), dtype=np.int64))  # the chosen model's beam output: its list's first
    best = bleu(table.choose(weights, alpha))
    for _ in range(rounds):
        improved = False
        for name in ["alpha"] + table.features:
            trials = [(value, weights) for value in ALPHAS] if name == "alpha" else \
                [(alpha, {**weights, name: value}) for value in GRIDS[name]]
            scored = [(bleu(table.choose(w, a)), a, w) for a, w in trials]
            got, trial_alpha, trial = max(scored, key=lambda t: t[0])  # ties: the first in the grid
            if got >= best + min_gain:
                best, alpha, weights, improved = got, trial_alpha, trial, True
            if progress is not None:
                progress()
        if not improved:
            break
    for name in EXPENSIVE:  # a model pass costs about what the search does: keep it only where it earns its time
        if weights.get(name):
            without = {**weights, name: 0.0}
            got = bleu(table.choose(without, alpha))
            if got > best - min_gain:
                best, weights = max(best, got), without
    kept = {k: v for k, v in weights.items() if v != 0.0}
    return DirectionWeights(weights=kept, alpha=alpha, search=search,
                            val={"sentences": len(lists), "beam_bleu_lowercase": round(beam, 2),
                                 "reranked_bleu_lowercase": round(best, 2)})
