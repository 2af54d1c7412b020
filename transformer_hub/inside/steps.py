"""Decoding one step at a time, and teacher forcing against free running (sections 3.1 and 5.4 of the paper).

``step_by_step`` reads the decoder's choices off the library's own decoding calls: greedy decoding with
``return_alternatives=k`` (the k most likely next tokens at each step) and beam search with
``return_search=True`` (the beams kept at each step).  ``teacher_forcing`` scores a reference translation
in one teacher-forced pass (as in training) and puts it beside the model's free-running greedy output.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional

from ..decoding import generate
from ..decoding.results import SearchNode, SearchTrace
from .attention import _tokenizer, source_ids, teacher_forced

PRUNED_SHOWN = 3  # pruned candidates listed per beam-search step (the best ones)


@dataclass
class StepView:
    """Per output step t: ``top[t]``, greedy's k most likely next tokens as (id, piece, probability), most
    likely first; ``greedy_pieces[t]`` the token greedy takes (eos included when it finished); ``beams[t]``
    what beam search keeps, finishes and (the best ``PRUNED_SHOWN``) prunes at step t, each candidate as
    its pieces so far and total log-probability."""

    source_pieces: List[str]
    greedy: str
    greedy_pieces: List[str]
    top: List[List[tuple]]
    beam: str
    beam_size: int
    beams: List[Dict[str, List[Dict[str, Any]]]]

    @property
    def steps(self) -> int:
        return max(len(self.top), len(self.beams))

    def to_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "top": [[list(entry) for entry in step] for step in self.top], "steps": self.steps}


def step_by_step(model, text: str, src_lang: Optional[str] = None, tgt_lang: Optional[str] = None, k: int = 5,
                 beam_size: int = 4, max_length: Optional[int] = None) -> StepView:
    """Greedy's top-``k`` next tokens at each step and the beams beam search keeps (``beam_size``)."""
    tokenizer = _tokenizer(model)
    source_ids(model, text, src_lang, tgt_lang)  # the same checks and messages as the other views
    options = dict(src_lang=src_lang, tgt_lang=tgt_lang, max_length=max_length)
    greedy = generate(model, [text], strategy="greedy", return_alternatives=k, **options)[0]
    beam = generate(model, [text], strategy="beam", beam_size=beam_size, return_search=True, **options)[0]
    hyp = greedy.best
    top = [[(int(i), piece, float(p)) for (i, p), (piece, _) in zip(step, pieces)][:k]
           for step, pieces in zip(hyp.alternatives or [], hyp.alternative_pieces(tokenizer))]
    return StepView(source_pieces=greedy.source_pieces, greedy=hyp.text, greedy_pieces=greedy.target_pieces(tokenizer),
                    top=top, beam=beam.text, beam_size=beam_size, beams=_beam_steps(beam.search, tokenizer))


def _beam_steps(trace: Optional[SearchTrace], tokenizer) -> List[Dict[str, List[Dict[str, Any]]]]:
    def nodes(items: List[SearchNode]) -> List[Dict[str, Any]]:
        return [{"pieces": tokenizer.pieces(n.tokens, side="target"), "score": float(n.score), "parent": n.parent}
                for n in items]

    if trace is None:
        return []
    return [{"kept": nodes(s.beams), "finished": nodes(s.finished),
             "pruned": nodes(sorted(s.pruned, key=lambda n: -n.score)[:PRUNED_SHOWN])} for s in trace.steps]


@dataclass
class ForcingView:
    """Teacher forcing against free running for one sentence with a reference.

    ``reference_pieces``: the reference's tokens then eos; ``forced_probs[t]``: the probability of
    reference token t given the source and the reference's tokens before it (teacher forcing);
    ``forced_best[t]``: the piece the model ranks first there.  ``greedy_pieces`` / ``greedy_probs``: the
    free-running greedy output (eos included when it finished) and the probability of each of its tokens
    given its own earlier tokens.  ``leaves_at``: the first step where greedy's token is not the
    reference's (None when greedy reproduces the reference).
    """

    reference: str
    reference_pieces: List[str]
    forced_probs: List[float]
    forced_best: List[str]
    greedy: str
    greedy_pieces: List[str]
    greedy_probs: List[float]
    leaves_at: Optional[int]
    forced_logprob: float  # sum of the reference's log-probabilities (eos included)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def teacher_forcing(model, text: str, reference: str, src_lang: Optional[str] = None,
                    tgt_lang: Optional[str] = None) -> ForcingView:
    """Per-step probability of ``reference`` under teacher forcing, beside greedy decoding's free run."""
    tokenizer = _tokenizer(model)
    if not isinstance(reference, str) or not reference.strip():
        raise ValueError("the reference is empty: give the translation to teacher-force")
    src = source_ids(model, text, src_lang, tgt_lang)
    eos = model.config.eos_id
    ref = tokenizer.encode(reference, side="target")
    if len(ref) + 1 > model.config.max_len:
        raise ValueError(f"the reference has {len(ref) + 1} tokens, more than max_len={model.config.max_len}")
    log_probs, _ = teacher_forced(model, src, ref)
    ref_out = ref + [eos]
    forced = [float(log_probs[t, token]) for t, token in enumerate(ref_out)]
    greedy = generate(model, [text], strategy="greedy", src_lang=src_lang, tgt_lang=tgt_lang)[0]
    hyp = greedy.best
    greedy_out = hyp.tokens + ([eos] if hyp.finished else [])
    leaves = next((t for t, (a, b) in enumerate(zip(greedy_out, ref_out)) if a != b), None)
    if leaves is None and len(greedy_out) != len(ref_out):
        leaves = min(len(greedy_out), len(ref_out))
    return ForcingView(reference=reference, reference_pieces=tokenizer.pieces(ref_out, side="target"),
                       forced_probs=[math.exp(v) for v in forced],
                       forced_best=tokenizer.pieces(log_probs.argmax(dim=-1).tolist(), side="target"),
                       greedy=hyp.text, greedy_pieces=tokenizer.pieces(greedy_out, side="target"),
                       greedy_probs=[math.exp(v) for v in hyp.token_logprobs], leaves_at=leaves,
                       forced_logprob=sum(forced))
