"""Which domain a text comes from (image captions, software documentation, ...): a multinomial naive Bayes over
its lowercased words, trained on each domain's training sources and stored beside a model as ``domains.json``.

A model trained with domain tags (``config.domains``) translates best when its source carries the right tag;
visitors do not say where their text comes from, so ``domain="auto"`` asks this classifier.  The words of the
domains differ sharply ("click", "dialog", "cell" against "man", "dog", "street"), and a few words decide, which
naive Bayes does well with a few thousand words and letter 4-grams per domain.  Priors are uniform:
the share of each domain in the training data says nothing about what a visitor brings.

    classifier = DomainClassifier.from_folder("space/models/multilingual-v4")
    classifier.predict(["Click OK to close the dialog."])      # [('software', 0.99...)]

The posterior says which domain, never whether any fits: a text of neither domain ("Where is the train
station?") is still read as one at 0.99.  ``evidence`` (how strongly, per feature, a text's words point to a
domain) does not grow with the text's length, and ``text.explained`` flags a sentence whose evidence no domain's
calibrated threshold (``explained``, an optional field of ``domains.json``) reaches.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..caching import WeakVersionCache
from ..hub.loading import DOMAINS_FILE, read_domains

SCHEMA = 1
_WORD = re.compile(r"[^\W\d_]+")  # letters only: numbers and punctuation say little about the domain
Prediction = Tuple[str, float]  # (domain, posterior probability)


def words(text: str) -> List[str]:
    """The lowercased words of ``text`` (runs of letters)."""
    return _WORD.findall(text.lower())


def features(text: str) -> List[str]:
    """``text``'s words and the letter 4-grams of each (``"#rei"``, ``"reih"``, ...), so that a word never seen in
    training ("Reihentyp", "BITXOR") still leans to the domain whose words it is built like."""
    out = []
    for word in words(text):
        padded = f"#{word}#"
        out.append(word)
        out.extend("~" + padded[i:i + 4] for i in range(max(1, len(padded) - 3)))
    return out


class DomainClassifier:
    """Naive Bayes over words: ``counts[domain][i]`` is how often ``vocabulary[i]`` occurred in that domain's
    training text, ``totals[domain]`` the number of words counted there (Laplace smoothing on top)."""

    def __init__(self, vocabulary: Sequence[str], counts: Mapping[str, Sequence[int]],
                 totals: Mapping[str, int], made_by: str = "", explained: Optional[Mapping[str, Any]] = None) -> None:
        if not counts:
            raise ValueError("a domain classifier needs at least one domain")
        for domain, row in counts.items():
            if len(row) != len(vocabulary):
                raise ValueError(f"domain {domain!r} has {len(row)} counts for {len(vocabulary)} words")
        self.vocabulary, self.domains = list(vocabulary), list(counts)
        self.counts = {d: list(map(int, row)) for d, row in counts.items()}
        self.totals = {d: int(totals[d]) for d in self.domains}
        self.made_by = made_by
        # ``text.explained.calibrate``'s thresholds of ``evidence`` (None: not calibrated, nothing is flagged)
        self.explained = check_explained(explained, self.domains) if explained is not None else None
        size = len(self.vocabulary) + 1
        self._index = {w: i for i, w in enumerate(self.vocabulary)}
        self._log = {d: [math.log((c + 1) / (self.totals[d] + size)) for c in self.counts[d]] for d in self.domains}

    @classmethod
    def train(cls, texts: Mapping[str, Iterable[str]], features_per_domain: int = 8000,
              made_by: str = "") -> "DomainClassifier":
        """Count each domain's features (``features``) in ``texts`` (``{domain: sentences}``); the vocabulary is
        the ``features_per_domain`` most frequent of each domain, together."""
        counted = {domain: Counter(f for text in sentences for f in features(text)) for domain, sentences in texts.items()}
        vocabulary = sorted({w for c in counted.values() for w, _ in c.most_common(features_per_domain)})
        counts = {d: [c[w] for w in vocabulary] for d, c in counted.items()}
        totals = {d: sum(row) for d, row in counts.items()}
        return cls(vocabulary, counts, totals, made_by)

    def with_domain(self, domain: str, texts: Iterable[str], features_per_domain: int = 8000) -> "DomainClassifier":
        """This classifier and one more domain counted from ``texts`` (its ``features_per_domain`` most frequent
        features join the vocabulary). The old domains' texts are not here to count, so a feature new to the
        vocabulary counts 0 in them (Laplace smoothing keeps it possible): an approximation that retraining on
        every domain's texts (``train``) does not need.  It has no ``explained`` thresholds: one more domain
        changes every domain's evidence (``text.explained.calibrate`` measures them again)."""
        counted = Counter(f for text in texts for f in features(text))
        vocabulary = self.vocabulary + sorted({w for w, _ in counted.most_common(features_per_domain)}
                                              - set(self.vocabulary))
        counts = {d: row + [0] * (len(vocabulary) - len(row)) for d, row in self.counts.items()}
        counts[domain] = [counted[w] for w in vocabulary]
        totals = {**self.totals, domain: sum(counts[domain])}
        return DomainClassifier(vocabulary, counts, totals, self.made_by)

    def log_likelihoods(self, text: str) -> Dict[str, float]:
        """Per domain, the log-probability of ``text``'s known features (0 for every domain when none is known):
        what ``scores`` normalises. Features are counted independently, so two texts' add up to those of the
        two together: a paragraph's evidence is its sentences' summed (``text.routing``)."""
        ids = [self._index[f] for f in features(text) if f in self._index]
        return {d: sum(self._log[d][i] for i in ids) for d in self.domains}

    def evidence(self, text: str) -> Dict[str, float]:
        """Per domain, how strongly ``text``'s features point to it: the mean over its features (words and
        4-grams, ``features``) of log p(feature | domain) minus the largest log p(feature | other domain), a
        feature outside the vocabulary (rare in every domain) counting 0.  A mean, not a sum: it does not grow
        with the text as the posterior does.  Words that every domain uses alike, or none knows, bring it near 0;
        empty ({}) for a text without features or a classifier of one domain (nothing to compare with)."""
        found = features(text)
        if len(self.domains) < 2 or not found:
            return {}
        ids = [self._index[f] for f in found if f in self._index]
        out = {}
        for d in self.domains:
            others = [self._log[o] for o in self.domains if o != d]
            mine = self._log[d]
            out[d] = sum(mine[i] - max(row[i] for row in others) for i in ids) / len(found)
        return out

    @staticmethod
    def posterior(logs: Mapping[str, float]) -> Dict[str, float]:
        """Each domain's probability from its log-likelihood (``log_likelihoods``, or a sum of them): uniform
        priors."""
        top = max(logs.values())
        exp = {d: math.exp(v - top) for d, v in logs.items()}
        total = sum(exp.values())
        return {d: v / total for d, v in exp.items()}

    def scores(self, text: str) -> Dict[str, float]:
        """Each domain's posterior probability for ``text`` (uniform when it has no known word)."""
        return self.posterior(self.log_likelihoods(text))

    def best(self, scores: Mapping[str, float], default: Optional[str] = None) -> Prediction:
        """The most likely domain of ``scores`` (``posterior``'s) and its probability; ``default`` (else the first
        domain) when they are all equal (no known word)."""
        best = max(self.domains, key=lambda d: scores[d])  # the first of equal ones
        if len(set(scores.values())) == 1:
            best = default if default in scores else self.domains[0]
        return best, scores[best]

    def predict(self, texts: Sequence[str], default: Optional[str] = None) -> List[Prediction]:
        """Per text, its most likely domain and that domain's probability; a text with no known word gets
        ``default`` (else the first domain) with probability 1 / number of domains."""
        return [self.best(self.scores(text), default) for text in texts]

    def to_dict(self) -> Dict[str, object]:
        data = {"schema": SCHEMA, "made_by": self.made_by, "domains": self.domains, "vocabulary": self.vocabulary,
                "counts": self.counts, "totals": self.totals}
        return {**data, "explained": self.explained} if self.explained is not None else data

    def save(self, folder: Union[str, Path]) -> Path:
        """Write ``domains.json`` into ``folder`` (a model's ``save_pretrained`` folder)."""
        path = Path(folder) / DOMAINS_FILE
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n",
                        encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DomainClassifier":
        """The classifier ``to_dict`` wrote; ``ValueError`` naming what is wrong with anything else."""
        if data.get("schema") != SCHEMA:
            raise ValueError(f"{DOMAINS_FILE} has schema {data.get('schema')!r}; this version reads {SCHEMA}")
        try:
            return cls(data["vocabulary"], data["counts"], data["totals"], str(data.get("made_by", "")),
                       data.get("explained"))  # optional: files written before it was measured have none
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{DOMAINS_FILE} is not a domain classifier: {exc!r}") from exc

    @classmethod
    def from_folder(cls, folder: Union[str, Path]) -> Optional["DomainClassifier"]:
        """The classifier stored in ``folder`` (None when it has no ``domains.json``); ``ValueError`` for a
        file that is not one."""
        path = Path(folder) / DOMAINS_FILE
        data = read_domains(str(path)) if path.is_file() else None
        return cls.from_dict(data) if data is not None else None


def check_explained(explained: Any, domains: Sequence[str]) -> Dict[str, Any]:
    """``domains.json``'s optional ``explained``: ``{"share": 0.98, "min_words": 3, "thresholds": {domain: {lang or
    "*": evidence}}}``, a threshold for every domain (``text.explained``); ``ValueError`` naming what is wrong."""
    try:
        share, least, thresholds = explained["share"], explained["min_words"], explained["thresholds"]
        ok = 0 < share <= 1 and isinstance(least, int) and least >= 1 and set(thresholds) == set(domains) and all(
            "*" in row and all(isinstance(v, (int, float)) and math.isfinite(v) for v in row.values())
            for row in thresholds.values())
    except (KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise ValueError(f"explained must be {{'share': 0..1, 'min_words': n, 'thresholds': {{domain: {{'*': number, "
                         f"lang: number, ...}}}}}} for the domains {list(domains)}, got {str(explained)[:200]}")
    return {"share": float(share), "min_words": least,
            "thresholds": {d: {k: float(v) for k, v in thresholds[d].items()} for d in domains}}


# one classifier per model object while its ``domain_data`` (what hub loading read from domains.json) is unchanged
_CLASSIFIERS: WeakVersionCache[Optional[DomainClassifier]] = WeakVersionCache(
    lambda model: id(getattr(model, "domain_data", None)))


def model_domain_classifier(model: Any) -> Optional[DomainClassifier]:
    """The classifier a loaded model ships (``model.domain_data``, from its ``domains.json``), else None."""
    def build(m: Any) -> Optional[DomainClassifier]:
        data = getattr(m, "domain_data", None)
        return DomainClassifier.from_dict(data) if data else None
    return _CLASSIFIERS.get(model, build)
