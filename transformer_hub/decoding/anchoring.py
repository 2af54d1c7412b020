"""Glossary terms anchored to their source words: a term replaces the translation of its source term.

Plain lexically constrained search only knows that "Velo" must appear somewhere: it may start the sentence
with it, or put it where "Mann" belonged, and the model still writes "Fahrrad" for "bicycle" beside it.  A
glossary entry says more, as DeepL's glossaries do: "bicycle" is to be translated as "Velo".  So each
:class:`~.constraints.Term` is anchored (``constraints.Anchoring``, ``generate(..., anchoring=)``), in up to
three passes over the sentences that have terms:

1. plain beam search with cross-attention; per term, :func:`~.alignment.usual_translation` reads off the
   words the model wrote while attending to the term's source words ("Fahrrad"), at every occurrence of them;
   a term is not anchored where there is nothing to replace: the model already wrote it (also elided, as in
   "l'accordéon"; else only its article would be pushed down), or no word it wrote attends to the term;
2. constrained beam search where a term may start only at steps whose attention puts the ``gate`` on its
   source words, and the first tokens of its usual translation lose ``penalty`` nats (so the slot
   the sentence has for "bicycle" goes to the term, and the usual word is not written beside it); a term
   whose source words occur twice is offered again at the other occurrence ("linge" for both "cloth");
3. a sentence whose best output still lacks a term (the gate never opened where the term could fit) is
   decoded again with the plain constrained search, which places every term that fits.

Decoding still goes through the engine only (``model.encode`` / ``model.decode`` with the cache); the
passes are calls of ``decode``.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from .alignment import head_words, source_spans, usual_translation, writes_word
from .config import DecodingConfig
from .constraints import Anchor, Anchoring, Constraints
from .results import Hypothesis

# (sentence indices, config, every sentence's constraints or None) -> those sentences' n-best lists, in order
Decode = Callable[[List[int], DecodingConfig, Optional[List[Optional[Constraints]]]], List[List[Hypothesis]]]
Span = Optional[Tuple[Tuple[int, int], ...]]  # a term's source spans, one per occurrence


def term_spans(specs: Sequence[Optional[Constraints]], pieces: Callable[[int], List[str]]) -> Dict[int, List[Span]]:
    """Per sentence with a term found in its source (``pieces(i)``: what its encoder reads), each phrase's
    source spans, one per occurrence of its source term (None for a phrase without a source term, or one whose
    words are not there)."""
    out: Dict[int, List[Span]] = {}
    for i, spec in enumerate(specs):
        if spec is None or not any(p.source for p in spec.phrases):
            continue
        found = pieces(i)
        spans = [tuple(source_spans(found, p.source)) or None if p.source else None for p in spec.phrases]
        if any(s is not None for s in spans):
            out[i] = spans
    return out


def anchor_for(spans: Union[Tuple[int, int], Span], hyp: Optional[Hypothesis],
               target_pieces: Callable[[List[int]], List[str]], variants: Sequence[Sequence[int]] = (),
               text: str = "") -> Optional[Anchor]:
    """The anchor of a phrase (``text``, spelled as ``variants``) at source ``spans`` (one (start, end) span, or
    one per occurrence), its usual translation read from ``hyp`` (the unconstrained output, with attention);
    without an output or its attention the anchor only gates.  None (placed anywhere, as constrained search alone)
    when there is nothing to replace: the output already writes the phrase (any of its spellings, or its words
    however split, as in an elided "l'accordéon"), so the words attending to the term are its article or its
    neighbours; or no word of the output translates the term (the model left it out, or its attention is not on
    it), so there is no usual word to push down and the gate would rest on an alignment that is not there."""
    if spans is None:
        return None
    spans = (tuple(spans),) if isinstance(spans[0], int) else tuple(spans)
    if hyp is not None and (any(_holds(hyp.tokens, list(v)) for v in variants)
                            or (text and hyp.tokens and writes_word(target_pieces(hyp.tokens), text))):
        return None
    if hyp is None or hyp.attention is None or not hyp.tokens:
        return Anchor(spans[0], also=spans[1:])
    pieces = target_pieces(hyp.tokens)
    words = {a for span in spans for a, _ in head_words(usual_translation(hyp.attention, pieces, span), pieces)}
    own = {t for v in variants for t in v}
    # a term's own tokens are never pushed down: "Treppe" for "Treppen" leaves the gate alone to place it
    avoid = frozenset(hyp.tokens[a] for a in words) - own
    return Anchor(spans[0], avoid, spans[1:]) if words else None


def _holds(tokens: List[int], run: List[int]) -> bool:
    return bool(run) and any(tokens[i:i + len(run)] == run for i in range(len(tokens) - len(run) + 1))


def missing_terms(hyps: Sequence[Hypothesis]) -> bool:
    """True when the best hypothesis did not meet all its phrases."""
    return bool(hyps) and hyps[0].constraints_met is not None and not all(hyps[0].constraints_met)


def decode_anchored(decode: Decode, n: int, specs: List[Optional[Constraints]], config: DecodingConfig,
                    pieces: Callable[[int], List[str]],
                    target_pieces: Callable[[List[int]], List[str]],
                    inner: Optional[torch.Tensor] = None, anchoring: Anchoring = Anchoring()) -> List[List[Hypothesis]]:
    """The n-best lists of ``n`` sentences with constraints ``specs``, terms anchored (the module docstring).

    ``pieces(i)``: sentence i's source pieces as the encoder reads them; ``target_pieces(ids)``: output pieces;
    ``inner``: the target ids that continue a word (``alignment.inner_tokens``); ``anchoring``: whether terms
    are anchored, with which gate and penalty."""
    spans = term_spans(specs, pieces) if anchoring.terms else {}
    if not spans:
        return decode(list(range(n)), config, specs)
    termed = sorted(spans)
    plain = decode(termed, config.replace(return_attention=True, return_search=False, return_alternatives=0,
                                          n_best=1), None)
    anchored = list(specs)
    for i, hyps in zip(termed, plain):
        best = hyps[0] if hyps else None
        anchored[i] = specs[i].anchored([anchor_for(span, best, target_pieces, phrase.variants, phrase.text)
                                          for span, phrase in zip(spans[i], specs[i].phrases)], inner, anchoring)
    out = decode(list(range(n)), config, anchored)
    missed = [i for i in termed if missing_terms(out[i])]
    if missed:
        for i, hyps in zip(missed, decode(missed, config, specs)):
            out[i] = hyps
    return out
