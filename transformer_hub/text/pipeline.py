"""The front door for texts, ``translate_texts``: per text its language (given, or detected once per text:
docs/design.md says why), its sentences, the model for its direction, one decoding call per model for every
sentence of the call, the text put back together in its layout, and a record of what was done (``src_lang``,
``src_lang_confidence``, ``domain``, ``model``, ``engine``, ``unchanged``, ``layout``; each sentence's ``domain``,
``model`` and ``engine`` too: with ``domain="auto"`` each sentence is told its own, ``text.routing``).

The Python API, the CLI and the Space's page, documents and REST routes all come here; none of them splits,
detects, chooses or joins on its own, and sentences go down to ``decoding.generate``, which never comes back up.
Where they are decoded is a ``Models`` (``text.models``: ``OneModel``, which a model object stands for,
``ModelSet``, ``rerank.RerankedModel``, the Space's), which also decides what ``quality`` ("fast", "best") means:
the pipeline itself never reranks.

    results = translate_texts(model, [paragraph], src_lang="auto", tgt_lang="de", strategy="beam")
    results[0].text, results[0].src_lang, results[0].model, [s.text for s in results[0].sentences]
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..decoding import DecodingConfig, Hypothesis, TranslationResult, generate
from ..decoding.api import check_texts, resolve_config
from ..decoding.config import length_penalty, one_per_text
from ..decoding.constraints import Term
from .cut import Cut, check_cut, text_layout as _layout
from .domain import model_domain_classifier
from . import explained
from .routing import AUTO, TextDomains, tell_domains
from .detection import detect_language, too_short_to_detect, unserved_language
from .glossary import Entry, Glossary
from .models import Models, ModelSet, OneModel, check_quality  # noqa: F401 - ModelSet, OneModel: the Models callers pass
from .segmentation import Segmented, has_words, language_name
from .placeholders import mask, unmask_result
from .verbatim import restore_results, with_attention

# A text detected as the target language with at least this confidence is refused ("already in German");
# below it the detection is unsure (short texts: "A dog." is 0.51 English among en/de/fr/cs) and the most
# likely of the other languages is taken instead.
SAME_AS_TARGET = 0.9
CONFIG_FIELDS = frozenset(f.name for f in fields(DecodingConfig))  # the options that are decoding overrides


class TextError(ValueError):
    """What stops one text of a call: ``index`` (0-based) names it; ``kind`` says why: "unserved" (written in a
    language no model reads: ``code``), "same-language" (already in its target, ``code``), "direction" (no model
    translates its pair); a server words its answer from these."""

    def __init__(self, message: str, index: int, kind: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.index, self.kind, self.code = index, kind, code


def detect_sources(models: Models, texts: List[str], src_lang, tgt_lang, keep_target_language: bool = False
                   ) -> Tuple[list, List[Optional[float]], List[Optional[str]]]:
    """Per text: the source code to use ("auto" entries detected), the detection's confidence (else None), and
    why it stays as it is (too short to detect: ``detection.too_short_to_detect``; ``keep_target_language``:
    already in its target language; else None).

    A text in a language outside ``models.languages()`` is a ``TextError`` (a ``ValueError``), and so is one
    already in its target language unless ``keep_target_language``.
    """
    sources = one_per_text(src_lang, len(texts), "src_lang", "one code")
    targets = one_per_text(tgt_lang, len(texts), "tgt_lang", "one code")
    confidences: List[Optional[float]] = [None] * len(texts)
    unchanged: List[Optional[str]] = [None] * len(texts)
    auto = [i for i, lang in enumerate(sources) if lang == AUTO]
    if not auto:
        return sources, confidences, unchanged
    served = models.languages()
    picked = detect_language([texts[i] for i in auto], served)
    foreign = unserved_language([texts[i] for i in auto], served)
    default_target = models.default_languages()[1]
    does, serves = ("this model does", "it serves") if models.one_model else ("the models do", "they serve")
    for i, found, other in zip(auto, picked, foreign):
        code, confidence = found
        if not has_words(texts[i]):  # nothing to detect (blank, emoji, numbers): the default, not detected
            sources[i] = None
            continue
        if too_short_to_detect(texts[i], found):  # a guess on a word or two: left as it is
            sources[i], confidences[i], unchanged[i] = code, confidence, "too short to detect its language"
            continue
        if other is not None:
            raise TextError(f"text {i + 1} looks like {language_name(other)} ({other}), which {does} not read; "
                            f"{serves} {', '.join(served)}", i, "unserved", other)
        target = targets[i] if targets[i] is not None else default_target
        if code == target and confidence >= SAME_AS_TARGET:
            if not keep_target_language:
                raise TextError(f"text {i + 1} is already in {language_name(code)} (detected, {confidence:.2f}), "
                                "the target language: pick another target", i, "same-language", code)
            unchanged[i] = f"already in {language_name(code)}"
        elif code == target:
            code, confidence = detect_language([texts[i]], [c for c in served if c != target])[0]
        sources[i], confidences[i] = code, confidence
    return sources, confidences, unchanged


def combined(sentences: List[TranslationResult], layout: Segmented, alpha: float) -> List[Hypothesis]:
    """A whole text's hypotheses: the k-th of them puts each sentence's k-th best output (its last when it has
    fewer) in the text's layout, scores added up."""
    n = max((len(r.hypotheses) for r in sentences), default=1)
    out = []
    for k in range(n):
        picked = [r.hypotheses[min(k, len(r.hypotheses) - 1)] for r in sentences]
        logprobs = [lp for h in picked for lp in h.token_logprobs]
        score = float(sum(h.score for h in picked))
        out.append(Hypothesis(text=layout.join([h.text for h in picked]), tokens=[t for h in picked for t in h.tokens],
                              token_logprobs=logprobs, score=score,
                              normalized_score=score / length_penalty(len(logprobs), alpha) if logprobs else 0.0,
                              finished=all(h.finished for h in picked)))
    return out


def joined(text: str, part: List[TranslationResult], layout: Segmented, alpha: float) -> TranslationResult:
    """A whole text's result from its sentences' (``part``), with what they had to contain and what they warn."""
    return TranslationResult(source=text, hypotheses=combined(part, layout, alpha),
                             source_pieces=[p for r in part for p in r.source_pieces],
                             source_ids=[t for r in part for t in r.source_ids],
                             truncated=any(r.truncated for r in part), sentences=part,
                             constraints=[c for r in part for c in r.constraints],
                             warnings=[w for r in part for w in r.warnings],
                             glossary=list(dict.fromkeys(e for r in part for e in r.glossary)))


def generate_texts(model: Any, texts: Sequence[str], config: Optional[DecodingConfig] = None, *,
                   split_sentences: bool = False, glossary=None, **options: Any) -> List[TranslationResult]:
    """``decoding.generate``, or ``translate_texts`` with ``model`` where the texts need this pipeline (sentences to
    split, "auto" for any text's ``src_lang``, or its ``domain`` (the default) on a model that ships a domain
    classifier, a glossary's terms to find): for callers whose options decide."""
    options.setdefault("domain", AUTO)
    auto = [name for name in ("src_lang", "domain") if AUTO in _as_list(options[name] if name in options else None)]
    if "domain" in auto and model_domain_classifier(model) is None:  # nothing tells the domain: the model's default
        options["domain"] = None if isinstance(options["domain"], str) else [
            None if d == AUTO else d for d in options["domain"]]
        auto.remove("domain")
    if split_sentences or glossary is not None or auto:
        return translate_texts(model, texts, config, split_sentences=split_sentences, glossary=glossary, **options)
    return generate(model, texts, config, **options)


def _as_list(value: Any) -> list:
    return [value] if isinstance(value, str) or value is None else list(value)


def translate_texts(models: Any, texts: Sequence[str], config: Optional[DecodingConfig] = None, *,
                    src_lang=None, tgt_lang=None, split_sentences: bool = True, prefix=None,
                    keep_target_language: bool = False, constraints=None, glossary=None,
                    check_size: Optional[Callable[[int], None]] = None,
                    on_chunk: Optional[Callable[[int, int], None]] = None, chunk_size: Optional[int] = None,
                    quality: str = "fast", domain=AUTO, document_ids: Optional[Sequence] = None,
                    cut: Optional[Cut] = None, **options: Any) -> List[TranslationResult]:
    """One result per text, in order.  ``models``: a model object or a ``Models``; ``config`` and keyword
    overrides of its fields as for ``decoding.generate``, whose other ``options`` (``progress``, ``workers``,
    ``engine``) go to the decoding call.  ``src_lang``: a code, "auto" (each text's language detected among the
    models' own), or one per text.  ``split_sentences``: each sentence decoded on its own (``result.sentences``),
    the outputs put back in the text's layout; else the text is one sentence.  Each model decodes all its sentences
    in one call (``chunk_size`` at a time when given, ``on_chunk(done, total)`` before each).  ``prefix`` (one per
    text) needs ``split_sentences=False``, and so do ``constraints`` (one list of target phrases per text).
    ``glossary`` (a ``Glossary``, a dict of source -> target terms, or TSV text): the target term of every entry
    found in a sentence (for its direction) is added to its constraints, and the result lists the entries in
    ``glossary``.  ``check_size(n)`` sees the number of sentences to decode before any is (it raises to refuse
    them).  ``quality`` ("fast" or "best") goes to ``models.choose`` and ``models.decode``.  ``domain`` (one name or
    one per text; None: the models' default domain; "auto", the default: where the models ship a domain classifier,
    each sentence's, or for one too short to be sure of its paragraph's or text's, ``text.routing``) chooses the
    model that scores the domain best and is the domain tag of a model trained with tags: a text mixing domains
    has its sentences decoded by their own (``result.mixed_domains``, ``result.domain_counts``).  ``document_ids``
    (one per text): texts with the same id are parts of one document, whose domain a text too short to tell takes.
    ``cut``: the texts' sentences (and for "auto" their domains) found already (``text.cut``: in a document's worker
    process), neither found again.

    A text without anything to translate (blank, or no words: see ``split_sentences``) comes back as it is, its
    ``unchanged`` saying why; so does one too short to detect (``src_lang="auto"``), and one already in its
    target language with ``keep_target_language``."""
    models = models if isinstance(models, Models) else OneModel(models)
    config = resolve_config(config, {name: options.pop(name) for name in list(options) if name in CONFIG_FIELDS})
    texts = check_texts(texts)
    options["quality"] = check_quality(quality)  # both the model's choice and its decoding see it
    if split_sentences and prefix not in (None, "") and (isinstance(prefix, str) or any(prefix)):
        raise ValueError("prefix forces the start of one sentence: it cannot be used with split_sentences=True")
    glossary = Glossary.coerce(glossary) if glossary is not None else None
    given = _given_constraints(constraints, len(texts), split_sentences)
    plan = _plan(models, texts, src_lang, tgt_lang, keep_target_language, (domain, document_ids), split_sentences,
                 prefix, quality, check_cut(cut, texts, src_lang, split_sentences))
    if check_size is not None:
        check_size(sum(len(layout.segments) for layout in plan.layouts))
    decoded, engines = _decode_all(models, plan, given, glossary, config, split_sentences, options, chunk_size,
                                   on_chunk)
    return [_text_result(i, text, decoded.get(i, []), plan, engines, config.length_penalty, split_sentences)
            for i, text in enumerate(texts)]


class _Row(NamedTuple):
    """One sentence to decode: its text's index, its own index in the text, its words, the text's prefix, the
    phrases its output must hold and the glossary entries they come from."""
    text: int
    index: int
    sentence: str
    prefix: Optional[str]
    constraints: list
    entries: List[Entry]


@dataclass
class _Plan:
    """Per text of a call: its direction, found or given, its prefix, layout and domains (``text.routing``), and
    per segment the model that decodes it."""
    sources: list
    targets: list
    confidences: List[Optional[float]]
    domains: List[TextDomains]
    prefixes: list
    layouts: List[Segmented]
    names: List[List[str]]
    unchanged: List[Optional[str]]
    fits: List[List[Optional[explained.Fit]]]  # per segment, how well the classifier's domains explain it
    unfamiliar: str  # why a segment no domain explains is flagged (``explained.reason``)


def _plan(models: Models, texts: List[str], src_lang, tgt_lang, keep_target_language: bool, domain,
          split: bool, prefix, quality: str, cut: Optional[Cut] = None) -> _Plan:
    """Each text's languages (detected where asked), layout, domains (``domain``: the argument and the
    ``document_ids``; the ``cut``'s where found already) and each segment's model."""
    sources, confidences, unchanged = detect_sources(models, texts, src_lang, tgt_lang, keep_target_language)
    default_source, default_target = models.default_languages()
    sources = [default_source if lang is None else lang for lang in sources]
    targets = [default_target if lang is None else lang for lang in one_per_text(tgt_lang, len(texts), "tgt_lang")]
    prefixes = one_per_text(prefix, len(texts), "prefix")
    layouts = list(cut.layouts) if cut is not None else [_layout(text, lang, split, why)
                                                         for text, lang, why in zip(texts, sources, unchanged)]
    unchanged = [why or (None if layout.segments else "no words to translate" if text.strip() else "empty")
                 for text, layout, why in zip(texts, layouts, unchanged)]
    found = cut is not None and cut.domains is not None and domain[0] == AUTO
    domains = list(cut.domains) if found else tell_domains(models, texts, layouts, *domain)
    chosen: Dict[tuple, str] = {}  # one choice per direction and domain
    for i, told in enumerate(domains):
        for key in dict.fromkeys((sources[i], targets[i], d) for d, _ in told.sentences):
            if key not in chosen:
                chosen[key] = _choose(models, i, *key[:2], quality, key[2])
    names = [[chosen[(sources[i], targets[i], d)] for d, _ in told.sentences] for i, told in enumerate(domains)]
    classifier = models.domain_classifier()  # given a domain or not: a text none explains is flagged
    fits = [[explained.fit(classifier, s, lang) for s in layout.segments] for layout, lang in zip(layouts, sources)]
    why = explained.reason(classifier.domains if classifier else (), models.domain_labels(), models.one_model)
    return _Plan(sources, targets, confidences, domains, prefixes, layouts, names, unchanged, fits, why)


def _decode_all(models: Models, plan: _Plan, given: list, glossary: Optional[Glossary], config: DecodingConfig,
                split: bool, options: Dict[str, Any], chunk_size: Optional[int],
                on_chunk: Optional[Callable[[int, int], None]]) -> Tuple[Dict[int, list], Dict[str, str]]:
    """Every sentence of the plan decoded, one call per model for all its sentences, whatever their texts
    (``chunk_size`` sentences at a time, ``on_chunk`` told before each): per text its sentences' results in order
    (with the glossary entries that applied), per model the engine that decoded them."""
    decoded: Dict[int, List[TranslationResult]] = {i: [None] * len(names) for i, names in enumerate(plan.names)}
    engines: Dict[str, str] = {}
    done, total = 0, sum(len(layout.segments) for layout in plan.layouts)
    for name in dict.fromkeys(n for names in plan.names for n in names):
        flat = [(i, k, plan.layouts[i].segments[k]) for i, names in enumerate(plan.names)
                for k, n in enumerate(names) if n == name]
        phrases, applied = _sentence_constraints(glossary, given, [(i, s) for i, _, s in flat], plan.sources,
                                                 plan.targets)
        rows = [_Row(i, k, s, plan.prefixes[i], p, e) for (i, k, s), p, e in zip(flat, phrases, applied)]
        step = max(1, chunk_size or len(rows))
        for part in (rows[start:start + step] for start in range(0, len(rows), step)):
            if on_chunk is not None:  # before the call, so a bar shows where a slow chunk is
                on_chunk(done, total)
            results, engines[name] = _decode(models, name, part, plan, config, split, options)
            for row, result in zip(part, results):
                result.glossary, result.model, result.engine = row.entries, name, engines[name]
                decoded[row.text][row.index] = result
            done += len(part)
    return {i: part for i, part in decoded.items() if part}, engines


def _text_result(i: int, text: str, part: List[TranslationResult], plan: _Plan, engines: Dict[str, str],
                 alpha: float, split: bool) -> TranslationResult:
    """Text ``i``'s result from its sentences' (``part``), with the record of what was done: the text's domain
    is the one most of its sentences were read as, its model and engine those of that domain's sentences."""
    told = plan.domains[i]
    result = joined(text, part, plan.layouts[i], alpha) if split or not part else part[0]
    main = next((k for k, (d, _) in enumerate(told.sentences) if d == told.domain), None)
    result.model = plan.names[i][main] if main is not None else None
    result.engine, result.unchanged = engines.get(result.model), plan.unchanged[i]
    result.layout = plan.layouts[i]
    records = [(result, (told.domain, told.confidence))] + list(zip(result.sentences or [], told.sentences))
    for r, (domain, confidence) in records:
        r.src_lang, r.src_lang_confidence = plan.sources[i], plan.confidences[i]
        r.domain, r.domain_confidence = domain, confidence
    explained.mark(result, plan.fits[i], plan.unfamiliar)
    return result


def _choose(models: Models, index: int, src_lang: Optional[str], tgt_lang: Optional[str], quality: str,
            domain: Optional[str] = None) -> str:
    try:
        return models.choose(src_lang, tgt_lang, quality, domain)
    except TextError:
        raise
    except ValueError as exc:  # no model for the direction: the same message, naming the text
        raise TextError(str(exc), index, "direction") from exc


def _given_constraints(constraints, n: int, split: bool) -> list:
    """``constraints`` as one list of phrases (or None) per text; they belong to a whole text, not its sentences."""
    if constraints is None or not any(constraints):
        return [None] * n
    if split:
        raise ValueError("constraints are given per text: they cannot be used with split_sentences=True")
    if isinstance(constraints, str):
        raise ValueError("constraints needs one list of target phrases per text, e.g. [['Fahrrad'], []]")
    given = one_per_text(constraints, n, "constraints", "one list of phrases per text")
    for phrases in given:
        if isinstance(phrases, str):
            raise ValueError(f"each text's constraints are a list of phrases; got the string {phrases!r}: "
                             "wrap it in a list")
    return given


def _sentence_constraints(glossary: Optional[Glossary], given: list, flat: List[Tuple[int, str]], sources: list,
                          targets: list) -> Tuple[List[list], List[List[Entry]]]:
    """Per sentence of ``flat`` ((text index, sentence) pairs): the phrases its output must hold (its text's given
    constraints, then the target terms of the glossary entries found in it) and those entries."""
    per_pair: Dict[tuple, Glossary] = {}
    phrases, applied = [], []
    for i, sentence in flat:
        terms, entries = [], []
        if glossary is not None:
            pair = (sources[i], targets[i])
            if pair not in per_pair:
                per_pair[pair] = glossary.for_pair(*pair)
            (entries,) = per_pair[pair].constraints([sentence])[1]
            # a Term knows its source words: constrained search anchors it there (decoding/anchoring.py)
            terms = [Term(e.target, e.source) for e in entries]
        own = list(given[i] or [])
        by_target = {t.target: t for t in reversed(terms)}  # one per target term: the first entry's
        phrases.append(own + [by_target[t] for t in dict.fromkeys(t.target for t in terms) if t not in own])
        applied.append(entries)
    return phrases, applied


# Sentences decoded at once when cross-attention is asked only to put wordless pieces back: a hypothesis holds
# (layers, heads, T, S) floats of it (megabytes for a long output), so a call over thousands of sentences held
# gigabytes until its end; ATTENTION_PART at a time, each part's dropped once its pieces are restored.
ATTENTION_PART = 64


def _decode(models: Models, name: str, part: list, plan: _Plan, config: DecodingConfig, split: bool,
            options: Dict[str, Any]) -> Tuple[List[TranslationResult], str]:
    """One decoding call: the sentences (``_Row``) of ``part`` with ``name``."""
    given, own = options, models.domains(name)
    if own:  # a model trained with domain tags reads each sentence's (the others have none)
        told = [plan.domains[row.text].sentences[row.index][0] for row in part]
        options = {**options, "domain": [d if d in own else None for d in told]}
    extra: Dict[str, Any] = {} if split else {"prefix": [row.prefix for row in part]}
    if any(row.constraints for row in part):  # else plain search: engines without constrained search serve the call
        extra["constraints"] = [row.constraints for row in part]
    masked = [mask(row.sentence) for row in part]  # placeholders and markup as numbered marks the model copies
    sentences, tokenizer = [m.text for m in masked], models.tokenizer(name, options) if split else None
    asked = with_attention(config, sentences) if tokenizer is not None else config  # to keep pieces verbatim
    if asked.return_attention and not config.return_attention and len(part) > ATTENTION_PART:
        results, engine = [], ""  # attention only to restore pieces: a part at a time, each let go once used
        for start in range(0, len(part), ATTENTION_PART):
            done, engine = _decode(models, name, part[start:start + ATTENTION_PART], plan, config, split, given)
            results += done
        return results, engine
    results, engine = models.decode(name, sentences, [plan.sources[row.text] for row in part],
                                    [plan.targets[row.text] for row in part], asked, **extra, **options)
    if split:
        restore_results(results, tokenizer, keep_attention=config.return_attention)
    for marks, result in zip(masked, results):
        unmask_result(marks, result)
    return results, engine
