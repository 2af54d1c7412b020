"""What decoding returns: scored hypotheses, and per sentence an n-best list."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import torch

from ..tokenizer import EOS_ID

# The mean-only unsure flag: the ``Hypothesis.confidence`` that flags 5 % of Multi30k val sentences
# (en<->de/fr/cs, 300 each, the multilingual model, beam 4), from ``python -m benchmarks text
# --parts confidence``.  The Space's flag also looks at the least likely word: ``decoding.words.doubt`` (docs/design.md).
CONFIDENCE_THRESHOLD = 0.58


@dataclass
class Hypothesis:
    """One output sentence with its scores.

    ``tokens`` are the output ids without bos and eos.  ``token_logprobs[i]`` is
    the model's log-probability of output token ``i`` (temperature 1, no
    filtering, whatever the strategy); when the hypothesis ``finished`` with eos
    the list has one more entry, eos's, so ``len(token_logprobs)`` is the
    output length |Y| that the length penalty counts.  ``score`` is their sum
    (accumulated in float64, as the search did); ``normalized_score`` is
    ``score / lp(|Y|)`` with the GNMT penalty ``lp(Y) = ((5 + |Y|) / 6) ** alpha``
    and the config's ``length_penalty`` alpha, for *every* strategy, so greedy,
    beam and sampled outputs compare on one scale (alpha 0 gives the raw score).
    ``attention`` (on request) is the cross-attention, (layers, heads, T, S):
    T = ``len(token_logprobs)`` output steps, S = source tokens (its eos
    included, no padding); each row sums to 1.  With a forced prefix the
    prefix's tokens are part of ``tokens`` and their log-probabilities count
    in the scores.  ``alternatives`` (on request, ``return_alternatives=K``):
    per output step (eos included), the K most likely ``(token_id,
    probability)`` pairs under the model's distribution at that step, most
    likely first, plus the emitted token where it was not among them; the
    emitted token's probability is ``exp`` of its ``token_logprobs`` entry.
    ``confidence`` is the mean of the output tokens' probabilities (eos included), 0..1.
    """

    text: str
    tokens: List[int]
    token_logprobs: List[float]
    score: float
    normalized_score: float
    attention: Optional[torch.Tensor] = None
    finished: bool = True  # False when the length cap stopped it before eos
    alternatives: Optional[List[List[Tuple[int, float]]]] = None
    constraints_met: Optional[List[bool]] = None  # with constraints: per phrase, whether this output contains it

    def alternative_pieces(self, tokenizer) -> List[List[Tuple[str, float]]]:
        """``alternatives`` with each id as its display piece."""
        return [[(p, prob) for p, (_, prob) in zip(tokenizer.pieces([i for i, _ in step], side="target"), step)]
                for step in self.alternatives or []]

    def __len__(self) -> int:
        return len(self.token_logprobs)

    @property
    def confidence(self) -> Optional[float]:
        """The mean probability of the output tokens (``exp`` of each ``token_logprobs``), 0..1; None if empty.

        Computed from the log-probabilities, so it always matches them (engines rewrite them after the
        search); ``transformer_hub.decoding.words.doubt`` adds the least likely word for the Space's unsure flag.
        """
        if not self.token_logprobs:
            return None
        # the arithmetic mean separated val sentences from word-shuffled ones better than the geometric mean,
        # the minimum or the length-normalised score (ROC AUC 0.81 / 0.79 / 0.66 / 0.75; docs/design.md)
        return math.fsum(math.exp(lp) for lp in self.token_logprobs) / len(self.token_logprobs)


class NBest(list):
    """A sentence's hypotheses, best first, as strategies return them; beam search may attach its ``search``."""

    search: Optional["SearchTrace"] = None


@dataclass
class TranslationResult:
    """The n-best list for one source sentence, best first."""

    source: str
    hypotheses: List[Hypothesis]
    source_pieces: List[str] = field(default_factory=list)  # source tokens as pieces (eos included): attention columns
    source_ids: List[int] = field(default_factory=list)  # the ids the model read (after any truncation)
    truncated: bool = False  # the source was longer than the model accepts and was cut
    search: Optional["SearchTrace"] = None  # beam search's steps, with ``return_search=True``
    src_lang: Optional[str] = None  # the source language: as given, the model's own, or detected (src_lang="auto")
    src_lang_confidence: Optional[float] = None  # the detection's probability among the candidates; None if given
    # the domain it was translated as (given, or classified: domain="auto"; a text's: that of most of its sentences,
    # each sentence's on its own result) and the domain classifier's probability of it (None if given)
    domain: Optional[str] = None
    domain_confidence: Optional[float] = None
    # with a calibrated domain classifier (``text.explained``): a sentence's evidence for the domain its words point
    # to most, and why it looks like none of the domains the models were trained on (a text's: any of its sentences)
    domain_evidence: Optional[float] = None
    unfamiliar: Optional[str] = None
    # split_sentences=True: each sentence's own result, in order (``text`` puts their best outputs in the layout)
    sentences: Optional[List["TranslationResult"]] = None
    # what the text pipeline (transformer_hub.text.pipeline) did: the model and engine that translated the text,
    # and why it came back unchanged when it did ("empty", "no words to translate", "already in German")
    model: Optional[str] = None
    engine: Optional[str] = None
    unchanged: Optional[str] = None
    layout: Optional[Any] = None  # the text pipeline's ``Segmented``: the segments decoded and the text between them
    constraints: List[str] = field(default_factory=list)  # the target phrases the output had to contain
    warnings: List[str] = field(default_factory=list)  # e.g. a constraint that could not fit the length budget
    glossary: List[Any] = field(default_factory=list)  # the glossary entries (``glossary.Entry``) that applied

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]

    @property
    def text(self) -> str:
        return self.hypotheses[0].text if self.hypotheses else ""

    @property
    def domain_counts(self) -> Dict[str, int]:
        """How many of its sentences were read as each domain (the text pipeline's ``domain="auto"`` tells each
        sentence's), most first (``domain``, the text's, first of equals); more than one: a text of mixed domains."""
        counts: Dict[str, int] = {}
        for result in self.sentences if self.sentences is not None else [self]:
            if result.domain is not None:
                counts[result.domain] = counts.get(result.domain, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0] != self.domain)))

    @property
    def mixed_domains(self) -> bool:
        """True when its sentences were read as more than one domain (each translated as its own)."""
        return len(self.domain_counts) > 1

    def target_pieces(self, tokenizer, rank: int = 0) -> List[str]:
        """Output tokens as pieces, eos included when finished: the attention rows."""
        hyp = self.hypotheses[rank]
        return tokenizer.pieces(hyp.tokens + ([EOS_ID] if hyp.finished else []), side="target")


@dataclass
class SearchNode:
    """One (beam, token) candidate of beam search: the output so far and its total log-probability."""

    tokens: List[int]  # output tokens so far, this node's token last (eos included when it ended there)
    parent: int  # index of the beam it extends in the previous step's ``beams``; -1 at step 0 (bos)
    score: float  # total log-probability of ``tokens``

    @property
    def token(self) -> int:
        return self.tokens[-1]


@dataclass
class SearchStep:
    """One step of one sentence's beam search."""

    beams: List[SearchNode]  # live after this step (at most k), in beam order: the next step's parents
    finished: List[SearchNode]  # candidates that became finished hypotheses (eos, or cut at the length cap)
    pruned: List[SearchNode]  # candidates ranked at this step and dropped


@dataclass
class SearchTrace:
    """Beam search as a tree: per step the live beams, the finished and the pruned candidates.

    Following ``parent`` from a node through the earlier steps' ``beams``
    gives its path; ``locate`` finds a returned hypothesis among the finished
    nodes.  ``to_dict`` gives plain JSON-able data.
    """

    steps: List[SearchStep] = field(default_factory=list)

    def locate(self, hyp: Hypothesis, eos_id: int) -> Optional[Tuple[int, int]]:
        """(step, index in that step's ``finished``) of the node that is ``hyp``; None if absent."""
        tokens = hyp.tokens + ([eos_id] if hyp.finished else [])
        for t, step in enumerate(self.steps):
            for i, node in enumerate(step.finished):
                if node.tokens == tokens and abs(node.score - hyp.score) <= 1e-6:
                    return t, i
        return None

    def path(self, step: int, node: SearchNode) -> List[SearchNode]:
        """The nodes from step 0 to ``node`` (at ``step``), following the parents."""
        path = [node]
        for t in range(step - 1, -1, -1):
            node = self.steps[t].beams[node.parent]
            path.append(node)
        return path[::-1]

    def to_dict(self) -> Dict[str, Any]:
        def nodes(items: List[SearchNode]) -> List[Dict[str, Any]]:
            return [{"tokens": n.tokens, "token": n.token, "parent": n.parent, "score": n.score} for n in items]

        return {"steps": [{"beams": nodes(s.beams), "finished": nodes(s.finished), "pruned": nodes(s.pruned)}
                          for s in self.steps]}
