"""Decoding strategies: greedy, beam search and sampling, registered by name.

A strategy is a function ``strategy(model, batch, config) -> list[list[Hypothesis]]``
registered in ``STRATEGIES``; it sees a padded, length-sorted :class:`Batch`
of source ids and may use only the model's decoding interface:
``model.encode``, ``model.decode`` (with a ``KVCache`` from ``model.new_cache``),
``cache.reorder``, ``state.index_select`` / ``state.repeat`` and ``model.target_budget`` (the
driver in ``api.py`` already folded the budget into ``batch.max_steps``).
So every layout and variant that implements that interface decodes, the
decoder-only layout and rotary positions included.

All strategies are batched: one decoder call per step for every sentence
still running, and finished sentences leave the batch (their rows are
dropped from the cache; greedy and sampling let finished rows ride along
until a quarter of the batch is done, so the cache is copied less often).
Batch independence, precisely: nothing in the decoding code depends on
the other sentences in the batch.  Padded source positions are masked,
each sentence has its own length cap, sampling draws its random numbers
from a per-sentence stream, and the output projection, max and top-k use
the same kernels for every row count (``kernels.py``; tested bit for bit
with exact hidden states).  What can still differ is inside the model:
PyTorch's CPU matrix products may sum in another order for another number
of rows, so a sentence's scores can differ in the last bits between batch
sizes, and where two tokens are that close the chosen token can differ.

Hypotheses come back with ``text=""`` and attention over the padded source;
the driver fills the text in and crops the attention.
"""
from __future__ import annotations

import hashlib
from typing import Dict, List, Optional, Tuple

import torch

from ..model.kernels import max_and_argmax
from .config import STRATEGIES, DecodingConfig
from .processors import Step
from .results import Hypothesis
from .stepper import Batch, Chooser, Stepper, alternatives_at, make_hypothesis, most_likely, processors_for

Tensor = torch.Tensor
NEG_INF = float("-inf")


class _Recorder:
    """Per-step (N, ...) tensors of the rows in the batch, kept in segments: rows leave the batch between them."""

    def __init__(self, rows: Tensor) -> None:
        self.rows, self.start, self.steps = rows, 0, {}
        self.segments: List[Tuple[Tensor, int, Dict[str, List[Tensor]]]] = []

    def record(self, **tensors: Optional[Tensor]) -> None:
        for name, value in tensors.items():
            if value is not None:
                self.steps.setdefault(name, []).append(value)

    def cut(self, rows: Tensor, start: int) -> None:
        """The rows in the batch from step ``start`` on are ``rows``."""
        self.segments.append((self.rows, self.start, self.steps))
        self.rows, self.start, self.steps = rows, start, {}

    def assemble(self, name: str, n_rows: int, horizon: int, fill: float, dtype=None) -> Optional[Tensor]:
        """(n_rows, horizon, ...) of one recorded name; steps after a row ended hold what it computed anyway."""
        out = None
        for rows, start, steps in self.segments + [(self.rows, self.start, self.steps)]:
            if not steps.get(name):
                continue
            block = torch.stack(steps[name], dim=1)  # (N, steps, ...)
            if out is None:
                out = torch.full((n_rows, horizon, *block.shape[2:]), fill, dtype=dtype or block.dtype,
                                 device=block.device)
            out[rows, start:start + block.size(1)] = block
        return out


class _SinglePath:
    """One token per row per step, ``copies`` rows per sentence; rows leave the batch when they end."""

    def __init__(self, model, batch: Batch, config: DecodingConfig, copies: int) -> None:
        cfg = model.config
        self.config, self.copies, self.eos, self.pad = config, copies, cfg.eos_id, cfg.pad_id
        self.n_rows, device = batch.size * copies, batch.src.device
        sentence_of = torch.arange(batch.size, device=device).repeat_interleave(copies)  # (R,)
        self.cap = batch.max_steps.to(device)[sentence_of]  # (R,) each row's length cap
        self.horizon, self.min_cap = int(self.cap.max()), int(self.cap.min())
        state = model.encode(batch.src)
        self.processors = processors_for(batch, config, self.eos, copies)
        self.stepper = Stepper(model, state.index_select(sentence_of) if copies > 1 else state, config.use_cache,
                               config.return_attention or self.processors.needs_attention)
        self.lengths = torch.zeros(self.n_rows, dtype=torch.long, device=device)
        self.rows = torch.arange(self.n_rows, device=device)  # the output row of each row in the batch
        self.alive = torch.ones(self.n_rows, dtype=torch.bool, device=device)  # rows still decoding
        self.seqs = batch.start_seqs(cfg.bos_id, sentence_of if copies > 1 else None)  # (R, 1 + start tokens)
        self.recorder = _Recorder(self.rows)

    def run(self, choose: Chooser) -> List[List[Hypothesis]]:
        for t in range(self.horizon):
            if self.step(t, choose):
                break
        return self.hypotheses()

    def step(self, t: int, choose: Chooser) -> bool:
        """Decode step ``t`` for the rows in the batch; True when every row has ended."""
        log_probs, att = self.stepper.step(self.seqs)
        alt = most_likely(log_probs, self.config.return_alternatives) if self.config.return_alternatives else None
        step = Step(t, lambda: (self.rows // self.copies).tolist(), att)
        self.processors(log_probs, step)
        tok, lp = choose(log_probs, t, self.rows)
        self.recorder.record(tok=tok, lp=lp, att=att, alt_lp=None if alt is None else alt[0],
                             alt_id=None if alt is None else alt[1])
        if self.processors:
            self.processors.follow(None, tok, step)
        self.seqs = torch.cat([self.seqs, tok[:, None]], dim=1)
        hit = tok == self.eos
        if t + 1 >= self.min_cap:
            hit |= self.cap <= t + 1
        ended = hit & self.alive
        if bool(ended.any()):
            self.lengths[self.rows[ended]] = t + 1
            self.alive &= ~ended
            n_alive = int(self.alive.sum())
            if n_alive == 0:
                return True
            # finished rows ride along until a quarter of the batch is dead: dropping rows copies the
            # whole cache, so it is done a few times per batch, not at every step where a row ends
            if 4 * n_alive <= 3 * self.alive.numel():
                self.drop_ended(t)
        return False

    def drop_ended(self, t: int) -> None:
        keep = self.alive.nonzero().squeeze(1)
        self.rows, self.seqs, self.cap, self.alive = self.rows[keep], self.seqs[keep], self.cap[keep], self.alive[keep]
        if self.processors:
            self.processors.follow(keep.tolist(), None, Step(t, lambda: (self.rows // self.copies).tolist()))
        self.min_cap = int(self.cap.min())
        self.recorder.cut(self.rows, t + 1)
        self.stepper.keep(keep)

    def hypotheses(self) -> List[List[Hypothesis]]:
        n, h, rec = self.n_rows, self.horizon, self.recorder
        tokens = rec.assemble("tok", n, h, self.pad).tolist()
        logprobs = rec.assemble("lp", n, h, 0.0)
        attention = rec.assemble("att", n, h, 0.0)  # (R, T, L, h, S)
        alt_lp, alt_id = rec.assemble("alt_lp", n, h, 0.0), rec.assemble("alt_id", n, h, 0)
        alt_lp, alt_id = (None, None) if alt_lp is None else (alt_lp.tolist(), alt_id.tolist())
        # scores summed in float64 in step order, so they match beam search's running sums exactly
        scores = logprobs.double().cumsum(dim=1).gather(1, (self.lengths - 1)[:, None]).squeeze(1).tolist()
        logprobs, lengths = logprobs.tolist(), self.lengths.tolist()
        out: List[List[Hypothesis]] = [[] for _ in range(n // self.copies)]
        for r in range(n):
            m, toks, lps = lengths[r], tokens[r], logprobs[r]
            finished = toks[m - 1] == self.eos
            alternatives = None if alt_lp is None else [
                alternatives_at(alt_lp[r][i], alt_id[r][i], toks[i], lps[i]) for i in range(m)]
            att = attention[r, :m].permute(1, 2, 0, 3) if attention is not None else None  # (L, h, T, S)
            out[r // self.copies].append(make_hypothesis(toks[: m - 1] if finished else toks[:m], lps[:m], scores[r],
                                                         finished, att, self.config.length_penalty, alternatives))
        for hyps in out:
            hyps.sort(key=lambda h: h.normalized_score, reverse=True)
        return out


def _argmax(log_probs: Tensor, t: int, rows: Tensor):
    best, tok = max_and_argmax(log_probs)
    return tok, best


@STRATEGIES.register("greedy")
def greedy(model, batch: Batch, config: DecodingConfig) -> List[List[Hypothesis]]:
    """The most probable next token at every step (beam search with one beam)."""
    return _SinglePath(model, batch, config, 1).run(_argmax)


# Sampling randomness: a counter-based stream per (seed, source, sample number), so a
# sentence draws the same tokens alone or in any batch.  Uses 32-bit integer mixing
# (murmur3's finaliser) in int64 tensors, multiplying in 16-bit halves so nothing overflows.
_M32 = 0xFFFFFFFF


def _mul32(x: Tensor, c: int) -> Tensor:
    """(x * c) mod 2^32 for x, c < 2^32, without int64 overflow."""
    return (((((x >> 16) * c) & 0xFFFF) << 16) + (x & 0xFFFF) * c) & _M32


def _mix32(x: Tensor) -> Tensor:
    x = x ^ (x >> 16)
    x = _mul32(x, 0x85EBCA6B)
    x = x ^ (x >> 13)
    x = _mul32(x, 0xC2B2AE35)
    return x ^ (x >> 16)


def stream_keys(src: Tensor, lengths: Tensor, seed: int, copies: int) -> Tensor:
    """(B * copies, 2) int64 keys in [0, 2^32): one random stream per sentence and sample."""
    keys = []
    for ids, n in zip(src.tolist(), lengths.tolist()):
        digest = hashlib.blake2b(repr((int(seed), ids[:n])).encode(), digest_size=8).digest()
        for j in range(copies):
            d = hashlib.blake2b(digest + j.to_bytes(4, "little"), digest_size=8).digest()
            keys.append([int.from_bytes(d[:4], "little"), int.from_bytes(d[4:], "little")])
    return torch.tensor(keys, dtype=torch.long, device=src.device)


def uniforms(keys: Tensor, step: int) -> Tensor:
    """(N, 2) keys -> (N,) float64 uniforms in [0, 1) for decoding step ``step``."""
    counter = _mix32((keys[:, 1] + (step * 0x9E3779B9 & _M32)) & _M32)
    return _mix32(keys[:, 0] ^ counter).double() / 2.0 ** 32


def filter_logits(logits: Tensor, temperature: float, top_k: int, top_p: float) -> Tensor:
    """Temperature, then top-k, then nucleus (top-p) filtering; removed tokens get -inf."""
    scores = logits / temperature
    if 0 < top_k < scores.size(-1):
        kth = scores.topk(top_k, dim=-1).values[:, -1:]
        scores = scores.masked_fill(scores < kth, NEG_INF)
    if top_p < 1.0:
        sorted_scores, order = scores.sort(dim=-1, descending=True)
        probs = sorted_scores.softmax(dim=-1)
        before = probs.cumsum(dim=-1) - probs  # mass of the tokens ranked above each one
        sorted_scores = sorted_scores.masked_fill(before >= top_p, NEG_INF)  # the top token always stays
        scores = torch.full_like(scores, NEG_INF).scatter(1, order, sorted_scores)
    return scores


@STRATEGIES.register("sample")
def sample(model, batch: Batch, config: DecodingConfig) -> List[List[Hypothesis]]:
    """Ancestral sampling with temperature / top-k / top-p; ``n_best`` samples per sentence, best first.

    The random numbers come from a counter-based stream keyed by (seed, source
    ids, sample number), not from one shared ``torch.Generator``: so the same
    seed gives the same samples for a sentence whatever batch it is in, and
    different seeds give different samples.  Token log-probabilities and
    scores are the model's own (temperature 1, unfiltered).
    """
    keys = stream_keys(batch.src, batch.lengths, batch.seed, config.n_best)

    def choose(log_probs: Tensor, t: int, rows: Tensor):
        probs = filter_logits(log_probs, config.temperature, config.top_k, config.top_p).softmax(dim=-1)
        cdf = probs.double().cumsum(dim=-1)  # (N, V)
        u = uniforms(keys[rows], t) * cdf[:, -1]
        tok = torch.searchsorted(cdf, u[:, None], right=True).squeeze(1).clamp(max=probs.size(-1) - 1)
        return tok, log_probs.gather(1, tok[:, None]).squeeze(1)

    return _SinglePath(model, batch, config, config.n_best).run(choose)

