"""A sentence's n-best list and the features the reranker weighs.

``collect`` runs beam search with the chosen model (its n-best is the candidate list; with ``union`` a helper
model serving the same direction adds its own n-best), then scores every candidate:

* ``forward``: the chosen model's log p(y | x); kept raw with its length, so the reranker can normalise it with
  any length penalty (``NBestList.forward``); the beam's own scores where the beam made the candidate;
* ``reverse``: the chosen model's log p(x | y), the noisy channel (a multilingual model serves the reverse);
* ``second`` / ``second_reverse``: a helper model's log p(y | x) / log p(x | y), through its own tokenizer,
  where it serves that direction;
* ``length_ratio``: words of y over words of x;
* ``mbr_chrf`` / ``mbr_bleu``: expected sentence chrF / BLEU (0..1) against the other candidates, under the
  chosen model's posterior over the list (``mbr.py``).

Forced scores are length-normalised with the search's length penalty.  Where a text of a list is longer than
the scorer's decoder reads (a long source as the reverse score's target), that feature is 0 for the whole list.

With a ``domain`` (a model trained with domain tags, ``config.domains``) the chosen model searches and scores
every candidate, forward and reverse, with that domain's tag, through ``generate`` and ``score_texts`` as any
decoding does; a helper gets it where it was trained with that domain too, and reads its sources untagged (or
with its own default) otherwise.

With a ``glossary`` the beam search is the constrained one (``generate_texts(..., glossary=...)``: the text
pipeline): the list holds the candidates that contain every term of the entries found in the source (the
constrained n-best's, and a helper's that happen to), so whatever the weights pick keeps the terms; when no
candidate could fit them all, the list keeps every candidate and its ``warnings`` say so.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..decoding.config import length_penalty
from ..decoding.scoring import score_texts
from ..text.pipeline import generate_texts
from . import mbr

FEATURES = ("forward", "reverse", "second", "second_reverse", "length_ratio", "mbr_chrf", "mbr_bleu")


@dataclass
class SearchSettings:
    """How the n-best list is made: beam size (n = beam size), the beam's length penalty, helpers' lists too."""

    beam_size: int = 5
    length_penalty: float = 0.6
    union: bool = False  # add the n-best of helper models serving the same direction


@dataclass
class NBestList:
    """One source sentence's candidates (the chosen model's beam order first) and their features."""

    source: str
    texts: List[str]
    forward_raw: List[float]  # the chosen model's log p(y | x), eos included
    forward_length: List[int]  # |Y|: tokens with eos
    features: Dict[str, List[float]] = field(default_factory=dict)
    # the chosen model's beam result (its hypotheses: the candidates it made), not saved with the list
    beam: Optional[Any] = field(default=None, repr=False, compare=False)
    glossary: list = field(default_factory=list)  # with a glossary: the entries (``glossary.Entry``) that applied
    warnings: List[str] = field(default_factory=list)  # e.g. a glossary term that could not fit the length budget

    def forward(self, alpha: float) -> List[float]:
        """log p(y | x) / lp(|Y|) with length penalty ``alpha``."""
        return [s / length_penalty(n, alpha) for s, n in zip(self.forward_raw, self.forward_length)]

    def to_dict(self) -> dict:
        return {"source": self.source, "texts": self.texts, "forward_raw": self.forward_raw,
                "forward_length": self.forward_length, "features": self.features}

    @classmethod
    def from_dict(cls, data: dict) -> "NBestList":
        return cls(data["source"], list(data["texts"]), list(data["forward_raw"]), list(data["forward_length"]),
                   dict(data["features"]))


def serves(model, src: str, tgt: str) -> bool:
    return (src, tgt) in model.config.pairs()


def helper_domain(helper, domain: Optional[str]) -> Optional[str]:
    """The domain a helper model is told: ``domain`` where it was trained with it, else None (its default)."""
    return domain if domain in (helper.config.domains or ()) else None


def _nbest(model, sources: List[str], src: str, tgt: str, settings: SearchSettings, progress: bool, batch_size: int,
           glossary=None, domain: Optional[str] = None):
    languages = {"src_lang": src, "tgt_lang": tgt} if model.config.multilingual else {}
    return generate_texts(model, sources, strategy="beam", beam_size=settings.beam_size, n_best=settings.beam_size,
                          length_penalty=settings.length_penalty, batch_size=batch_size, progress=progress,
                          glossary=glossary, domain=domain, **languages)  # glossary None: the plain search


def _kept(result) -> list:
    """The hypotheses of ``result`` that met all its constraints (all of them when none did, or none were set)."""
    met = [h for h in result.hypotheses if h.constraints_met is None or all(h.constraints_met)]
    return met or list(result.hypotheses)


def collect(model, sources: Sequence[str], src: str, tgt: str, settings: Optional[SearchSettings] = None,
            helpers: Sequence = (), progress: bool = False, batch_size: int = 64,
            needed: Optional[Sequence[str]] = None, glossary=None, domain: Optional[str] = None) -> List[NBestList]:
    """The n-best lists of ``sources`` (``src`` -> ``tgt``) with every feature the models can give, or only
    the ``needed`` ones (the quality mode computes what its weights use); with a ``glossary`` (a ``Glossary``,
    a dict or TSV text), the constrained search's candidates that contain its terms; ``domain``: the sources'
    domain for a model trained with domain tags (None: its default), as ``generate`` takes it."""
    settings = settings or SearchSettings()
    wanted = set(FEATURES if needed is None else needed)
    sources = list(sources)
    lists = [NBestList(s, [], [], []) for s in sources]
    terms: List[List[str]] = [[] for _ in sources]
    for n, (nbest, result) in enumerate(zip(lists, _nbest(model, sources, src, tgt, settings, progress, batch_size,
                                                         glossary, domain))):
        nbest.beam = result
        nbest.glossary, nbest.warnings, terms[n] = list(result.glossary), list(result.warnings), result.constraints
        for hyp in _kept(result):
            if hyp.text not in nbest.texts:  # two segmentations of one string: keep the better one
                nbest.texts.append(hyp.text)
                nbest.forward_raw.append(hyp.score)
                nbest.forward_length.append(len(hyp))
    if settings.union:
        _add_helper_candidates(model, lists, src, tgt, settings, helpers, progress, batch_size, terms, domain)
    pairs = [(n.source, y) for n in lists for y in n.texts]
    alpha = settings.length_penalty

    def forced(scorer, s: str, t: str, reverse: bool, told: Optional[str]) -> List[float]:
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        options = dict(domain=told, alpha=alpha, batch_size=batch_size, too_long="none")
        got = score_texts(scorer, ys, xs, src_lang=t, tgt_lang=s, **options) if reverse \
            else score_texts(scorer, xs, ys, src_lang=s, tgt_lang=t, **options)
        return _within_lists(lists, [None if g is None else g.normalized_score for g in got])

    columns: Dict[str, List[float]] = {}
    if "reverse" in wanted and serves(model, tgt, src):
        columns["reverse"] = forced(model, src, tgt, True, domain)  # the same domain: a text's topic, either side
    for helper in helpers[:1]:  # one helper: the features are named for a second model
        if "second" in wanted and serves(helper, src, tgt):
            columns["second"] = forced(helper, src, tgt, False, helper_domain(helper, domain))
        if "second_reverse" in wanted and serves(helper, tgt, src):
            columns["second_reverse"] = forced(helper, src, tgt, True, helper_domain(helper, domain))
    _spread(lists, columns)
    for nbest in lists:
        _local_features(nbest, wanted)
    return lists


def _add_helper_candidates(model, lists: List[NBestList], src: str, tgt: str, settings: SearchSettings,
                           helpers: Sequence, progress: bool, batch_size: int, terms: List[List[str]],
                           domain: Optional[str] = None) -> None:
    """Helpers' n-best strings join each list (with glossary ``terms`` per list, only those that contain them
    all: a helper's plain search does not place them); the chosen model scores them (forced) for ``forward``."""
    sources = [n.source for n in lists]
    added: List[tuple] = []
    for helper in helpers:
        if not serves(helper, src, tgt):
            continue
        for nbest, result, need in zip(lists, _nbest(helper, sources, src, tgt, settings, progress, batch_size,
                                                     domain=helper_domain(helper, domain)), terms):
            for hyp in result.hypotheses:
                if hyp.text not in nbest.texts and all(t in hyp.text for t in need):
                    nbest.texts.append(hyp.text)
                    added.append((nbest, len(nbest.texts) - 1))
    if not added:
        return
    got = score_texts(model, [n.source for n, _ in added], [n.texts[i] for n, i in added], src_lang=src,
                      tgt_lang=tgt, domain=domain, batch_size=batch_size)
    for (nbest, _), score in zip(added, got):
        nbest.forward_raw.append(score.score)
        nbest.forward_length.append(len(score))


def _within_lists(lists: List[NBestList], values: List[Optional[float]]) -> List[float]:
    """A flat column with every value of a list that has a missing one (a text longer than the scorer's decoder
    reads) set to 0: one value for the whole list leaves its choice to the other features."""
    out, at = [], 0
    for nbest in lists:
        part = values[at: at + len(nbest.texts)]
        out += [0.0] * len(part) if None in part else part
        at += len(part)
    return out


def _spread(lists: List[NBestList], columns: Dict[str, List[float]]) -> None:
    """Cut flat per-candidate columns back into the lists."""
    at = 0
    for nbest in lists:
        n = len(nbest.texts)
        for name, values in columns.items():
            nbest.features[name] = values[at: at + n]
        at += n


def _local_features(nbest: NBestList, wanted: set) -> None:
    """The features of a list alone: length ratio and the MBR utilities."""
    words = max(1, len(nbest.source.split()))
    if "length_ratio" in wanted:
        nbest.features["length_ratio"] = [len(y.split()) / words for y in nbest.texts]
    weights = mbr.posterior(nbest.forward_raw) if nbest.texts else []
    for name in ("chrf", "bleu"):
        if f"mbr_{name}" not in wanted:
            continue
        utilities = mbr.expected_utility(nbest.texts, _UTILITIES[name], weights)
        nbest.features[f"mbr_{name}"] = [u / 100.0 for u in utilities]


_UTILITIES = {name: mbr.utility(name) for name in mbr.UTILITIES}
