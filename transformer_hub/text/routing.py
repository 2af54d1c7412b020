"""Which domain each sentence is read as when the caller names none (``domain="auto"``), so that a text mixing
image captions and software help sends each sentence to its own domain's model and domain tag.

The rule: a sentence is read as the domain the classifier (``domain.DomainClassifier``) gives its own words when
it has at least ``MIN_WORDS`` words and that domain's probability is at least ``SURE``; otherwise as its
paragraph's (``Segmented.paragraph_sizes``: up to a blank line), told the same way from the paragraph's words;
otherwise as its text's; and in a document (``document_ids``: a format's paragraphs, cells and headings are its
texts) a text too short to be sure of takes the whole document's.  The last level decides whatever its
probability, as the whole text did before its sentences were told apart.  Words, not only the probability: naive
Bayes is sure of a word or two it has no grounds for (LibreOffice's help lists languages, and "Marathi" reads as
captions at 0.9999).  On both domains' val splits (4 languages; ``tests/test_domain_routing.py`` measures it) a
segment of one or two words is put in the wrong domain 23.0 % of the time, one of 3 words or more 0.42 %; with 3
words and 0.99, 99.7 % of the captions and 84.0 % of the software sentences are told on their own, 0.05 % and
0.21 % of those wrongly, and the rest take the domain of their paragraph or text.

Evidence adds up (``DomainClassifier.log_likelihoods``): a paragraph's is its sentences' summed, a document's its
texts', so every word is scored once however many levels look at it.

    told = tell_domains(models, texts, layouts, "auto")
    told[0].sentences      # [("captions", 0.99..), ("software", 1.0), ...]: each sentence's domain and probability
    told[0].domain         # the domain most of its sentences were read as
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..decoding.config import one_per_text
from .domain import DomainClassifier, words
from .models import Models
from .segmentation import Segmented

AUTO = "auto"
MIN_WORDS = 3  # words a sentence (or paragraph, or text) needs to be told on its own
SURE = 0.99  # and the probability of its domain
Told = Tuple[Optional[str], Optional[float]]  # a domain and the classifier's probability of it (None: given)


@dataclass
class TextDomains:
    """One text's domains: each segment's (domain, probability of the level that told it), and the text's own,
    the domain most of its segments were read as with their mean probability (without segments: the text's)."""

    domain: Optional[str]
    confidence: Optional[float]
    sentences: List[Told]


@dataclass(frozen=True)
class _Evidence:
    logs: Dict[str, float]  # per domain, the log-likelihood of the words
    words: int

    def __add__(self, other: "_Evidence") -> "_Evidence":
        return _Evidence({d: v + other.logs[d] for d, v in self.logs.items()}, self.words + other.words)


def check_domains(models: Models, domains: Sequence[Optional[str]]) -> Tuple[str, ...]:
    """The models' domains; a given domain (not None or "auto") that none knows is a ``ValueError``."""
    known = models.domains()
    for name in dict.fromkeys(d for d in domains if d not in (None, AUTO)):
        if name not in known:
            raise ValueError(f"unknown domain {name!r}: " + (f"the domains are {', '.join(known)} (or auto)" if known
                             else f"{'this model was' if models.one_model else 'the models were'} trained without "
                                  "domains (give none)"))
    return known


def tell_domains(models: Models, texts: Sequence[str], layouts: Sequence[Segmented], domain,
                 document_ids: Optional[Sequence] = None) -> List[TextDomains]:
    """Per text, its segments' domains and its own: as given (one name, or one per text; None: the models'
    default), or for "auto" by the rule above with the models' ``domain_classifier`` (None where they ship none).
    ``document_ids``: one per text, texts with the same id being parts of one document (one id: all are)."""
    domains = one_per_text(domain, len(texts), "domain", "one name")
    known = check_domains(models, domains)
    classifier = models.domain_classifier() if AUTO in domains else None
    return told_by(classifier, known, texts, layouts, domains, document_ids)


def told_by(classifier: Optional[DomainClassifier], known: Sequence[str], texts: Sequence[str],
            layouts: Sequence[Segmented], domains: List[Optional[str]],
            document_ids: Optional[Sequence] = None) -> List[TextDomains]:
    """``tell_domains`` with its ``classifier`` (None: none ships) and ``known`` domains given, ``domains`` one per
    text: what it does without a ``Models`` (in a document's worker process, ``text.cut``)."""
    groups = None if document_ids is None else [document_ids] * len(texts) if isinstance(document_ids, (str, int)) \
        else one_per_text(document_ids, len(texts), "document_ids", "one id")  # one id: the texts are one document
    auto = [i for i, d in enumerate(domains) if d == AUTO]
    out = []
    for name, layout in zip(domains, layouts):
        name = None if name == AUTO else name  # auto without a classifier: the default domain
        out.append(TextDomains(name, None, [(name, None)] * len(layout.segments)))
    if classifier is not None and auto:
        default = known[0] if known else None
        found = _told(classifier, [texts[i] for i in auto], [layouts[i] for i in auto],
                      [groups[i] for i in auto] if groups is not None else [None] * len(auto), default)
        for i, (sentences, context) in zip(auto, found):
            sentences = [t if t[0] in known else (None, None) for t in sentences]
            context = context if context[0] in known else (None, None)
            out[i] = TextDomains(*_main(sentences, context), sentences)
    return out


def _told(classifier: DomainClassifier, texts: List[str], layouts: List[Segmented], groups: list,
          default: Optional[str]) -> List[Tuple[List[Told], Told]]:
    """Per text, each segment's domain and the text's own (the context of its sentences that are not sure)."""
    def evidence(text: str) -> _Evidence:
        return _Evidence(classifier.log_likelihoods(text), len(words(text)))

    segments = [[evidence(s) for s in layout.segments] for layout in layouts]
    whole = [sum(found[1:], found[0]) if found else evidence(text) for found, text in zip(segments, texts)]
    documents: Dict[object, _Evidence] = {}
    for group, found in zip(groups, whole):
        if group is not None:
            documents[group] = documents[group] + found if group in documents else found
    out = []
    for found, text, layout, group in zip(segments, whole, layouts, groups):
        above = [text] + ([documents[group]] if group is not None else [])
        context = next(filter(None, (_sure(classifier, e) for e in above)), None) or \
            classifier.best(classifier.posterior(above[-1].logs), default)
        told, start = [], 0
        for size in layout.paragraph_sizes:
            part = found[start:start + size]
            paragraph = _sure(classifier, sum(part[1:], part[0])) or context
            told += [_sure(classifier, e) or paragraph for e in part]
            start += size
        out.append((told, context))
    return out


def _sure(classifier: DomainClassifier, evidence: _Evidence) -> Optional[Told]:
    """The domain of ``evidence`` when it has ``MIN_WORDS`` words and a probability of at least ``SURE``."""
    if evidence.words < MIN_WORDS:
        return None
    domain, p = classifier.best(classifier.posterior(evidence.logs))
    return (domain, p) if p >= SURE else None


def _main(sentences: List[Told], context: Told) -> Told:
    """The domain most of ``sentences`` were read as (ties: the text's own ``context``, then the first), with
    their mean probability; ``context`` for a text without sentences."""
    counts = Counter(d for d, _ in sentences)
    if not counts:
        return context
    main = max(dict.fromkeys([context[0]] + [d for d, _ in sentences]), key=lambda d: counts.get(d, 0))
    probabilities = [p for d, p in sentences if d == main and p is not None]
    return main, (sum(probabilities) / len(probabilities) if probabilities else None)


def domain_counts(results: Iterable) -> Dict[str, int]:
    """How many sentences of ``results`` (pipeline results: a text's, or a document's texts') were read as each
    domain, most first (ties in the order they come); more than one entry: they mix domains."""
    counts: Counter = Counter()
    for result in results:
        counts.update(result.domain_counts)
    return dict(counts.most_common())


def describe_domains(counts: Mapping[str, int], labels: Optional[Mapping[str, str]] = None) -> str:
    """``counts`` in words: "2 sentences read as software, 1 as captions" (``labels``: how to name a domain)."""
    named = [(n, (labels or {}).get(d, d)) for d, n in counts.items()]
    return ", ".join(f"{n} sentence{'s' * (n != 1)} read as {label}" if k == 0 else f"{n} as {label}"
                     for k, (n, label) in enumerate(named))
