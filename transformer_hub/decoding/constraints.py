"""Lexical constraints: target phrases every output must contain, and how beam search makes room for them.

A :class:`Phrase` is one target phrase with its tokenizations (the tokenizer's own, plus its next-best
segmentations: a model trained with subword sampling may spell a word in pieces the plain tokenizer would
not choose); any one of them meets the phrase.  :class:`Constraints` tracks one sentence's phrases as a
small automaton over output tokens: a state is (the phrases met, the partial matches in progress), so a
phrase may be started, abandoned and started again, and a phrase the model writes on its own counts too.

:class:`BeamAllocation` is dynamic beam allocation (Post & Vilar, NAACL 2018), vectorised over the batch as in
Hu et al. (NAACL 2019): besides each sentence's best (beam, token) pairs, every beam proposes the tokens that
start or continue an unmet phrase and its own best token (one gather over the whole batch); every candidate
falls into a *bank* by the constraint tokens it has met; the k beams are the best candidate whatever its
bank, then the others dealt out across the banks, best first within each, highest bank first, so hypotheses
that paid for a forced token are not all pruned by ones that did not, and the hypothesis the unconstrained
search would keep first is not pruned either (with more banks than beams, the lowest banks get none).  Only
that one is protected: a plain beam search output whose path ranked second or lower at some step can lose its
beam to a candidate of a higher bank, so even a constraint the plain best already meets may give another
(worse) output; keeping it for sure would take a plain search beside the constrained one.  A hypothesis may end
(eos) only once it met all its phrases.  At the length cap the
candidates of the highest bank are kept; when that is not the top one, the result says which phrase
could not fit (``Hypothesis.constraints_met``).  Sentences without phrases take the plain beam search path
within the same batch, token for token.

A glossary's phrase is a :class:`Term`: it also names the source words it translates.  Such a phrase can be
*anchored* (``anchoring.py``): its start is proposed only at steps where the decoder attends to those source
words, and the words the model usually writes for them lose ``Anchoring.penalty`` nats, so the term takes their
place instead of landing anywhere beside them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple, Union

import torch

Tensor = torch.Tensor
NEG_INF = float("-inf")
State = Tuple[int, Tuple[Tuple[int, int, int], ...]]  # (bitmask of met phrases, ((phrase, variant, tokens matched), ...))
START: State = (0, ())
MAX_PHRASES = 32  # per sentence
MAX_VARIANTS = 4  # tokenizations tried per phrase
MAX_PHRASE_CHARS = 1000


@dataclass(frozen=True)
class Term:
    """A glossary term as a constraint: the target phrase, and the source words it is the translation of."""

    target: str
    source: str


@dataclass(frozen=True)
class Anchoring:
    """How glossary terms are anchored to their source words (``anchoring.py``, ``processors.AnchoredTerms``)."""

    terms: bool = True  # False: a term is placed wherever constrained search finds room for it
    gate: float = 0.3  # a term may start where this much attention is on its source words
    penalty: float = 4.0  # nats taken from the words the model writes for the term unconstrained

    def __post_init__(self) -> None:
        if not isinstance(self.terms, bool):
            raise ValueError(f"anchoring's terms must be true or false, got {self.terms!r}")
        for name, high in (("gate", 1.0), ("penalty", float("inf"))):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= high:
                raise ValueError(f"anchoring's {name} must be a number in [0, {high}], got {value!r}")


@dataclass(frozen=True)
class Anchor:
    """Where a phrase belongs: source positions ``span`` = [start, end) the encoder reads (``also``: the spans of
    the source term's other occurrences, each translated by the phrase too), and ``avoid``, the target tokens that
    start the words the model writes for them unconstrained (its usual translation)."""

    span: Tuple[int, int]
    avoid: FrozenSet[int] = frozenset()
    also: Tuple[Tuple[int, int], ...] = ()

    @property
    def spans(self) -> Tuple[Tuple[int, int], ...]:
        """Every occurrence's span, the first one first."""
        return (self.span,) + self.also


@dataclass(frozen=True)
class Phrase:
    """A target phrase and the token sequences that spell it (the first is the tokenizer's own); ``source``:
    the source term it translates (a glossary's), else None."""

    text: str
    variants: Tuple[Tuple[int, ...], ...]
    source: Optional[str] = None

    @property
    def length(self) -> int:
        """The tokens that meeting it counts for (its longest spelling): its share of the banks."""
        return max(len(v) for v in self.variants)

    @property
    def shortest(self) -> int:
        return min(len(v) for v in self.variants)

    @classmethod
    def from_text(cls, tokenizer, text: Union[str, Term], special_ids: Sequence[int] = ()) -> "Phrase":
        """Tokenize ``text`` (a :class:`Term`'s target) on the target side; ``ValueError`` for an empty phrase or
        one of special ids."""
        source = text.source if isinstance(text, Term) else None
        text = text.target if isinstance(text, Term) else text
        if not isinstance(text, str):
            raise TypeError(f"a constraint must be a string, got {type(text).__name__}")
        if not text.strip():
            raise ValueError("a constraint is an empty phrase: give the target words the output must contain")
        text = text.strip()
        if len(text) > MAX_PHRASE_CHARS:
            raise ValueError(f"a constraint is {len(text)} characters, more than the {MAX_PHRASE_CHARS} allowed")
        variants = [tuple(tokenizer.encode(text, side="target"))]
        variants += [tuple(v) for v in tokenizer.segmentations(text, MAX_VARIANTS, side="target")]
        special = set(special_ids)
        kept = [v for v in dict.fromkeys(variants) if v and not special & set(v)
                and tokenizer.decode(list(v), side="target") == tokenizer.decode(list(variants[0]), side="target")]
        if not kept:
            raise ValueError(f"the constraint {text!r} has no target tokens the model can produce")
        return cls(text, tuple(kept[:MAX_VARIANTS]), source)


class Constraints:
    """One sentence's phrases, and the automaton its hypotheses' states move through (memoised)."""

    def __init__(self, phrases: Sequence[Phrase], anchors: Optional[Sequence[Optional[Anchor]]] = None,
                 inner: Optional[Tensor] = None, anchoring: Anchoring = Anchoring()) -> None:
        if len(phrases) > MAX_PHRASES:
            raise ValueError(f"{len(phrases)} constraints for one sentence; at most {MAX_PHRASES}")
        self.phrases = tuple(phrases)
        self.anchors: Tuple[Optional[Anchor], ...] = tuple(anchors) if anchors else (None,) * len(self.phrases)
        if len(self.anchors) != len(self.phrases):
            raise ValueError(f"{len(self.anchors)} anchors for {len(self.phrases)} phrases: give one per phrase")
        self.inner = inner  # ids of the target tokens that continue a word (not starting one), or None
        self.anchoring = anchoring  # the gate and penalty of the anchored phrases
        self.avoid = frozenset().union(*(a.avoid for a in self.anchors if a is not None)) - {
            t for p in self.phrases for v in p.variants for t in v}  # a term's own tokens are never pushed down
        self.all = (1 << len(self.phrases)) - 1
        self.top = sum(p.length for p in self.phrases)  # the bank of a hypothesis that met them all
        self._next: Dict[Tuple[State, int], State] = {}
        self._wanted: Dict[Tuple[State, int], List[int]] = {}
        self._banks: Dict[State, int] = {}
        self._firsts = {s[0] for p in self.phrases for s in p.variants}  # tokens that can start a match

    def __len__(self) -> int:
        return len(self.phrases)

    def anchored(self, anchors: Sequence[Optional[Anchor]], inner: Optional[Tensor] = None,
                 anchoring: Anchoring = Anchoring()) -> "Constraints":
        """The same phrases with these anchors (one per phrase, None: placed anywhere); ``inner``: the target
        token ids that continue a word, held back right after an anchored phrase; ``anchoring``: gate, penalty."""
        return Constraints(self.phrases, anchors, inner, anchoring)

    @property
    def is_anchored(self) -> bool:
        return any(a is not None for a in self.anchors)

    @property
    def needed(self) -> int:
        """The fewest output tokens that can meet every phrase (eos not counted)."""
        return sum(p.shortest for p in self.phrases)

    def advance(self, state: State, token: int) -> State:
        """The state after emitting ``token``."""
        if not state[1] and token not in self._firsts:  # the common case: nothing under way, nothing starts
            return state
        key = (state, token)
        found = self._next.get(key)
        if found is None:
            found = self._next[key] = self._step(state, token)
        return found

    def _step(self, state: State, token: int) -> State:
        met, partial = state
        grown, done = [], 0
        for p, v, j in partial:
            spelling = self.phrases[p].variants[v]
            if spelling[j] == token:
                if j + 1 == len(spelling):
                    done |= 1 << p
                else:
                    grown.append((p, v, j + 1))
        for p, phrase in enumerate(self.phrases):
            if not met >> p & 1:
                for v, spelling in enumerate(phrase.variants):
                    if spelling[0] == token:
                        if len(spelling) == 1:
                            done |= 1 << p
                        else:
                            grown.append((p, v, 1))
        met |= done
        return met, tuple(sorted({g for g in grown if not met >> g[0] & 1}))

    def bank(self, state: State) -> int:
        """Constraint tokens met: whole phrases (at their ``length``), plus the furthest partial match."""
        found = self._banks.get(state)
        if found is None:
            met, partial = state
            whole = sum(p.length for i, p in enumerate(self.phrases) if met >> i & 1)
            found = self._banks[state] = whole + max((j for _, _, j in partial), default=0)
        return found

    def done(self, state: State) -> bool:
        return state[0] == self.all

    def met(self, state: State) -> List[bool]:
        return [bool(state[0] >> i & 1) for i in range(len(self.phrases))]

    def wanted(self, state: State, closed: int = 0) -> List[int]:
        """The tokens that continue a partial match or start an unmet phrase not under way; phrases in the
        bitmask ``closed`` (anchored ones whose source words the decoder does not attend to now) are not started."""
        key = (state, closed)
        found = self._wanted.get(key)
        if found is None:
            met, partial = state
            tokens = [self.phrases[p].variants[v][j] for p, v, j in partial]
            started = {p for p, _, _ in partial}  # a phrase under way is continued, not proposed afresh
            tokens += [s[0] for i, p in enumerate(self.phrases) if not (met | closed) >> i & 1 and i not in started
                       for s in p.variants]
            found = self._wanted[key] = list(dict.fromkeys(tokens))
        return found


def constraints_for_texts(model, tokenizer, constraints, n: int) -> Optional[List[Optional[Constraints]]]:
    """``generate``'s ``constraints=``: one list of target phrases per text (None or []: none)."""
    if constraints is None:
        return None
    if isinstance(constraints, str) or len(constraints) != n:
        raise ValueError(f"constraints needs one list of target phrases per text ({n}), e.g. [['Fahrrad'], []]")
    cfg = model.config
    special = [cfg.pad_id, cfg.bos_id, cfg.eos_id, getattr(cfg, "unk_id", cfg.pad_id)]
    out: List[Optional[Constraints]] = []
    for phrases in constraints:
        if isinstance(phrases, str):
            raise ValueError(f"each text's constraints are a list of phrases; got the string {phrases!r}: "
                             f"wrap it in a list")
        phrases = [Phrase.from_text(tokenizer, p, special) for p in phrases or []]
        out.append(Constraints(phrases) if phrases else None)
    return out if any(c is not None for c in out) else None


def deal(banks: Sequence[int], count: int) -> List[int]:
    """``count`` candidate indices (candidates best first): the best one whatever its bank (what the unconstrained
    search would keep first is never crowded out), then in each round the next best of every bank, highest bank
    first.  One bank gives the candidates in their own order."""
    by_bank: Dict[int, List[int]] = {}
    for c in range(1, len(banks)):
        by_bank.setdefault(banks[c], []).append(c)
    order = sorted(by_bank, reverse=True)
    out: List[int] = [0] if banks else []
    for r in range(max(map(len, by_bank.values()), default=0)):
        if len(out) >= count:
            break
        out += [by_bank[bank][r] for bank in order if r < len(by_bank[bank])]
    return out[:count]


class BeamAllocation:
    """Dynamic beam allocation for one batch's beam search: per row (k per live sentence) its constraint state."""

    def __init__(self, constraints: Sequence[Optional[Constraints]], k: int, device: torch.device) -> None:
        self.of, self.k, self.device = list(constraints), k, device  # ``of``: by original sentence index
        self.states: List[State] = [START] * (len(self.of) * k)
        self.closed: Dict[int, int] = {}  # per row this step: the anchored phrases it may not start (set by
        # ``processors.AnchoredTerms``, the per-step edit of anchored phrases)
        self.fresh: List[int] = [0] * len(self.states)  # per row: the phrases its last token met

    @property
    def needs_attention(self) -> bool:
        """True when some sentence has anchored phrases: their gates read the decoder's cross-attention."""
        return any(c is not None and c.is_anchored for c in self.of)

    def extend(self, ranked: list, log_probs: Tensor, live: Sequence[int], beam_scores: Sequence[List[float]],
               eos: int, row_best: Tensor) -> list:
        """Each constrained sentence's candidates plus the pairs its beams propose, dealt out across the banks.

        ``ranked[b]`` (sentence ``live[b]``) holds scores/tokens/logprobs/beams best first; the result's
        entries carry ``banks`` too.  ``row_best``: each row's most likely token (N,).  The proposals'
        log-probabilities come from one gather for the batch."""
        k = self.k
        rows, tokens = [], []
        constrained = [b for b, s in enumerate(live) if self.of[s] is not None]
        if not constrained:
            return ranked
        best = row_best[torch.tensor([b * k + i for b in constrained for i in range(k)], device=self.device)].tolist()
        for n, b in enumerate(constrained):
            spec = self.of[live[b]]
            for i in range(k):
                row = b * k + i
                if beam_scores[b][i] > NEG_INF:
                    wanted = spec.wanted(self.states[row], self.closed.get(row, 0)) + [best[n * k + i]]
                    rows += [row] * len(wanted)
                    tokens += wanted
        values = log_probs[torch.tensor(rows, device=self.device, dtype=torch.long),
                           torch.tensor(tokens, device=self.device, dtype=torch.long)].tolist() if rows else []
        proposals: Dict[int, List[Tuple[int, int, float]]] = {}
        for row, token, lp in zip(rows, tokens, values):
            proposals.setdefault(row // k, []).append((row, token, lp))
        out = list(ranked)
        for b in constrained:
            out[b] = self._dealt(ranked[b], proposals.get(b, []), beam_scores[b], self.of[live[b]], eos)
        return out

    def _dealt(self, cands, proposals, scores: List[float], spec: Constraints, eos: int):
        """One sentence's candidates and its beams' proposals (new pairs only), dealt out across the banks."""
        seen = set(zip(cands.beams, cands.tokens))
        extra = list({(row, token): (scores[row % self.k] + lp, token, lp, row) for row, token, lp in proposals
                      if lp > NEG_INF and (row, token) not in seen}.values())
        all_scores = cands.scores + [e[0] for e in extra]
        all_tokens = cands.tokens + [e[1] for e in extra]
        all_lps = cands.logprobs + [e[2] for e in extra]
        all_beams = cands.beams + [e[3] for e in extra]
        order = sorted(range(len(all_scores)), key=lambda c: -all_scores[c])  # stable: ties keep their order
        banks = [spec.bank(self.states[r] if tok == eos else spec.advance(self.states[r], tok))
                 for r, tok in zip(all_beams, all_tokens)]
        dealt = [order[c] for c in deal([banks[c] for c in order], len(order))]
        out = type(cands)([all_scores[c] for c in dealt], [all_tokens[c] for c in dealt],
                          [all_lps[c] for c in dealt], [all_beams[c] for c in dealt])
        out.banks = [banks[c] for c in dealt]
        return out

    def finishing(self, sentence: int, cands, hits: List[int], at_cap: bool, any_finished: bool,
                  eos: int) -> List[int]:
        """The candidates that become finished hypotheses, given plain beam search's ``hits``.

        Before the cap: the pairs ending in eos among the k best of the top bank (eos is blocked elsewhere; a
        finished hypothesis takes no beam, so the top bank's share of beams does not ration them).  At the
        cap: the candidates of the highest bank among ``hits`` (only complete ones when some hypothesis
        already ended having met everything)."""
        spec = self.of[sentence]
        if spec is None:
            return hits
        if not at_cap:
            top = [c for c in range(len(cands.tokens)) if cands.banks[c] == spec.top][:self.k]
            return [c for c in top if cands.tokens[c] == eos and cands.scores[c] > NEG_INF]
        if not hits:
            return hits
        level = spec.top if any_finished else max(cands.banks[c] for c in hits)
        return [c for c in hits if cands.banks[c] == level]

    def complete(self, sentence: int, cands, live: List[int]) -> List[int]:
        """The candidates among ``live`` that met every phrase (all of them for a sentence without phrases): the
        stopping rule weighs only these, as the others must still pay for forced tokens before they may end."""
        if self.of[sentence] is None:
            return live
        return [c for c in live if cands.banks[c] == self.of[sentence].top]

    def met(self, sentence: int, row: int, token: int, eos: int) -> Optional[List[bool]]:
        """Which phrases a hypothesis (``row`` extended by ``token``) met; None for a sentence without any."""
        spec = self.of[sentence]
        if spec is None:
            return None
        return spec.met(self.states[row] if token == eos else spec.advance(self.states[row], token))

    def follow(self, rows: Sequence[int], tokens: Sequence[int], sentences: Sequence[int]) -> None:
        """The next beams' states: row ``rows[i]`` extended by ``tokens[i]`` (of sentence ``sentences[i]``)."""
        old = [self.states[r] for r in rows]
        self.states = [self.of[s].advance(self.states[r], tok) if self.of[s] is not None else START
                       for r, tok, s in zip(rows, tokens, sentences)]
        self.fresh = [new[0] & ~was[0] for new, was in zip(self.states, old)]  # phrases each row just met
