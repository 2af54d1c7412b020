"""Forced scoring: log p(y | x) of given target strings under a model, teacher-forced, without any search.

``score_texts(model, sources, targets, src_lang=..., tgt_lang=...)`` tokenizes both sides as ``generate`` does
(a multilingual model gets its target-language tag where it reads it: before the source, or after bos in the
decoder), feeds each target after bos and its start tokens, and sums the log-probabilities of the target's
tokens and of eos.  ``score_ids`` does the same from ids.  Pairs are sorted by length and cut into batches of
``batch_size``; each batch is one encoder and one decoder pass.  The scores are the ones beam search reports:
``score`` is the float64 sum of float32 log-probabilities (eos included), ``normalized_score`` divides it by
the same GNMT length penalty ``lp(|Y|) = ((5 + |Y|) / 6) ** alpha`` with |Y| counting eos.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

import torch

from ..model import no_dropout
from ..model.kernels import Projection
from ..tokenizer import source_tags
from .batching import Budget, prepare_sources
from .config import DecodingConfig
from .config import length_penalty as penalty
from .engines import _device

DEFAULT_BATCH_SIZE = 64


@dataclass
class ForcedScore:
    """One target's log-probability given its source: ``token_logprobs`` has one entry per token, eos last."""

    score: float
    normalized_score: float
    token_logprobs: List[float]

    def __len__(self) -> int:
        return len(self.token_logprobs)


def source_ids(model, texts: Sequence[str], src_lang: Optional[str], tgt_lang: Optional[str],
               domain: Optional[str] = None) -> List[List[int]]:
    """Each source text as ``generate`` feeds it: its tags (``tokenizer.source_tags``), its pieces, eos."""
    _, target = model.config.check_pair(src_lang, tgt_lang)
    tokenizer = model.tokenizer
    tag = source_tags(tokenizer, model.config, target, domain)
    return [tag + tokenizer.encode(t, side="source") + [model.config.eos_id] for t in texts]


def score_texts(model, sources: Sequence[str], targets: Sequence[str], *, src_lang: Optional[str] = None,
                tgt_lang: Optional[str] = None, domain: Optional[str] = None, alpha: float = 0.6,
                batch_size: int = DEFAULT_BATCH_SIZE, too_long: str = "raise") -> List[Optional[ForcedScore]]:
    """log p(target | source) for each pair, through ``model.tokenizer``; see the module docstring.  ``domain``:
    the sources' domain tag for a model trained with domains (None: its default), as ``generate`` takes it.
    ``too_long="none"``: a pair whose target does not fit the model's decoder (``fits``) gets None instead of
    the ``ValueError`` ("raise")."""
    if too_long not in ("raise", "none"):
        raise ValueError(f"too_long must be 'raise' or 'none', got {too_long!r}")
    if isinstance(sources, str) or isinstance(targets, str):
        raise TypeError("sources and targets must be lists of strings")
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets: give one target per source")
    if getattr(model, "tokenizer", None) is None:
        raise ValueError("the model has no tokenizer attached (model.tokenizer is None); call score_ids with ids")
    src = source_ids(model, sources, src_lang, tgt_lang, domain)
    tgt = [model.tokenizer.encode(t, side="target") for t in targets]
    if too_long == "raise":
        return score_ids(model, src, tgt, alpha=alpha, batch_size=batch_size)
    kept = [i for i, ok in enumerate(fits(model, src, tgt)) if ok]
    budget = Budget(model)
    # where the target's room shrinks with the source (decoder-only), pairs are scored one by one, each as ``fits``
    # judged it alone (in a batch a longer source beside it would leave it less room)
    size = batch_size if budget(1) == budget(model.config.max_len) else 1
    out: List[Optional[ForcedScore]] = [None] * len(src)
    if kept:
        for i, got in zip(kept, score_ids(model, [src[i] for i in kept], [tgt[i] for i in kept], alpha=alpha,
                                          batch_size=size)):
            out[i] = got
    return out


def fits(model, sources: Sequence[List[int]], targets: Sequence[List[int]]) -> List[bool]:
    """Per pair of ids (as ``score_ids`` takes them), whether ``score_ids`` can score it alone: bos, a
    decoder-start tag and the target within ``model.target_budget`` beside the source as it truncates it (it
    raises for one that does not fit; a long source's text can be longer than the decoder reads, e.g. as a
    reverse score's target)."""
    budget = Budget(model)
    moved = 1 if getattr(model.config, "decoder_tags", False) else 0  # the tag the decoder reads after bos
    half = max(1, model.config.max_len // 2)
    out = []
    for s, t in zip(sources, targets):
        kept = min(len(s), budget.max_source(min(len(t) + 1, half)))  # ``prepare_sources``'s cut, for this pair
        out.append(1 + moved + len(t) <= budget(max(1, kept - moved)))
    return out


def score_ids(model, sources: Sequence[List[int]], targets: Sequence[List[int]], *, alpha: float = 0.6,
              batch_size: int = DEFAULT_BATCH_SIZE) -> List[ForcedScore]:
    """Score target ids (without bos and eos) given source ids (ending in eos, a multilingual tag first).

    With decoder-start tags (``tag_position == "decoder"``) a source's first id is moved after bos in the
    decoder, as decoding does.  A source longer than the model reads is truncated as ``generate`` truncates
    it (with its warning); a target longer than the model's positions raises ``ValueError``.
    """
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    sources, _, _ = prepare_sources(model, sources, DecodingConfig(max_len_offset=max(map(len, targets), default=0) + 1))
    order = sorted(range(len(sources)), key=lambda i: (-len(sources[i]), -len(targets[i])))
    out: List[Optional[ForcedScore]] = [None] * len(sources)
    with torch.inference_mode(), no_dropout():
        for start in range(0, len(order), batch_size):
            index = order[start: start + batch_size]
            for i, logprobs in zip(index, _score_batch(model, [sources[i] for i in index],
                                                       [targets[i] for i in index])):
                total = math.fsum(logprobs)
                out[i] = ForcedScore(total, total / penalty(len(logprobs), alpha), logprobs)
    return out


def _score_batch(model, sources: List[List[int]], targets: List[List[int]]) -> List[List[float]]:
    """Per pair, the log-probabilities of the target's tokens and eos: one encoder and one decoder pass."""
    cfg, device = model.config, _device(model)
    starts: List[List[int]] = [[] for _ in sources]
    if getattr(cfg, "decoder_tags", False):
        starts, sources = [ids[:1] for ids in sources], [ids[1:] for ids in sources]
    if any(not ids for ids in sources):
        raise ValueError("every source needs at least its eos")
    inputs = [[cfg.bos_id] + s + list(t) for s, t in zip(starts, targets)]
    wanted = [list(t) + [cfg.eos_id] for t in targets]
    src = _padded(sources, cfg.pad_id).to(device)
    state = model.encode(src)
    room = model.target_budget(state)
    longest = max(len(ids) for ids in inputs)
    if longest > room:
        raise ValueError(f"a target of {longest} decoder positions does not fit the model ({room} for this source)")
    out = model.decode(_padded(inputs, cfg.pad_id).to(device), state)
    first = len(starts[0])  # the position that predicts the first target token (all rows have the same starts)
    lengths = [len(w) for w in wanted]
    mask = torch.zeros(len(wanted), longest, dtype=torch.bool)
    for row, n in enumerate(lengths):
        mask[row, first: first + n] = True
    # only the scored positions go through the output layer (the beam's kernel): (tokens, V), not (B, T, V)
    log_probs = Projection()(out.generator, out.hidden[mask.to(device)])
    ids = torch.tensor([i for w in wanted for i in w], device=device)
    flat = log_probs.gather(1, ids[:, None])[:, 0].tolist()
    scores, at = [], 0
    for n in lengths:
        scores.append(flat[at: at + n])
        at += n
    return scores


def _padded(rows: List[List[int]], pad: int) -> torch.Tensor:
    out = torch.full((len(rows), max(len(r) for r in rows)), pad, dtype=torch.long)
    for i, ids in enumerate(rows):
        out[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return out
