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
Nothing depends on the other sentences in the batch: padded source
positions are masked, each sentence has its own length cap, and sampling
draws its random numbers from a per-sentence stream.

Hypotheses come back with ``text=""`` and attention over the padded source;
the driver fills the text in and crops the attention.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import torch

from ..registry import Registry
from .config import DecodingConfig, length_penalty
from .results import Hypothesis
from .vocab import Projection, max_and_argmax, topk

Tensor = torch.Tensor
STRATEGIES: Registry = Registry("decoding strategy")
NEG_INF = float("-inf")


@dataclass
class Batch:
    """A padded batch of sources, as strategies receive it."""

    src: Tensor  # (B, S) source ids, each ending in eos, right-padded with pad_id
    lengths: Tensor  # (B,) real tokens per source (eos included)
    max_steps: Tensor  # (B,) the most output tokens (eos included) each sentence may produce
    seed: int = 0  # sampling: the seed every sentence's random stream starts from

    @property
    def size(self) -> int:
        return self.src.size(0)


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

        The log-probs live in a buffer that the next step overwrites (see ``vocab.Projection``).
        """
        if self.cache is not None:
            out = self.model.decode(seqs[:, -1:], self.state, self.cache, need_weights=self.need_weights)
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


def make_hypothesis(tokens: List[int], logprobs: List[float], score: float, finished: bool,
                    attention: Optional[Tensor], alpha: float) -> Hypothesis:
    """``tokens`` exclude eos; ``logprobs`` include eos's when ``finished``."""
    return Hypothesis(text="", tokens=tokens, token_logprobs=logprobs, score=score,
                      normalized_score=score / length_penalty(len(logprobs), alpha),
                      attention=attention, finished=finished)


# --------------------------------------------------------------------------- greedy and sampling
# (log-probs, step, rows) -> (tokens (N,) or (N, c), their log-probs); may overwrite the log-probs
Chooser = Callable[[Tensor, int, Optional[Tensor]], Tuple[Tensor, Tensor]]


def _next_tokens(log_probs: Tensor, t: int, rows: Optional[Tensor], choose: Chooser, eos: int, min_len: int):
    """A chooser's tokens, (N,) or (N, c), and their log-probabilities under the model; used by every strategy.

    Before ``min_len`` tokens eos is blocked: it cannot be chosen, and the
    other tokens keep the log-probabilities of the model's distribution."""
    if t < min_len:
        log_probs[:, eos] = NEG_INF
    return choose(log_probs, t, rows)


def _single_path(model, batch: Batch, config: DecodingConfig, copies: int, choose: Chooser) -> List[List[Hypothesis]]:
    """One token per row per step, ``copies`` rows per sentence; rows leave the batch when they end."""
    cfg = model.config
    bos, eos, pad = cfg.bos_id, cfg.eos_id, cfg.pad_id
    device = batch.src.device
    n_rows = batch.size * copies
    sentence_of = torch.arange(batch.size, device=device).repeat_interleave(copies)  # (R,)
    cap = batch.max_steps.to(device)[sentence_of]  # (R,) each row's length cap
    horizon, min_cap = int(cap.max()), int(cap.min())
    state = model.encode(batch.src)
    if copies > 1:
        state = state.index_select(sentence_of)
    stepper = Stepper(model, state, config.use_cache, config.return_attention)

    lengths = torch.zeros(n_rows, dtype=torch.long, device=device)
    rows = torch.arange(n_rows, device=device)  # the output row of each row in the batch
    alive = torch.ones(n_rows, dtype=torch.bool, device=device)  # rows still decoding
    seqs = torch.full((n_rows, 1), bos, dtype=torch.long, device=device)
    # per step: tokens, log-probs (and attention) of the rows in the batch; a segment ends when rows leave
    segments: List[Tuple[Tensor, int, List[Tensor], List[Tensor], List[Tensor]]] = []
    toks: List[Tensor] = []
    lps: List[Tensor] = []
    atts: List[Tensor] = []
    start = 0
    for t in range(horizon):
        log_probs, att = stepper.step(seqs)
        tok, lp = _next_tokens(log_probs, t, rows, choose, eos, config.min_len)
        toks.append(tok)
        lps.append(lp)
        if att is not None:
            atts.append(att)
        seqs = torch.cat([seqs, tok[:, None]], dim=1)
        hit = tok == eos
        if t + 1 >= min_cap:
            hit |= cap <= t + 1
        ended = hit & alive
        if bool(ended.any()):
            lengths[rows[ended]] = t + 1
            alive &= ~ended
            n_alive = int(alive.sum())
            if n_alive == 0:
                break
            # finished rows ride along until a quarter of the batch is dead: dropping rows copies the
            # whole cache, so it is done a few times per batch, not at every step where a row ends
            if 4 * n_alive <= 3 * alive.numel():
                segments.append((rows, start, toks, lps, atts))
                toks, lps, atts, start = [], [], [], t + 1
                keep = alive.nonzero().squeeze(1)
                rows, seqs, cap, alive = rows[keep], seqs[keep], cap[keep], alive[keep]
                min_cap = int(cap.min())
                stepper.keep(keep)
    segments.append((rows, start, toks, lps, atts))

    tokens = torch.full((n_rows, horizon), pad, dtype=torch.long, device=device)
    logprobs = torch.zeros(n_rows, horizon, device=device)
    attention = None
    for seg_rows, seg_start, seg_toks, seg_lps, seg_atts in segments:
        if not seg_toks:
            continue
        end = seg_start + len(seg_toks)
        tokens[seg_rows, seg_start:end] = torch.stack(seg_toks, dim=1)  # finished rows wrote past their length
        logprobs[seg_rows, seg_start:end] = torch.stack(seg_lps, dim=1)
        if seg_atts:
            if attention is None:
                attention = torch.zeros(n_rows, *seg_atts[0].shape[1:3], horizon, seg_atts[0].size(-1), device=device)
            attention[seg_rows, :, :, seg_start:end] = torch.stack(seg_atts, dim=3)
    # scores summed in float64 in step order, so they match beam search's running sums exactly
    final_score = logprobs.double().cumsum(dim=1).gather(1, (lengths - 1)[:, None]).squeeze(1)
    tokens_l, logprobs_l = tokens.tolist(), logprobs.tolist()
    scores_l, lengths_l = final_score.tolist(), lengths.tolist()
    out: List[List[Hypothesis]] = [[] for _ in range(batch.size)]
    for r in range(n_rows):
        n = lengths_l[r]
        finished = tokens_l[r][n - 1] == eos
        toks_r = tokens_l[r][: n - 1] if finished else tokens_l[r][:n]
        att_r = attention[r, :, :, :n] if attention is not None else None
        out[r // copies].append(make_hypothesis(toks_r, logprobs_l[r][:n], scores_l[r], finished, att_r,
                                                config.length_penalty))
    for hyps in out:
        hyps.sort(key=lambda h: h.normalized_score, reverse=True)
    return out


def _argmax(log_probs: Tensor, t: int, rows: Tensor):
    best, tok = max_and_argmax(log_probs)
    return tok, best


@STRATEGIES.register("greedy")
def greedy(model, batch: Batch, config: DecodingConfig) -> List[List[Hypothesis]]:
    """The most probable next token at every step (beam search with one beam)."""
    return _single_path(model, batch, config, 1, _argmax)


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

    return _single_path(model, batch, config, config.n_best, choose)


# --------------------------------------------------------------------------- beam search
@STRATEGIES.register("beam")
def beam(model, batch: Batch, config: DecodingConfig) -> List[List[Hypothesis]]:
    """Batched beam search over B * k rows (the paper: k = 4, alpha = 0.6).

    Each step every live beam proposes its best continuations; the 2k best
    (beam, token) pairs per sentence are ranked by total log-probability.  A
    pair ending in eos among the first k is a finished hypothesis; the k best
    pairs that do not end in eos become the next beams (cache rows reordered to
    follow them).  A sentence is done at its length cap (where the k best pairs
    are taken as they are, unfinished), or once it has k finished hypotheses
    and its best live beam, normalised at its current length, scores no better
    than the k-th of them (the "heuristic" stopping rule of ``transformers``).
    Finished hypotheses are ranked by ``score / lp(|Y|)``; the best ``n_best``
    are returned.  With k = 1 this is exactly greedy decoding: the first eos
    outranks the live beam of the same length.

    Beam search is a heuristic: per sentence it usually, not always, scores at
    least as well as greedy (greedy's path can fall off the beam); with a beam
    wide enough to prune nothing it is exact search (see the tests).
    """
    cfg = model.config
    bos, eos = cfg.bos_id, cfg.eos_id
    k, alpha = config.beam_size, config.length_penalty
    device = batch.src.device
    state = model.encode(batch.src).repeat(k)  # the k beams of a sentence share its encoder output
    stepper = Stepper(model, state, config.use_cache, config.return_attention)

    # The ranking runs on tensors; the rest of a step's bookkeeping touches a few numbers per sentence, so it
    # is plain Python (as ~40 tiny tensor operations it took ~5% more of a one-sentence step). Per live sentence:
    caps = batch.max_steps.tolist()  # length caps
    sentence = list(range(batch.size))  # original index
    beam_scores = [[0.0] + [NEG_INF] * (k - 1) for _ in sentence]  # float64 sums; step 0 expands beam 0 only
    n_finished = [0] * batch.size
    kth_finished = [NEG_INF] * batch.size  # the k-th best finished score, normalised
    # Per row (k rows per live sentence, in order): tokens after bos and their log-probs.
    prefixes: List[List[int]] = [[] for _ in range(batch.size * k)]
    prefix_lps: List[List[float]] = [[] for _ in range(batch.size * k)]
    history_att: Optional[Tensor] = None
    finished: List[List[Hypothesis]] = [[] for _ in range(batch.size)]
    seqs = torch.full((batch.size * k, 1), bos, dtype=torch.long, device=device)

    def best_tokens(log_probs: Tensor, t: int, rows: Optional[Tensor]):
        values, tokens = topk(log_probs, per_beam)
        return tokens, values

    for t in range(max(caps)):
        log_probs, att = stepper.step(seqs)
        n, V = len(sentence), log_probs.size(-1)
        # a sentence's 2k best (beam, token) pairs are among each beam's own 2k best tokens
        per_beam = min(2 * k, V)
        n_cand = min(2 * k, k * per_beam)
        top_tok, top_lp = _next_tokens(log_probs, t, None, best_tokens, eos, config.min_len)  # (n * k, per_beam)
        sums = torch.tensor(beam_scores, dtype=torch.float64, device=device).view(-1, 1)
        cand_scores, cand_index = (sums + top_lp.double()).view(n, -1).topk(n_cand, dim=1)  # (n, 2k), best first
        cand_tok = top_tok.view(n, -1).gather(1, cand_index).tolist()
        cand_lp = top_lp.view(n, -1).gather(1, cand_index).tolist()
        cand_scores, cand_index = cand_scores.tolist(), cand_index.tolist()
        penalty = length_penalty(t + 1, alpha)
        full_att = None
        live: List[int] = []
        rows: List[int] = []
        next_tokens: List[int] = []
        next_lps: List[float] = []
        for b in range(n):
            scores, toks, lps = cand_scores[b], cand_tok[b], cand_lp[b]
            beams = [b * k + i // per_beam for i in cand_index[b]]  # the row each pair extends
            at_cap = caps[b] <= t + 1
            # among the k best pairs, those ending in eos (all of them at the cap) are finished hypotheses
            hits = [c for c in range(k) if scores[c] > NEG_INF and (toks[c] == eos or at_cap)]
            if hits and att is not None and full_att is None:  # (rows, L, h, t + 1, S)
                full_att = att.unsqueeze(3) if history_att is None else torch.cat([history_att, att.unsqueeze(3)], 3)
            for c in hits:
                row, ended = beams[c], toks[c] == eos
                finished[sentence[b]].append(make_hypothesis(
                    prefixes[row] if ended else prefixes[row] + [toks[c]], prefix_lps[row] + [lps[c]], scores[c],
                    ended, full_att[row] if att is not None else None, alpha))
            if hits:
                n_finished[b] += len(hits)
                ranked = sorted((h.normalized_score for h in finished[sentence[b]]), reverse=True)
                kth_finished[b] = ranked[k - 1] if len(ranked) >= k else NEG_INF
            # done: at the cap, or k finished hypotheses that the best live beam, normalised at its
            # current length, cannot beat (with k = 1 that is the first eos: exactly greedy)
            best_live = max((x for x, tok in zip(scores, toks) if tok != eos), default=NEG_INF) / penalty
            if at_cap or (n_finished[b] >= k and best_live <= kth_finished[b]):
                continue
            # the next beams: the k best pairs that do not end in eos (at most k of the 2k do)
            picked = ([c for c in range(n_cand) if toks[c] != eos] + [c for c in range(n_cand) if toks[c] == eos])[:k]
            live.append(b)
            beam_scores[b] = [scores[c] for c in picked]
            rows += [beams[c] for c in picked]
            next_tokens += [toks[c] for c in picked]
            next_lps += [lps[c] for c in picked]
        if not live:
            break
        if len(live) < n:  # whole sentences leave
            sentence, caps, beam_scores, n_finished, kth_finished = (
                [values[b] for b in live] for values in (sentence, caps, beam_scores, n_finished, kth_finished))
        prefixes = [prefixes[row] + [tok] for row, tok in zip(rows, next_tokens)]
        prefix_lps = [prefix_lps[row] + [lp] for row, lp in zip(rows, next_lps)]
        index = torch.tensor(rows, device=device)
        seqs = torch.tensor(next_tokens, device=device).view(-1, 1)
        if stepper.cache is None:  # the reference path re-decodes whole prefixes
            seqs = torch.tensor([[bos] + p for p in prefixes], dtype=torch.long, device=device)
        if att is not None:
            step_att = att[index].unsqueeze(3)
            history_att = step_att if history_att is None else torch.cat([history_att[index], step_att], dim=3)
        # beams move within their sentence: the encoder state changes only when sentences leave
        if len(live) < n:
            stepper.keep(index, torch.tensor(live, device=device))
        elif rows != list(range(len(rows))):  # (often nothing moves: then the cache stays as it is)
            stepper.keep(index, state_stays=True)

    results = []
    for hyps in finished:
        hyps.sort(key=lambda h: h.normalized_score, reverse=True)
        results.append(hyps[: config.n_best])
    return results
