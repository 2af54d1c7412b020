"""Beam search's finished hypotheses of one sentence, and its stopping rule.

``FinishedHypotheses`` keeps the k best finished hypotheses (a min-heap on
the normalised score: adding one is O(log k), nothing is re-sorted) and
decides when the sentence is done, with the semantics of ``transformers``'
``GenerationConfig.early_stopping``:

* ``True``: done as soon as k hypotheses finished;
* ``False`` (the default, the "heuristic"): done when k finished and the best
  live beam, normalised at its *current* length, scores no better than the
  k-th finished one.  With a length penalty (alpha > 0) a live beam can still
  gain by growing longer, so this may stop while a live beam could win;
* ``"never"``: done only when no live beam can beat the k-th finished one
  even at the length cap: a live beam's score can only fall (log-probs are
  <= 0), so its best possible normalised score is ``score / lp(L)`` maximised
  over the lengths L it can still reach.  Beam search then misses nothing
  that its beams could reach (with a beam wide enough to prune nothing, it
  is exact search).
"""
from __future__ import annotations

import heapq
import itertools
from typing import List, Tuple, Union

from .config import length_penalty
from .results import Hypothesis

NEG_INF = float("-inf")


class FinishedHypotheses:
    """The ``k`` best finished hypotheses of one sentence (ties: the first added ranks first)."""

    def __init__(self, k: int, alpha: float, early_stopping: Union[bool, str], cap: int) -> None:
        self.k, self.alpha, self.early_stopping, self.cap = k, alpha, early_stopping, cap
        self._heap: List[Tuple[float, int, Hypothesis]] = []  # (normalised score, -arrival, hypothesis); worst first
        self._arrival = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, hyp: Hypothesis) -> bool:
        """Offer a finished hypothesis; returns whether it is kept among the k best."""
        entry = (hyp.normalized_score, -next(self._arrival), hyp)
        if len(self._heap) < self.k:
            heapq.heappush(self._heap, entry)
            return True
        if entry[:2] <= self._heap[0][:2]:
            return False
        heapq.heapreplace(self._heap, entry)
        return True

    @property
    def worst(self) -> float:
        """The k-th best normalised score; -inf while fewer than k finished."""
        return self._heap[0][0] if len(self._heap) == self.k else NEG_INF

    def is_done(self, best_live_score: float, length: int) -> bool:
        """Whether the sentence can stop, given its best live beam's total log-prob at ``length`` tokens."""
        if len(self._heap) < self.k:
            return False
        if self.early_stopping is True:
            return True
        bound = best_live_score / length_penalty(length, self.alpha)
        if self.early_stopping == "never" and best_live_score > NEG_INF:
            bound = max(bound, best_live_score / length_penalty(max(self.cap, length), self.alpha))
        return bound <= self.worst

    def best(self, n: int) -> List[Hypothesis]:
        """The n best, best first."""
        return [hyp for _, _, hyp in sorted(self._heap, key=lambda e: e[:2], reverse=True)[:n]]
