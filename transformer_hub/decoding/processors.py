"""Logits processors: the per-step edits of the next-token log-probabilities that every strategy runs.

A processor edits one step's (N, V) log-probabilities in place and may keep per-row state (how much of a
prefix a row has written, which phrases it met) that follows the rows as a strategy extends, reorders and
drops them.  Greedy, sampling and beam search call :class:`Processors` alike: before choosing, ``follow``
after.  A search (beam allocation for constraints, ``constraints.py``) stays in the strategy; its per-step
edits are processors.  Their order (``stepper.processors_for``): a forced prefix (``prefix.Forcing``),
anchored terms, unmet phrases, minimum length; ``return_alternatives`` reads the model's own distribution.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Dict, List, Optional, Sequence

import torch

from .alignment import focus

Tensor = torch.Tensor
NEG_INF = float("-inf")


@dataclass
class Step:
    """What a processor sees of one step: its index, the rows' sentences (original indices, worked out when
    first asked) and the decoder's cross-attention (N, L, h, S) when some processor needs it."""

    t: int
    sentence_of: Callable[[], List[int]]
    attention: Optional[Tensor] = None

    @cached_property
    def sentences(self) -> List[int]:
        return self.sentence_of()


class Processor:
    """One edit of each step's log-probabilities (``__call__``, in place) and the per-row state it keeps."""

    needs_attention = False  # True: ``step.attention`` must be given

    def __call__(self, log_probs: Tensor, step: Step) -> None:
        raise NotImplementedError

    def follow(self, rows: Optional[Sequence[int]], tokens, step: Step) -> None:
        """The rows moved on at ``step``: new row i is old row ``rows[i]`` (None: the same rows) extended by
        ``tokens[i]`` (None: no token, rows only kept); ``step.sentences`` are the new rows'."""


class MinLength(Processor):
    """eos is blocked before ``min_len`` output tokens; the other tokens keep the model's log-probabilities."""

    def __init__(self, eos: int, min_len: int) -> None:
        self.eos, self.min_len = eos, min_len

    def __call__(self, log_probs: Tensor, step: Step) -> None:
        if step.t < self.min_len:
            log_probs[:, self.eos] = NEG_INF


class UnmetPhrases(Processor):
    """A row that has not met all its phrases cannot end; moves the rows' constraint states (``allocation``, a
    ``constraints.BeamAllocation``) along with the search."""

    def __init__(self, allocation, eos: int) -> None:
        self.allocation, self.eos = allocation, eos

    def __call__(self, log_probs: Tensor, step: Step) -> None:
        of, states = self.allocation.of, self.allocation.states
        rows = [r for r, s in enumerate(step.sentences) if of[s] is not None and not of[s].done(states[r])]
        if rows:
            log_probs[torch.tensor(rows, device=log_probs.device), self.eos] = NEG_INF

    def follow(self, rows, tokens, step: Step) -> None:
        self.allocation.follow(rows, tokens, step.sentences)


class AnchoredTerms(Processor):
    """Anchored phrases (``allocation.of[s].anchors``): a row may start one only while its attention
    (``alignment.focus``) puts at least the gate on the phrase's source words (``allocation.closed`` records
    the others, for the proposals); there the phrase's first token scores as well as its usual translation
    would, a phrase under way continues at the row's best score, and the usual translation's tokens lose the
    penalty (both the sentence's ``Constraints.anchoring``).  So the term is scored as the word it replaces,
    where that word would go."""

    needs_attention = True

    def __init__(self, allocation) -> None:
        self.allocation = allocation

    def __call__(self, log_probs: Tensor, step: Step) -> None:
        of = self.allocation.of
        self.allocation.closed = {}
        rows = [r for r, s in enumerate(step.sentences) if of[s] is not None and of[s].is_anchored]
        if not rows or step.attention is None:
            return
        index = torch.tensor(rows, device=log_probs.device)
        focused = focus(step.attention[index.to(step.attention.device)]).tolist()  # (n, S)
        for n, row in enumerate(rows):
            self.allocation.closed[row] = self._row(log_probs, row, of[step.sentences[row]], focused[n])

    def _row(self, log_probs: Tensor, row: int, spec, focused: List[float]) -> int:
        """One row's edit; returns its closed phrases (a bitmask)."""
        met, partial = self.allocation.states[row]
        lifted: Dict[int, float] = {}  # token -> the score it is lifted to
        for p, v, j in partial:  # a term begun at its anchor is finished: its next token costs nothing
            if spec.anchors[p] is not None:
                lifted[spec.phrases[p].variants[v][j]] = 0.0
        fresh, gate, penalty = self.allocation.fresh[row], spec.anchoring.gate, spec.anchoring.penalty
        if spec.inner is not None and any(fresh >> i & 1 for i, a in enumerate(spec.anchors) if a):
            log_probs[row, spec.inner.to(log_probs.device)] -= penalty  # "Velo", not "Velos" / "Velomm"
        closed, under_way, pushed = 0, {p for p, _, _ in partial}, set()
        for i, a in enumerate(spec.anchors):
            if a is None:
                continue
            open_here = any(sum(focused[start:end]) >= gate for start, end in a.spans)
            if open_here:  # the decoder is at the term's words: its usual translation goes down, met or not
                pushed |= a.avoid & spec.avoid
            if not open_here:
                closed |= 0 if met >> i & 1 else 1 << i
            elif a.avoid and i not in under_way and (not met >> i & 1 or a.also and spec.phrases[i].length == 1):
                usual = float(log_probs[row, torch.tensor(sorted(a.avoid), device=log_probs.device)].max())
                first = spec.phrases[i].variants[0][0]
                lifted[first] = max(lifted.get(first, usual), usual)  # met: again if its source recurs
        if pushed and penalty:  # only there: elsewhere the same word (an article, a "Rad") is the model's
            log_probs[row, torch.tensor(sorted(pushed), device=log_probs.device)] -= penalty
        if lifted:
            tokens = torch.tensor(list(lifted), device=log_probs.device)
            values = torch.tensor(list(lifted.values()), dtype=log_probs.dtype, device=log_probs.device)
            log_probs[row, tokens] = torch.maximum(log_probs[row, tokens], values)
        return closed


class Processors(list):
    """The processors of one batch, in order: what every strategy calls."""

    @property
    def needs_attention(self) -> bool:
        return any(p.needs_attention for p in self)

    def __call__(self, log_probs: Tensor, step: Step) -> None:
        for processor in self:
            processor(log_probs, step)

    def follow(self, rows: Optional[Sequence[int]], tokens, step: Step) -> None:
        for processor in self:
            processor.follow(rows, tokens, step)
