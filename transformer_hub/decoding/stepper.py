"""What every strategy shares: the batch it receives, the decoder stepper, its logits processors, and how a
hypothesis is made."""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import torch

from ..model.kernels import Projection, topk
from .config import length_penalty
from .prefix import Forcing, Prefix
from .processors import AnchoredTerms, MinLength, Processors, UnmetPhrases
from .results import Hypothesis

Tensor = torch.Tensor


@dataclass
class Batch:
    """A padded batch of sources, as strategies receive it."""

    src: Tensor  # (B, S) source ids, each ending in eos, right-padded with pad_id
    lengths: Tensor  # (B,) real tokens per source (eos included)
    max_steps: Tensor  # (B,) the most output tokens (eos included) each sentence may produce
    seed: int = 0  # sampling: the seed every sentence's random stream starts from
    prefixes: Optional[List[Optional[Prefix]]] = None  # per sentence: what its output must start with
    starts: Optional[Tensor] = None  # (B, k) tokens after bos every sentence's decoder input starts with (not output)
    constraints: Optional[list] = None  # per sentence: its ``constraints.Constraints`` or None (beam search)

    @property
    def size(self) -> int:
        return self.src.size(0)

    def start_seqs(self, bos: int, sentence_of: Optional[Tensor] = None) -> Tensor:
        """(R, 1 + k) decoder inputs before the first output token: bos, then the sentence's start tokens;
        one row per sentence, or per entry of ``sentence_of``."""
        rows = self.size if sentence_of is None else sentence_of.numel()
        seqs = torch.full((rows, 1), bos, dtype=torch.long, device=self.src.device)
        if self.starts is None:
            return seqs
        return torch.cat([seqs, self.starts if sentence_of is None else self.starts[sentence_of]], dim=1)


class Stepper:
    """Runs the decoder one token at a time over a set of rows.

    With the cache (the normal path) only the newest token is fed and the
    model appends its keys/values to ``KVCache``; cross-attention keys/values
    are computed once, at the first step.  With ``use_cache=False`` (the
    reference path) the whole prefix is re-decoded every step, as the
    seed lessons do; the two must agree to 1e-5.
    """

    def __init__(self, model, state, use_cache: bool, need_weights: bool) -> None:
        self.model, self.state, self.need_weights = model, state, need_weights
        self.cache = model.new_cache() if use_cache else None
        self.project = Projection()

    def step(self, seqs: Tensor):
        """(N, t) prefixes starting with bos -> next-token log-probs (N, V) float32, attention (N, L, h, S) or None.

        The log-probs live in a buffer that the next step overwrites (see ``kernels.Projection``).
        """
        if self.cache is not None:  # the first call also feeds any start tokens after bos (a decoder-start tag)
            fed = seqs if self.cache.length == 0 else seqs[:, -1:]
            out = self.model.decode(fed, self.state, self.cache, need_weights=self.need_weights)
        else:
            out = self.model.decode(seqs, self.state, need_weights=self.need_weights)
        log_probs = self.project(out.generator, out.hidden[:, -1])  # (N, V): the last position only
        attention = None
        if self.need_weights:
            attention = torch.stack([w[:, :, -1].float() for w in out.cross_attention], dim=1)  # (N, L, h, S)
        return log_probs, attention

    def keep(self, index: Tensor, state_index: Optional[Tensor] = None, state_stays: bool = False) -> None:
        """Keep (and reorder / repeat) rows ``index``.

        ``state_index`` (default ``index``) selects the encoder state's sources.
        Beam search's state is grouped (the k beams of a sentence share one
        source, see ``EncoderState.repeat``): it passes the live sentences when
        whole sentences leave, and ``state_stays=True`` when none did (state and
        cross-attention cache stay as they are).
        """
        if state_stays:
            moved = False
        else:
            if state_index is None:
                state_index = index
            moved = state_index.numel() != self.state.src.size(0) or bool((state_index != torch.arange(
                state_index.numel(), device=state_index.device)).any())
        if moved:
            self.state = self.state.index_select(state_index)
        if self.cache is not None:  # cross-attention keys/values follow the state's rows
            self.cache.reorder(index, state_index, source_moved=moved)


# (log-probs, step, rows) -> (tokens (N,) or (N, c), their log-probs); may overwrite the log-probs; it sees them
# after the processors' edits
Chooser = Callable[[Tensor, int, Optional[Tensor]], Tuple[Tensor, Tensor]]


def processors_for(batch: Batch, config, eos: int, per_sentence: int, allocation=None) -> Processors:
    """A batch's logits processors, in their order (``processors.py``): the forced prefixes, then, with
    ``allocation`` (beam search's ``constraints.BeamAllocation``), anchored terms and unmet phrases, then the
    minimum length.  ``per_sentence``: rows per sentence at the start."""
    out = Processors()
    if batch.prefixes:
        out.append(Forcing(batch.prefixes, batch.src.device, per_sentence))
    if allocation is not None:
        if allocation.needs_attention:
            out.append(AnchoredTerms(allocation))
        out.append(UnmetPhrases(allocation, eos))
    if config.min_len:
        out.append(MinLength(eos, config.min_len))
    return out


def most_likely(log_probs: Tensor, k: int) -> Tuple[Tensor, Tensor]:
    """Each row's ``k`` most likely tokens (bounded by the vocabulary): log-probs (N, k') and ids (N, k'), best first."""
    return topk(log_probs, min(k, log_probs.size(-1)))


def alternatives_at(logprobs: Sequence[float], ids: Sequence[int], token: int,
                    token_logprob: float) -> List[Tuple[int, float]]:
    """(token id, probability) pairs, most likely first: the K most likely, plus the emitted token where it was
    not among them (a forced, sampled or lower-ranked beam token), in its sorted place."""
    pairs = [(int(i), float(lp)) for i, lp in zip(ids, logprobs)]
    if all(i != token for i, _ in pairs):
        place = bisect.bisect_left([-lp for _, lp in pairs], -token_logprob)
        pairs.insert(place, (token, token_logprob))
    return [(i, math.exp(lp)) for i, lp in pairs]


def make_hypothesis(tokens: List[int], logprobs: List[float], score: float, finished: bool,
                    attention: Optional[Tensor], alpha: float,
                    alternatives: Optional[List[List[Tuple[int, float]]]] = None) -> Hypothesis:
    """``tokens`` exclude eos; ``logprobs`` include eos's when ``finished``."""
    return Hypothesis(text="", tokens=tokens, token_logprobs=logprobs, score=score,
                      normalized_score=score / length_penalty(len(logprobs), alpha),
                      attention=attention, finished=finished, alternatives=alternatives)
