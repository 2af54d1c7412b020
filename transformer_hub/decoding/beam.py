"""Beam search, batched over B sentences x k beams (the paper: k = 4, alpha = 0.6).

Each step every live beam proposes its best continuations; a sentence's 2k
best (beam, token) pairs are ranked by total log-probability.  A pair
ending in eos among the first k is a finished hypothesis (kept by the
sentence's ``FinishedHypotheses``, which holds the k best); the k best pairs
that do not end in eos become the next beams (cache rows reordered to follow
them).  At its length cap a sentence takes its k best pairs as they are,
unfinished.  Otherwise it stops by the ``early_stopping`` rule (see
``hypotheses.py``): by default the heuristic of ``transformers``, which may
stop while a live beam could still win under a length penalty; ``"never"``
stops only when no live beam can.  The best ``n_best`` finished hypotheses
are returned, ranked by ``score / lp(|Y|)``.  With k = 1 this is greedy
decoding: the first eos outranks the live beam of the same length.

Beam search is a heuristic: per sentence it usually, not always, scores at
least as well as greedy (greedy's path can fall off the beam).  With
``early_stopping="never"`` and a beam wide enough to prune nothing it is
exact search (see the tests).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import torch

from ..model.kernels import topk
from .config import STRATEGIES, DecodingConfig
from .constraints import BeamAllocation
from .hypotheses import FinishedHypotheses
from .processors import Step
from .results import Hypothesis, NBest, SearchNode, SearchStep, SearchTrace
from .stepper import Batch, Stepper, alternatives_at, make_hypothesis, most_likely, processors_for

Tensor = torch.Tensor
NEG_INF = float("-inf")


@dataclass
class _Candidates:
    """One sentence's ranked (beam, token) pairs at one step, best first."""

    scores: List[float]  # total log-probabilities (float64 sums)
    tokens: List[int]
    logprobs: List[float]  # the token's own log-probability
    beams: List[int]  # the row each pair extends
    banks: Optional[List[int]] = None  # with constraints: each pair's bank (constraint tokens met)


@dataclass
class _Rows:
    """Per row (k per live sentence, in order): the output so far and what it carries along."""

    tokens: List[List[int]]
    logprobs: List[List[float]]
    alternatives: List[list]  # per row, per step: (ids, log-probs) of the most likely tokens

    def follow(self, rows: List[int], tokens: List[int], logprobs: List[float], alternatives) -> "_Rows":
        """The next beams: row ``rows[i]`` extended by ``tokens[i]``."""
        return _Rows([self.tokens[r] + [tok] for r, tok in zip(rows, tokens)],
                     [self.logprobs[r] + [lp] for r, lp in zip(rows, logprobs)],
                     [self.alternatives[r] + [alternatives[r]] for r in rows] if alternatives else self.alternatives)


@STRATEGIES.register("beam")
def beam(model, batch: Batch, config: DecodingConfig) -> List[List[Hypothesis]]:
    """Batched beam search (see the module docstring); ``return_search`` records each sentence's steps."""
    return BeamSearch(model, batch, config).run()


class BeamSearch:
    """The state of one batch's beam search; ``run`` decodes it."""

    def __init__(self, model, batch: Batch, config: DecodingConfig) -> None:
        cfg = model.config
        self.config, self.bos, self.eos, self.k = config, cfg.bos_id, cfg.eos_id, config.beam_size
        self.device, k, n = batch.src.device, config.beam_size, batch.size
        state = model.encode(batch.src).repeat(k)  # the k beams of a sentence share its encoder output
        self.allocation = BeamAllocation(batch.constraints, k, self.device) if batch.constraints else None
        self.processors = processors_for(batch, config, self.eos, k, self.allocation)
        need_weights = config.return_attention or self.processors.needs_attention  # anchored terms read attention
        self.stepper = Stepper(model, state, config.use_cache, need_weights)
        # Ranking runs on tensors; the rest of a step's bookkeeping touches a few numbers per sentence, so it
        # is plain Python.  Per live sentence:
        self.caps = batch.max_steps.tolist()  # length caps
        self.sentence = list(range(n))  # original index
        self.beam_scores = [[0.0] + [NEG_INF] * (k - 1) for _ in range(n)]  # float64 sums; step 0 expands beam 0
        self.finished = [FinishedHypotheses(k, config.length_penalty, config.early_stopping, cap) for cap in self.caps]
        self.results = list(self.finished)  # by original index (``finished`` follows the live sentences)
        self.traces = [SearchTrace() for _ in range(n)] if config.return_search else None
        self.rows = _Rows([[] for _ in range(n * k)], [[] for _ in range(n * k)], [[] for _ in range(n * k)])
        self.history_att: Optional[Tensor] = None  # (rows, L, h, t, S)
        start = batch.start_seqs(self.bos)  # bos and any start tokens (a decoder-start tag), per sentence
        self.starts = start.tolist()
        self.seqs = start.repeat_interleave(k, dim=0)

    def run(self) -> List[List[Hypothesis]]:
        for t in range(max(self.caps)):
            if not self.step(t):
                break
        out = [NBest(finished.best(self.config.n_best)) for finished in self.results]
        for nbest, trace in zip(out, self.traces or []):
            nbest.search = trace
        return out

    def step(self, t: int) -> bool:
        """Decode step ``t``; False when every sentence is done."""
        log_probs, step_att = self.stepper.step(self.seqs)
        att = step_att if self.config.return_attention else None  # what the hypotheses carry
        K = self.config.return_alternatives
        alternatives = None
        if K:  # the model's distribution, before any masking
            values, ids = most_likely(log_probs, K)
            alternatives = list(zip(ids.tolist(), values.tolist()))
        self.processors(log_probs, Step(t, lambda: [self.sentence[r // self.k] for r in range(log_probs.size(0))],
                                        step_att))
        ranked = self.rank(log_probs)
        if self.allocation is not None:
            ranked = self.allocation.extend(ranked, log_probs, self.sentence, self.beam_scores, self.eos,
                                            self.row_best)
        full_att = None
        if att is not None:  # the attention history including this step, for hypotheses finishing now
            full_att = att.unsqueeze(3) if self.history_att is None else torch.cat(
                [self.history_att, att.unsqueeze(3)], 3)
        live, rows, tokens, logprobs = [], [], [], []
        for b, cands in enumerate(ranked):
            picked = self.sentence_step(b, t, cands, full_att, alternatives)
            if picked is not None:
                live.append(b)
                self.beam_scores[b] = [cands.scores[c] for c in picked]
                rows += [cands.beams[c] for c in picked]
                tokens += [cands.tokens[c] for c in picked]
                logprobs += [cands.logprobs[c] for c in picked]
        if not live:
            return False
        self.advance(t, live, rows, tokens, logprobs, att, alternatives)
        return True

    def rank(self, log_probs: Tensor) -> List[_Candidates]:
        """Each live sentence's 2k best (beam, token) pairs, best first."""
        k, n, V = self.k, len(self.sentence), log_probs.size(-1)
        per_beam = min(2 * k, V)  # a sentence's 2k best pairs are among each beam's own 2k best tokens
        n_cand = min(2 * k, k * per_beam)
        top_lp, top_tok = topk(log_probs, per_beam)
        self.row_best = top_tok[:, 0]  # each row's most likely token (constrained search proposes it)
        sums = torch.tensor(self.beam_scores, dtype=torch.float64, device=self.device).view(-1, 1)
        scores, index = (sums + top_lp.double()).view(n, -1).topk(n_cand, dim=1)  # (n, 2k), best first
        tokens = top_tok.view(n, -1).gather(1, index).tolist()
        logprobs = top_lp.view(n, -1).gather(1, index).tolist()
        scores, index = scores.tolist(), index.tolist()
        return [_Candidates(scores[b], tokens[b], logprobs[b], [b * k + i // per_beam for i in index[b]])
                for b in range(n)]

    def sentence_step(self, b: int, t: int, cands: _Candidates, full_att: Optional[Tensor],
                      alternatives) -> Optional[List[int]]:
        """Record sentence ``b``'s finished pairs; return the candidates that become its beams (None: done)."""
        k, eos = self.k, self.eos
        at_cap = self.caps[b] <= t + 1
        # among the k best pairs, those ending in eos (all of them at the cap) are finished hypotheses
        hits = [c for c in range(k) if cands.scores[c] > NEG_INF and (cands.tokens[c] == eos or at_cap)]
        finished = self.finished[b]
        if self.allocation is not None:
            hits = self.allocation.finishing(self.sentence[b], cands, hits, at_cap, len(finished) > 0, eos)
        for c in hits:
            finished.add(self.hypothesis(cands, c, full_att, alternatives))
        live = [c for c in range(len(cands.tokens)) if cands.tokens[c] != eos]
        if self.allocation is not None:  # with constraints only the beams that met them all can end
            live = self.allocation.complete(self.sentence[b], cands, live)
        best_live = max((cands.scores[c] for c in live), default=NEG_INF)
        done = at_cap or finished.is_done(best_live, t + 1)
        picked = None
        if not done:  # the next beams: the k best pairs that do not end in eos (at most k of the 2k do)
            n_cand = len(cands.tokens)
            picked = ([c for c in range(n_cand) if cands.tokens[c] != eos]
                      + [c for c in range(n_cand) if cands.tokens[c] == eos])[:k]
        if self.traces is not None:
            self.trace(b, cands, hits, picked or [])
        return picked

    def hypothesis(self, cands: _Candidates, c: int, full_att: Optional[Tensor], alternatives) -> Hypothesis:
        row, token, ended = cands.beams[c], cands.tokens[c], cands.tokens[c] == self.eos
        tokens = self.rows.tokens[row] + [token]
        logprobs = self.rows.logprobs[row] + [cands.logprobs[c]]
        alts = None
        if alternatives is not None:
            steps = self.rows.alternatives[row] + [alternatives[row]]
            alts = [alternatives_at(lps, ids, tok, lp) for (ids, lps), tok, lp in zip(steps, tokens, logprobs)]
        hyp = make_hypothesis(tokens[:-1] if ended else tokens, logprobs, cands.scores[c], ended,
                              full_att[row] if full_att is not None else None, self.config.length_penalty, alts)
        if self.allocation is not None:
            hyp.constraints_met = self.allocation.met(self.sentence[row // self.k], row, token, self.eos)
        return hyp

    def trace(self, b: int, cands: _Candidates, hits: List[int], picked: List[int]) -> None:
        """Add this step of sentence ``b`` to its search trace (candidates with a -inf score are left out)."""
        def node(c: int) -> SearchNode:
            row = cands.beams[c]
            parent = row - b * self.k if self.rows.tokens[row] else -1  # step 0 extends bos
            return SearchNode(self.rows.tokens[row] + [cands.tokens[c]], parent, cands.scores[c])

        real = [c for c in range(len(cands.tokens)) if cands.scores[c] > NEG_INF]
        kept = set(hits) | set(picked)
        self.traces[self.sentence[b]].steps.append(SearchStep(
            beams=[node(c) for c in picked if cands.scores[c] > NEG_INF], finished=[node(c) for c in hits],
            pruned=[node(c) for c in real if c not in kept]))

    def advance(self, t: int, live: List[int], rows: List[int], tokens: List[int], logprobs: List[float],
                att: Optional[Tensor], alternatives) -> None:
        """Move to the next beams: drop finished sentences, reorder rows and the cache."""
        n = len(self.sentence)
        if len(live) < n:  # whole sentences leave
            self.sentence, self.caps, self.beam_scores, self.finished = (
                [values[b] for b in live] for values in (self.sentence, self.caps, self.beam_scores, self.finished))
        sentences = [self.sentence[i // self.k] for i in range(len(rows))]
        self.processors.follow(rows, tokens, Step(t, lambda: sentences))
        self.rows = self.rows.follow(rows, tokens, logprobs, alternatives)
        index = torch.tensor(rows, device=self.device)
        self.seqs = torch.tensor(tokens, device=self.device).view(-1, 1)
        if self.stepper.cache is None:  # the reference path re-decodes whole prefixes
            self.seqs = torch.tensor([self.starts[s] + p for s, p in zip(sentences, self.rows.tokens)],
                                     dtype=torch.long, device=self.device)
        if att is not None:
            step_att = att[index].unsqueeze(3)
            self.history_att = step_att if self.history_att is None else torch.cat(
                [self.history_att[index], step_att], dim=3)
        # beams move within their sentence: the encoder state changes only when sentences leave
        if len(live) < n:
            self.stepper.keep(index, torch.tensor(live, device=self.device))
        elif rows != list(range(len(rows))):  # (often nothing moves: then the cache stays as it is)
            self.stepper.keep(index, state_stays=True)
