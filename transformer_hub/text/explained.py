"""Whether a text looks like any domain the models were trained on: everyday text ("Where is the train
station?", "My sister lives in Prague and works as a nurse.") is neither image captions nor software help, yet the
domain classifier reads it as one of them at 0.99 (naive Bayes is sure of whatever its words lean to) and the
model translates it into fluent nonsense.  This module flags such a sentence, with a reason a person reads.

The measure: ``DomainClassifier.evidence``, per feature, how strongly a sentence's words and letter 4-grams point
to a domain against the others (a mean, so it does not grow with the sentence as the posterior does).  A caption
("Two dogs are playing in the snow.") or a help sentence ("Choose Format - Cells.") is full of words one domain
uses and the other does not; everyday words are used alike by both domains, or by neither, and bring it near 0.
The share of known words or the mean log-likelihood under the best domain does not tell them apart: Multi30k's
everyday vocabulary and LibreOffice help's large one (four languages) know most everyday words.

The thresholds: per domain and language, the evidence that ``SHARE`` (98 %) of the domain's val sentences of
``MIN_WORDS`` words or more reach (``calibrate``; ``python -m scripts.domain_classifier`` stores them in
``domains.json``'s optional ``explained`` and measures them in ``domains_results.json``), and over all languages
together ("*") for a language not calibrated.  A sentence is explained when some domain's evidence reaches that
domain's threshold for its language; a classifier without ``explained`` (older ``domains.json`` files) or of one
domain flags nothing.

Short sentences: one or two words are never judged (``fit`` gives None).  A word or two says little about
where a text comes from (a menu name, "Prague", "Thursday"), the evidence of so few features swings widely, and
a label or a term is what a visitor often looks up; the calibration measures how many of the val splits' short
segments the threshold would flag (``short_flagged`` in ``domains_results.json``).

    fit(classifier, "Where is the train station?", "en")   # Fit(domain='captions', evidence=0.208.., explained=False)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .domain import DomainClassifier, words

SHARE = 0.98  # of each domain's val sentences (per language) the threshold lets through
MIN_WORDS = 3  # words a sentence needs to be judged
ALL = "*"  # the thresholds' key for any language (all of the domain's val sentences together)


@dataclass(frozen=True)
class Fit:
    """How well the classifier's domains explain one sentence: the domain its words point to most, that domain's
    evidence per feature, and whether some domain's evidence reaches its threshold."""

    domain: str
    evidence: float
    explained: bool


def threshold(classifier: DomainClassifier, domain: str, lang: Optional[str] = None) -> float:
    """The evidence ``domain`` needs for a sentence in ``lang`` (its all-languages threshold for a language the
    calibration did not see, or None)."""
    row = classifier.explained["thresholds"][domain]
    return row.get(lang, row[ALL]) if lang is not None else row[ALL]


def fit(classifier: Optional[DomainClassifier], text: str, lang: Optional[str] = None) -> Optional[Fit]:
    """``text``'s ``Fit``; None when it is not judged: no classifier, one not calibrated (no ``explained``) or of
    one domain, or fewer words than the calibration's ``min_words``."""
    if classifier is None or classifier.explained is None or \
            len(words(text)) < classifier.explained["min_words"]:
        return None
    found = classifier.evidence(text)
    if not found:
        return None
    best = max(found, key=found.__getitem__)
    return Fit(best, found[best], any(v >= threshold(classifier, d, lang) for d, v in found.items()))


def calibrate(classifier: DomainClassifier, val: Mapping[str, Mapping[str, Sequence[str]]], share: float = SHARE,
              min_words: int = MIN_WORDS) -> Dict[str, Any]:
    """``domains.json``'s ``explained`` from held-out sentences (``val``: ``{domain: {lang: sentences}}``, every
    domain of the classifier): per domain and language, and over its languages together (``ALL``), the
    evidence for its own domain that ``share`` of its sentences of ``min_words`` words or more reach (rounded
    down, so at least that share passes)."""
    if not 0 < share <= 1 or len(classifier.domains) < 2:
        raise ValueError(f"calibrate needs a share in (0, 1] and two domains or more, got {share} and "
                         f"{classifier.domains}")
    if set(val) != set(classifier.domains):
        raise ValueError(f"calibrate needs held-out sentences of every domain {classifier.domains}, got {list(val)}")
    thresholds: Dict[str, Dict[str, float]] = {}
    for domain in classifier.domains:
        per_lang = {lang: [classifier.evidence(t)[domain] for t in texts if len(words(t)) >= min_words]
                    for lang, texts in val[domain].items()}
        pooled = [v for found in per_lang.values() for v in found]
        if not pooled:
            raise ValueError(f"no held-out sentence of {min_words} words or more for domain {domain!r}")
        thresholds[domain] = {ALL: _quantile(pooled, share),
                              **{lang: _quantile(found, share) for lang, found in sorted(per_lang.items()) if found}}
    return {"share": share, "min_words": min_words, "thresholds": thresholds}


def _quantile(values: List[float], share: float) -> float:
    """The largest value (rounded down to 1e-4) that at least ``share`` of ``values`` reach."""
    ordered = sorted(values)
    return math.floor(ordered[int((1 - share) * len(ordered) + 1e-9)] * 1e4) / 1e4


def passed(classifier: DomainClassifier, texts: Sequence[str], lang: Optional[str] = None) -> Dict[str, int]:
    """Of ``texts`` (in ``lang``): how many are judged (``min_words`` words or more) and how many of those some
    domain explains; and how many of the short ones the threshold would flag if they were judged."""
    judged = explained = short = short_flagged = 0
    least = classifier.explained["min_words"]
    for text in texts:
        found = classifier.evidence(text)
        if not found:
            continue
        ok = any(v >= threshold(classifier, d, lang) for d, v in found.items())
        if len(words(text)) >= least:
            judged, explained = judged + 1, explained + ok
        else:
            short, short_flagged = short + 1, short_flagged + (not ok)
    return {"judged": judged, "explained": explained, "short": short, "short_flagged": short_flagged}


def reason(domains: Sequence[str], labels: Optional[Mapping[str, str]] = None, one_model: bool = True) -> str:
    """Why a sentence is flagged, in words: "this text looks like neither image captions nor software
    documentation: the models were not trained on such text, ..." (``labels``: how to name each domain)."""
    names = [(labels or {}).get(d, d) for d in domains]
    kinds = f"neither {names[0]} nor {names[1]}" if len(names) == 2 else \
        f"none of {', '.join(names[:-1])} or {names[-1]}" if len(names) > 2 else (names or ["its domain"])[0]
    model = "the model was" if one_model else "the models were"
    return (f"this text looks like {kinds}: {model} not trained on such text, and its translation may be wrong "
            "however fluent it reads")


def mark(result: Any, fits: Sequence[Optional[Fit]], why: str) -> None:
    """Each sentence result of ``result`` (a text's, or the text itself when it is one) gets its
    ``domain_evidence`` and, when no domain explains it, ``unfamiliar`` (``why``); so does the text when any
    of its sentences is."""
    parts = result.sentences if result.sentences is not None else [result]
    for sentence, found in zip(parts, fits):
        sentence.domain_evidence = None if found is None else round(found.evidence, 4)
        sentence.unfamiliar = why if found is not None and not found.explained else None
    if any(s.unfamiliar for s in parts):
        result.unfamiliar = why
