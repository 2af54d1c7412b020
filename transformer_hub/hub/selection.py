"""The best model for a direction: the one whose model card measures it best, else one that serves it.

A candidate is a model's name, the directions its config serves, and the scores its card (model-index)
gives on one split and metric (by default lowercased sacreBLEU on Multi30k's ``test_2016_flickr``, the
split every shipped card reports).  A card entry that names no direction belongs to a bilingual model's
one pair.  For a direction, :func:`best_model` picks the serving candidate with the highest score there;
candidates without a score for it come after every scored one, in the order given::

    from transformer_hub.hub.selection import best_model, candidates_in
    best_model(candidates_in("space/models"), "en", "de").name      # 'en-de' (41.53 against 40.47)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..config import TransformerConfig
from .card import card_data_from_file
from .results import scores_from_card

SPLIT = "test_2016_flickr"
METRIC = "bleu_lowercase"
Pair = Tuple[str, str]
# A card entry's domain, from its dataset: Multi30k's captions (entries naming no dataset are Multi30k's, as every
# card before domains), LibreOffice's help; a dataset named by a domain itself (the trainer's records) is that one.
DATASET_DOMAINS = {"multi30k": "captions", "libreoffice-help": "software"}
DEFAULT_DOMAIN = "captions"
DOMAIN_SPLITS = {"captions": SPLIT}  # the split a domain is scored on; any other domain: its "test" split


@dataclass(frozen=True)
class Candidate:
    """A model that may serve a direction: its name, where it is, what it serves and what its card measured."""

    name: str
    source: Optional[str] = None
    pairs: Tuple[Pair, ...] = ()
    scores: Mapping[Pair, float] = field(default_factory=dict)  # on the default domain (captions)
    domain_scores: Mapping[str, Mapping[Pair, float]] = field(default_factory=dict)  # the other domains'
    domains: Tuple[str, ...] = ()  # the domains it was trained to be told (``config.domains``)

    def serves(self, src_lang: str, tgt_lang: str) -> bool:
        return (src_lang, tgt_lang) in self.pairs

    def scores_on(self, domain: Optional[str] = None) -> Mapping[Pair, float]:
        """The card's scores on ``domain``'s test data (None: the default domain, captions)."""
        return self.scores if domain in (None, DEFAULT_DOMAIN) else self.domain_scores.get(domain, {})


def record_domain(record: Mapping[str, Any]) -> str:
    """The domain a model-card result entry measures (``DATASET_DOMAINS``; no dataset: Multi30k's captions)."""
    dataset = str(record.get("dataset_type") or "multi30k").lower()
    return DATASET_DOMAINS.get(dataset, dataset)


def candidate(name: str, config: TransformerConfig, card: Optional[Mapping[str, Any]] = None, *,
              source: Optional[str] = None, split: str = SPLIT, metric: str = METRIC) -> Candidate:
    """A candidate from a model's config and card data (``hub.card_data_from_file``'s ``{"results": [...]}``).

    Scores on other splits or metrics, for directions the config does not serve, or unreadable entries
    are left out: a card is documentation, and a bad one must not stop the model from serving.
    """
    pairs = tuple(config.pairs())
    scores: Dict[str, Dict[Pair, float]] = {}
    records = list((card or {}).get("results") or [])
    try:
        found = scores_from_card(name, records)
    except (KeyError, TypeError, ValueError, AttributeError):
        found, records = [], []
    for record, score in zip(records, found):
        domain = record_domain(record)
        if score.split != (split if domain == DEFAULT_DOMAIN else DOMAIN_SPLITS.get(domain, "test")) \
                or score.metric != metric:
            continue
        pair = tuple(score.direction.split("-", 1)) if score.direction else (pairs[0] if len(pairs) == 1 else None)
        kept = scores.setdefault(domain, {})
        if pair in pairs and pair not in kept:  # the first entry for a direction counts, as Results.score reads
            kept[pair] = float(score.value)
    default = scores.pop(DEFAULT_DOMAIN, {})
    return Candidate(name, source, pairs, default, scores, tuple(getattr(config, "domains", None) or ()))


def candidate_from_folder(folder: os.PathLike, name: Optional[str] = None, **options: Any) -> Candidate:
    """A candidate from a ``save_pretrained`` folder: its ``config.json`` and its ``README.md`` card."""
    folder = Path(folder)
    config = TransformerConfig.from_json_file(str(folder / "config.json"))
    card = card_data_from_file(str(folder / "README.md")) if (folder / "README.md").is_file() else {}
    return candidate(name or folder.name, config, card, source=str(folder), **options)


def candidates_in(models_dir: os.PathLike, **options: Any) -> List[Candidate]:
    """Every model folder directly inside ``models_dir`` (``config.json`` and ``model.safetensors``), by name."""
    models_dir = Path(models_dir)
    folders = sorted(f for f in models_dir.iterdir() if (f / "config.json").is_file()
                     and (f / "model.safetensors").is_file()) if models_dir.is_dir() else []
    return [candidate_from_folder(folder, **options) for folder in folders]


def best_model(candidates: Iterable[Candidate], src_lang: str, tgt_lang: str,
               domain: Optional[str] = None) -> Optional[Candidate]:
    """The serving candidate with the best score for ``src_lang -> tgt_lang`` on ``domain``'s test data (None:
    the default domain, captions); unscored ones after, in order, those trained with ``domain`` (other than
    captions) first.  None when no candidate serves the direction.
    """
    pair = (src_lang, tgt_lang)
    serving = [c for c in candidates if c.serves(src_lang, tgt_lang)]
    scored = [c for c in serving if pair in c.scores_on(domain)]
    if scored:  # max keeps the first of equal scores: the order given breaks ties
        return max(scored, key=lambda c: c.scores_on(domain)[pair])
    if domain not in (None, DEFAULT_DOMAIN):  # a card without that domain's scores: a model that knows its tag
        serving.sort(key=lambda c: domain not in c.domains)  # stable: the order given otherwise
    return serving[0] if serving else None


def best_models(candidates: Sequence[Candidate]) -> Dict[Pair, str]:
    """``{(src, tgt): name}`` for every direction some candidate serves."""
    pairs = dict.fromkeys(pair for c in candidates for pair in c.pairs)
    return {pair: best_model(candidates, *pair).name for pair in pairs}  # type: ignore[union-attr]
