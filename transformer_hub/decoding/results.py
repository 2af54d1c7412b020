"""What decoding returns: scored hypotheses, and per sentence an n-best list."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

import torch

from ..tokenizer import EOS_ID


@dataclass
class Hypothesis:
    """One output sentence with its scores.

    ``tokens`` are the output ids without bos and eos.  ``token_logprobs[i]`` is
    the model's log-probability of output token ``i`` (temperature 1, no
    filtering, whatever the strategy); when the hypothesis ``finished`` with eos
    the list has one more entry, eos's, so ``len(token_logprobs)`` is the
    output length |Y| that the length penalty counts.  ``score`` is their sum
    (accumulated in float32, as the search did); ``normalized_score`` is
    ``score / lp(|Y|)`` with the GNMT penalty ``lp(Y) = ((5 + |Y|) / 6) ** alpha``
    and the config's ``length_penalty`` alpha, for *every* strategy, so greedy,
    beam and sampled outputs compare on one scale (alpha 0 gives the raw score).
    ``attention`` (on request) is the cross-attention, (layers, heads, T, S):
    T = ``len(token_logprobs)`` output steps, S = source tokens (its eos
    included, no padding); each row sums to 1.
    """

    text: str
    tokens: List[int]
    token_logprobs: List[float]
    score: float
    normalized_score: float
    attention: Optional[torch.Tensor] = None
    finished: bool = True  # False when the length cap stopped it before eos

    def __len__(self) -> int:
        return len(self.token_logprobs)


@dataclass
class TranslationResult:
    """The n-best list for one source sentence, best first."""

    source: str
    hypotheses: List[Hypothesis]
    source_pieces: List[str] = field(default_factory=list)  # source tokens as pieces (eos included): attention columns
    source_ids: List[int] = field(default_factory=list)  # the ids the model read (after any truncation)
    truncated: bool = False  # the source was longer than the model accepts and was cut

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]

    @property
    def text(self) -> str:
        return self.hypotheses[0].text if self.hypotheses else ""

    def target_pieces(self, tokenizer, rank: int = 0) -> List[str]:
        """Output tokens as pieces, eos included when finished: the attention rows."""
        hyp = self.hypotheses[rank]
        return tokenizer.pieces(hyp.tokens + ([EOS_ID] if hyp.finished else []), side="target")
