"""Length budget, truncation, per-sentence caps and batches: what every engine decodes from.

Every sentence gets its own output cap (source length + ``max_len_offset``, ``max_length``, and what
the model's positions leave), computed before batching, so a sentence's cap does not depend on the
batch it lands in.  Batches are cut longest first, at ``batch_size`` sentences or ``BATCH_TOKENS`` tokens (beams
times padded source and output cap), and also where the padded length would leave a sentence less target room
than it has alone.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Callable, Iterable, Iterator, List, Optional, Set, Tuple

import torch

from ..model.cache import EncoderState
from .config import DecodingConfig
from .prefix import Prefix
from .results import Hypothesis

Rows = List[List[int]]
# tokens a batch holds at most (sentences x beams x (padded source + longest output cap)): a batch's memory is
# bounded whatever its sentences' lengths (128 long, out-of-domain sentences at beam 4 held gigabytes)
BATCH_TOKENS = 16_384
# decodes batches (id rows, their caps, their prefixes, their constraints) and yields each batch's hypotheses, in order
BatchMap = Callable[[List[Rows], List[List[int]], List[Optional[List[Optional[Prefix]]]], List[Optional[list]]],
                    Iterable[List[List[Hypothesis]]]]


def empty_hypothesis() -> Hypothesis:
    """What an empty source decodes to, without running the model."""
    return Hypothesis(text="", tokens=[], token_logprobs=[], score=0.0, normalized_score=0.0)


def _light_state(length: int, eos_id: int) -> EncoderState:
    """A memory-less state with one source of ``length`` tokens: enough to ask ``target_budget``."""
    src = torch.full((1, length), eos_id, dtype=torch.long)
    return EncoderState(src, torch.ones(1, length, dtype=torch.bool))


class Budget:
    """``model.target_budget`` as a function of the (padded) source length, memoised."""

    def __init__(self, model) -> None:
        self.model, self.eos, self.cache = model, model.config.eos_id, {}

    def __call__(self, length: int) -> int:
        if length not in self.cache:
            self.cache[length] = int(self.model.target_budget(_light_state(length, self.eos)))
        return self.cache[length]

    def max_source(self, room: int) -> int:
        """The longest source (<= max_len) that leaves ``room`` target positions (budget non-increasing in length)."""
        low, high = 1, self.model.config.max_len
        if self(high) >= room:
            return high
        while low < high:  # largest length with budget >= room
            mid = (low + high + 1) // 2
            if self(mid) >= room:
                low = mid
            else:
                high = mid - 1
        return low


def prepare_sources(model, sources: Rows, config: DecodingConfig) -> Tuple[Rows, List[int], Set[int]]:
    """Truncate over-long sources (one warning) and compute each sentence's output cap.

    Returns the sources as decoded, their caps (0 for an empty source), and the truncated indices.
    """
    sources = [list(map(int, ids)) for ids in sources]
    budget = Budget(model)
    eos = model.config.eos_id
    # target room a source must leave (only the decoder-only layout shares positions with the source)
    room = config.max_len_offset if config.max_length is None else min(config.max_len_offset, config.max_length)
    room = min(max(room, 1), max(1, model.config.max_len // 2))
    limit = budget.max_source(room)
    truncated = []
    for i, ids in enumerate(sources):
        if len(ids) > limit:
            keep_eos = ids[-1] == eos
            sources[i] = ids[: limit - 1] + [eos] if keep_eos and limit > 1 else ids[:limit]
            truncated.append(i)
    if truncated:
        warnings.warn(f"{len(truncated)} source sentence(s) longer than the model accepts were truncated to "
                      f"{limit} tokens (model max_len={model.config.max_len})", stacklevel=4)
    caps = []
    for ids in sources:
        cap = len(ids) + config.max_len_offset
        if config.max_length is not None:
            cap = min(cap, config.max_length)
        caps.append(max(1, min(cap, budget(len(ids))) if ids else 0))
    return sources, caps, set(truncated)


def plan_batches(model, sources: Rows, caps: List[int], size: int, rows_each: int = 1,
                 max_tokens: int = BATCH_TOKENS) -> List[List[int]]:
    """Indices of the non-empty sources, longest first, in batches of at most ``size`` sentences and at most
    ``max_tokens`` tokens: each sentence's ``rows_each`` rows (its beams) times the batch's padded source length
    plus its longest cap, what the decoder's cached keys and values grow with.

    A batch is also cut where its padded length would leave a sentence less target room than it has
    alone (the decoder-only layout shares max_len between source and target), so every sentence keeps its cap.
    """
    budget = Budget(model)
    order = sorted((i for i, ids in enumerate(sources) if ids), key=lambda i: -len(sources[i]))
    batches: List[List[int]] = []
    batch: List[int] = []
    longest_cap = 0
    for i in order:
        tokens = (len(batch) + 1) * rows_each * (len(sources[batch[0]]) + max(longest_cap, caps[i])) if batch else 0
        if batch and (len(batch) >= size or tokens > max_tokens or caps[i] > budget(len(sources[batch[0]]))):
            batches.append(batch)
            batch, longest_cap = [], 0
        batch.append(i)
        longest_cap = max(longest_cap, caps[i])
    return batches + [batch] if batch else batches


def with_seed(config: DecodingConfig) -> DecodingConfig:
    """Sampling without a seed draws one here, once per call: every batch of the call shares it."""
    if config.strategy == "sample" and config.seed is None:
        return config.replace(seed=int(torch.randint(0, 2 ** 62, (1,))))
    return config


@contextlib.contextmanager
def progress_bar(show: bool, total: int, desc: str) -> Iterator[Callable[[int], None]]:
    """A tqdm bar on stderr (``show``), or nothing; yields ``update(n)``."""
    if not show:
        yield lambda n: None
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, unit="sent", desc=desc, leave=False) as bar:
        yield bar.update


def decode_in_batches(model, sources: Rows, caps: List[int], config: DecodingConfig, map_batches: BatchMap,
                      progress: bool = False, prefixes: Optional[List[Optional[Prefix]]] = None,
                      desc: str = "decoding", constraints: Optional[list] = None) -> List[List[Hypothesis]]:
    """Plan the batches, hand them to ``map_batches`` and put the hypotheses back in input order.

    ``prefixes`` / ``constraints``: None, or one entry per source (None where it has none)."""
    results: List[List[Hypothesis]] = [[empty_hypothesis()] if not ids else [] for ids in sources]
    batches = plan_batches(model, sources, caps, config.batch_size,
                           rows_each=config.beam_size if config.strategy == "beam" else 1)
    rows = [[sources[i] for i in index] for index in batches]
    batch_caps = [[caps[i] for i in index] for index in batches]
    batch_prefixes = [[prefixes[i] for i in index] if prefixes else None for index in batches]
    batch_constraints = [[constraints[i] for i in index] if constraints else None for index in batches]
    with progress_bar(progress, sum(map(len, batches)), desc) as update:
        for index, hyps_of in zip(batches, map_batches(rows, batch_caps, batch_prefixes, batch_constraints)):
            for i, hyps in zip(index, hyps_of):
                results[i] = hyps
            update(len(index))
    return results
