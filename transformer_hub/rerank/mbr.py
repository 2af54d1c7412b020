"""Minimum Bayes risk: each candidate's expected utility against the other candidates of its list.

A candidate's utility against another is a sentence-level metric (sacreBLEU's chrF or BLEU, 0..100, the other
taken as the reference); its expectation weights the others by the model's posterior over the list (softmax of
their log-probabilities), or uniformly.  The candidate with the highest expected utility is the MBR choice
(Kumar & Byrne, 2004; Freitag et al., 2022).
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence

Utility = Callable[[str, str], float]  # (hypothesis, pseudo-reference) -> score


def _chrf() -> Utility:
    from sacrebleu.metrics import CHRF

    metric = CHRF()
    return lambda hyp, ref: metric.sentence_score(hyp, [ref]).score


def _bleu() -> Utility:
    from sacrebleu.metrics import BLEU

    metric = BLEU(effective_order=True)  # sentence BLEU: no zero score for a missing 4-gram match
    return lambda hyp, ref: metric.sentence_score(hyp, [ref]).score


UTILITIES: Dict[str, Callable[[], Utility]] = {"chrf": _chrf, "bleu": _bleu}


def utility(name: str) -> Utility:
    """A sentence utility by name: "chrf" or "bleu" (sacreBLEU)."""
    if name not in UTILITIES:
        raise ValueError(f"unknown MBR utility {name!r}; known: {', '.join(UTILITIES)}")
    return UTILITIES[name]()


def posterior(logprobs: Sequence[float]) -> List[float]:
    """Softmax of log-probabilities: the model's belief over the list."""
    top = max(logprobs)
    weights = [math.exp(lp - top) for lp in logprobs]
    total = math.fsum(weights)
    return [w / total for w in weights]


def expected_utility(candidates: Sequence[str], score: Utility, weights: Optional[Sequence[float]] = None
                     ) -> List[float]:
    """Per candidate, the weighted mean utility against every *other* candidate (uniform without ``weights``).

    A list of one gets 0: nothing to agree with.  Utilities are computed once per ordered pair.
    """
    n = len(candidates)
    weights = [1.0] * n if weights is None else list(weights)
    if len(weights) != n:
        raise ValueError(f"{len(weights)} weights for {n} candidates")
    out = []
    for i, hyp in enumerate(candidates):
        others = [j for j in range(n) if j != i]
        mass = math.fsum(weights[j] for j in others)
        if not others or mass <= 0:
            out.append(0.0)
            continue
        out.append(math.fsum(weights[j] * score(hyp, candidates[j]) for j in others) / mass)
    return out


def mbr_choice(candidates: Sequence[str], score: Utility, weights: Optional[Sequence[float]] = None) -> int:
    """The index of the candidate with the highest expected utility (ties: the first)."""
    if not candidates:
        raise ValueError("no candidates to choose from")
    utilities = expected_utility(candidates, score, weights)
    return max(range(len(candidates)), key=lambda i: (utilities[i], -i))
