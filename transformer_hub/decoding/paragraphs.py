"""``generate``'s text options: ``src_lang="auto"`` (per text) and ``split_sentences=True`` (layout kept).

Detection runs once per *text* (a paragraph is one language far more often than it mixes them, and a whole
text gives the detector more to go on than its shortest sentence); the detected code is then what the pair
check, the language tag and the sentence splitter use.  With splitting, every sentence of every text is one
entry of a single ``generate`` call (one batch), and each text's result is put back together:
``result.text`` has the text's layout, ``result.sentences`` the per-sentence results.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

from .. import text as text_mod
from .config import DecodingConfig, length_penalty, one_per_text
from .results import Hypothesis, TranslationResult

AUTO = "auto"
# A text detected as the target language with at least this confidence is refused ("already in German");
# below it the detection is unsure (short texts: "A dog." is 0.51 English among en/de/fr/cs) and the most
# likely of the other languages is taken instead.
SAME_AS_TARGET = 0.9


def wants_detection(src_lang) -> bool:
    """True when ``src_lang`` (one code or one per text) asks for detection anywhere."""
    if src_lang is None or isinstance(src_lang, str):
        return src_lang == AUTO
    return any(lang == AUTO for lang in src_lang)


def candidates(config) -> List[str]:
    """The languages a text may be detected as: every language the model reads or writes."""
    if config.languages:
        return list(config.languages)
    langs = [lang for lang in (config.src_lang, config.tgt_lang) if lang]
    if not langs:
        raise ValueError("src_lang='auto' needs a model that names its languages (config src_lang/tgt_lang "
                         "or languages); give src_lang=None for this one")
    return list(dict.fromkeys(langs))


def detect_sources(config, texts: List[str], src_lang, tgt_lang,
                   served: Optional[List[str]] = None) -> Tuple[list, List[Optional[float]]]:
    """Per text: the source code to use ("auto" entries detected) and the detection's confidence (else None).

    Detected among ``served`` (default: the model's languages, ``config`` may then be None).  A text in a
    language outside them, or already in its target language, is a ``ValueError``.
    """
    sources = one_per_text(src_lang, len(texts), "src_lang", "one code")
    targets = one_per_text(tgt_lang, len(texts), "tgt_lang", "one code")
    auto = [i for i, lang in enumerate(sources) if lang == AUTO]
    served = list(served) if served is not None else candidates(config)
    picked = text_mod.detect_language([texts[i] for i in auto], served)
    foreign = text_mod.unserved_language([texts[i] for i in auto], served)
    confidences: List[Optional[float]] = [None] * len(texts)
    default_target = config.tgt_lang if config is not None and not config.languages else None
    for i, (code, confidence), other in zip(auto, picked, foreign):
        if not texts[i].strip():  # nothing to detect: the model's default, reported as not detected
            sources[i] = None
            continue
        if other is not None:
            raise ValueError(f"text {i + 1} looks like {text_mod.language_name(other)} ({other}), which "
                             f"{'this model does' if config is not None else 'the models do'} not read; "
                             f"{'it serves' if config is not None else 'they serve'} {', '.join(served)}")
        target = targets[i] if targets[i] is not None else default_target
        if code == target and confidence >= SAME_AS_TARGET:
            raise ValueError(f"text {i + 1} is already in {text_mod.language_name(code)} (detected, "
                             f"{confidence:.2f}), the target language: pick another target")
        if code == target:
            code, confidence = text_mod.detect_language([texts[i]], [c for c in served if c != target])[0]
        sources[i], confidences[i] = code, confidence
    return sources, confidences


def given_sources(config, n: int, src_lang) -> list:
    """Per text, the source code a result reports when none was detected: the given one, else the model's own."""
    return [lang if lang is not None else config.src_lang for lang in one_per_text(src_lang, n, "src_lang", "one code")]


def _combined(sentences: List[TranslationResult], layout: text_mod.Segmented, alpha: float) -> Hypothesis:
    """One hypothesis for a whole text: the sentences' best outputs in the text's layout, scores added up."""
    best = [r.best for r in sentences]
    logprobs = [lp for h in best for lp in h.token_logprobs]
    score = float(sum(h.score for h in best))
    return Hypothesis(text=layout.join([h.text for h in best]), tokens=[t for h in best for t in h.tokens],
                      token_logprobs=logprobs, score=score,
                      normalized_score=score / length_penalty(len(logprobs), alpha) if logprobs else 0.0,
                      finished=all(h.finished for h in best))


def generate_split(generate: Callable[..., List[TranslationResult]], model, texts: List[str],
                   config: DecodingConfig, sources: list, tgt_lang, prefix, **options) -> List[TranslationResult]:
    """``generate`` over every sentence of ``texts`` at once; one result per text, its layout kept."""
    if prefix not in (None, "") and (isinstance(prefix, str) or any(prefix)):
        raise ValueError("prefix forces the start of one sentence: it cannot be used with split_sentences=True")
    targets = one_per_text(tgt_lang, len(texts), "tgt_lang", "one code")
    layouts = [text_mod.split_sentences(t, lang) for t, lang in zip(texts, sources)]
    flat = [s for layout in layouts for s in layout.segments]
    flat_src = [lang for layout, lang in zip(layouts, sources) for _ in layout.segments]
    flat_tgt = [lang for layout, lang in zip(layouts, targets) for _ in layout.segments]
    done = generate(model, flat, config, src_lang=flat_src, tgt_lang=flat_tgt, **options) if flat else []
    results, start = [], 0
    for text, layout in zip(texts, layouts):
        part = done[start:start + len(layout.segments)]
        start += len(layout.segments)
        results.append(TranslationResult(
            source=text, hypotheses=[_combined(part, layout, config.length_penalty)],
            source_pieces=[p for r in part for p in r.source_pieces], source_ids=[i for r in part for i in r.source_ids],
            truncated=any(r.truncated for r in part), sentences=part,
            constraints=[c for r in part for c in r.constraints], warnings=[w for r in part for w in r.warnings],
            glossary=list(dict.fromkeys(e for r in part for e in r.glossary))))
    return results


def label(results: Sequence[TranslationResult], sources: list, confidences: Sequence[Optional[float]]) -> None:
    """Write each result's ``src_lang`` and ``src_lang_confidence`` (and its sentences')."""
    for result, lang, confidence in zip(results, sources, confidences):
        result.src_lang, result.src_lang_confidence = lang, confidence
        for sentence in result.sentences or []:
            sentence.src_lang, sentence.src_lang_confidence = lang, confidence
