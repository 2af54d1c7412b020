"""The translation as shown: every sentence's words coloured by the model's probability, unsure sentences marked.

Built from the very results whose text the page displays (one decode), so the colours are those of the
translation above them.  A word's probability is the product of its pieces' probabilities (the chance the
model gave the whole word); the pieces, with their alternatives, stay in the data (``tokens``).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from transformer_hub.decoding import TranslationResult
from transformer_hub.decoding import words as word_level
from transformer_hub.text import language_name

WORD_START = word_level.WORD_START
# probability bands of the coloured output (label -> colour), most sure first; the legend shows them
BANDS: List[Tuple[float, str, str]] = [(0.9, "sure (≥ 90%)", "#2e9e44"), (0.5, "likely (50-90%)", "#9acd32"),
                                       (0.2, "unsure (20-50%)", "#f0a830"), (0.0, "doubtful (< 20%)", "#e04040")]
UNSURE = "⚠ unsure sentence"
CLICKED = "the word you clicked"
GLOSSARY = "glossary term"  # the words of a glossary entry's target term (the constraint put them there)
COLOURS = {label: colour for _, label, colour in BANDS}
COLOURS[UNSURE] = "#b0b0b0"
COLOURS[CLICKED] = "#3b82f6"
COLOURS[GLOSSARY] = "#a855f7"
DOMAIN_NOTE = ("The model was trained on short image descriptions (Multi30k), so this text may be outside what "
               "it learned.")
TRAINED_ON_NOTE = "The model was trained on {}, so this text may be outside what it learned."  # a model with domains
# where the page offers the Domain menu (models trained with domains): the remedy when a sentence was read as the
# wrong domain, and so went to the wrong model or domain tag
DOMAIN_MENU_NOTE = "If the text is of another kind than it was read as, choose its domain in the Domain menu."


def band(probability: float) -> str:
    return next(label for low, label, _ in BANDS if probability >= low)


def _display(piece: str) -> str:
    return piece.replace(WORD_START, " ")


def _tokens(result: TranslationResult, tokenizer, special: set, sentence: int) -> List[Dict[str, Any]]:
    """One entry per output piece (eos left out): its token, probability and alternatives."""
    hyp = result.best
    entries = []
    for i, (token, piece) in enumerate(zip(hyp.tokens, tokenizer.pieces(hyp.tokens, side="target"))):
        alternatives = [(t, p) for t, p in (hyp.alternatives[i] if hyp.alternatives else []) if t not in special]
        alt_pieces = tokenizer.pieces([t for t, _ in alternatives], side="target")
        entries.append({"sentence": sentence, "index": i, "token": token, "piece": piece, "text": _display(piece),
                        "probability": round(math.exp(hyp.token_logprobs[i]), 4),
                        "alternatives": [{"token": t, "piece": ap, "text": _display(ap), "probability": round(p, 4)}
                                         for (t, p), ap in zip(alternatives, alt_pieces)]})
    return entries


def _words(tokens: List[Dict[str, Any]], offset: int) -> List[Dict[str, Any]]:
    """Pieces grouped into words as the library reads them (``decoding.words``); probability = product of
    the pieces' as shown (4 decimals)."""
    found = word_level.words([e["piece"] for e in tokens], [math.log(max(e["probability"], 1e-12)) for e in tokens])
    return [{"sentence": tokens[w.start]["sentence"], "text": w.text, "space": w.space,
             "tokens": list(range(offset + w.start, offset + w.end)), "probability": w.probability} for w in found]


def mark_terms(words: List[Dict[str, Any]], terms: Sequence[str]) -> None:
    """Set ``glossary`` on the words of one sentence that spell one of ``terms`` (its glossary entries' target
    terms), joined as shown: the constrained search put exactly those pieces in the output."""
    wanted = {" ".join(t.split()) for t in terms if t.strip()}
    longest = max(map(len, wanted), default=0)
    for a in range(len(words)):
        text = words[a]["text"]
        for b in range(a + 1, len(words) + 1):
            if text in wanted:
                for w in words[a:b]:
                    w["glossary"] = True
            if b == len(words) or len(text) >= longest:
                break
            text += (" " if words[b].get("space", True) else "") + words[b]["text"]


def build(whole: TranslationResult, tokenizer, special: set, tokenizers: Optional[Dict[str, Any]] = None,
          **info: Any) -> Dict[str, Any]:
    """The view's data of the pipeline's result ``whole`` (one text): its translation and layout; per sentence its
    source, output, confidence and mark; all pieces; all words (those of a glossary term marked
    ``glossary``).  ``tokenizers``: by model name, for sentences a model of their own decoded (a text mixing
    domains); the others are read with ``tokenizer``."""
    results = whole.sentences if whole.sentences is not None else [whole]
    tokens: List[Dict[str, Any]] = []
    words: List[Dict[str, Any]] = []
    sentences = []
    for n, result in enumerate(results):
        tokenizer_n = (tokenizers or {}).get(result.model, tokenizer)
        pieces = _tokens(result, tokenizer_n, special, n)
        found = _words(pieces, len(tokens))
        mark_terms(found, [e.target for e in getattr(result, "glossary", None) or []])
        words += found
        tokens += pieces
        doubt = word_level.doubt(result.best, tokenizer_n)
        doubtful = doubt is not None and doubt.unsure()
        unfamiliar = getattr(result, "unfamiliar", None)  # looks like none of the models' domains (text.explained)
        sentences.append({"source": result.source, "translation": result.text,
                          "confidence": None if doubt is None else round(doubt.mean, 4),
                          "lowest_word": None if doubt is None else {"text": doubt.word,
                                                                     "probability": round(doubt.lowest_word, 4)},
                          "doubt": doubtful, "unfamiliar": unfamiliar, "unsure": doubtful or unfamiliar is not None})
    return {**info, "translation": whole.text, "separators": list(whole.layout.separators),
            "sentences": sentences, "tokens": tokens, "words": words,
            "threshold": {"mean": word_level.MEAN_THRESHOLD, "lowest_word": word_level.LOWEST_WORD_THRESHOLD}}


def highlighted(data: Dict[str, Any], clicked: Optional[int] = None) -> List[Tuple[str, Optional[str]]]:
    """(text, label) entries: each sentence's words (band of their probability; word ``clicked`` stands out),
    the layout between sentences unlabelled, and a mark after an unsure sentence (``entry_word`` maps an entry
    back to its word)."""
    return [(text, CLICKED if w is not None and w == clicked else label) for text, label, w in _entries(data)]


def entry_word(data: Dict[str, Any], entry: int) -> Optional[int]:
    """The word index of highlighted entry ``entry`` (None for layout and marks)."""
    entries = _entries(data)
    return entries[entry][2] if 0 <= entry < len(entries) else None


def _entries(data: Dict[str, Any]) -> List[Tuple[str, Optional[str], Optional[int]]]:
    out: List[Tuple[str, Optional[str], Optional[int]]] = []
    by_sentence: Dict[int, List[int]] = {}
    for w, word in enumerate(data["words"]):
        by_sentence.setdefault(word["sentence"], []).append(w)
    for n, sentence in enumerate(data["sentences"]):
        if data["separators"][n]:
            out.append((data["separators"][n], None, None))
        for k, w in enumerate(by_sentence.get(n, [])):
            word = data["words"][w]
            if k > 0 and not word.get("space", True) and not any(c.isalnum() for c in word["text"]):
                text, label, previous = out[-1]  # punctuation shown with the word before it ("Park.")
                out[-1] = (text + word["text"], label, previous)
                continue
            label = GLOSSARY if word.get("glossary") else band(word["probability"])
            out.append((" " * (k > 0 and word.get("space", True)) + word["text"], label, w))
        if sentence["unsure"]:
            out.append((" ⚠", UNSURE, None))
    if data["separators"] and data["separators"][-1]:
        out.append((data["separators"][-1], None, None))
    return out


def colours(data: Optional[Dict[str, Any]], clicked: Optional[int] = None) -> Dict[str, str]:
    """The colour map of the labels ``data``'s words use: the legend shows only what is on screen."""
    used = {label for _, label in highlighted(data, clicked)} if data else set()
    return {label: colour for label, colour in COLOURS.items() if label in used}


def _why(sentence: Dict[str, Any]) -> str:
    low = sentence.get("lowest_word") or {}
    parts = [f"mean word-piece probability {sentence['confidence']:.2f}"]
    if low.get("text"):
        parts.insert(0, f"least sure of “{low['text']}”, {100 * low['probability']:.0f} %")
    return "; ".join(parts)


def glossary_note(data: Dict[str, Any]) -> List[str]:
    """The lines on the glossary: the entries that applied (or that none did), and what could not fit."""
    if "glossary" not in data:
        return []
    applied = data["glossary"]
    lines = [("Glossary applied: " + ", ".join(f"“{e['source']}” → “{e['target']}”" for e in applied)) if applied
             else "Glossary: none of its source terms occurs in the text."]
    lines += [f"⚠ Glossary: {w}." for w in data.get("warnings", [])]
    return lines


def note(data: Dict[str, Any]) -> str:
    """Markdown under the translation: the detected language, the glossary entries applied and their warnings,
    and the unsure sentences with the domain note."""
    lines = []
    if data.get("detected"):
        lines.append(f"Detected: {language_name(data['source_lang'])}, {data['detected']:.2f}")
    lines += glossary_note(data)
    unsure = [s for s in data["sentences"] if s.get("doubt", s["unsure"])]
    if unsure:
        lines.append(f"⚠ The model is unsure of {len(unsure)} of {len(data['sentences'])} sentence(s): "
                     + "; ".join(f"“{s['translation']}” ({_why(s)})" for s in unsure[:5]) + ". "
                     + domain_advice(data.get("trained_on"), bool(data.get("domain_menu"))))
    lines += unfamiliar_note(data["sentences"])
    return "  \n".join(lines)


def unfamiliar_note(sentences: List[Dict[str, Any]]) -> List[str]:
    """The line on sentences that look like none of the models' domains: how many, the first few, why."""
    found = [s for s in sentences if s.get("unfamiliar")]
    if not found:
        return []
    shown = "; ".join(f"“{s['source']}”" for s in found[:5])
    return [f"⚠ Unsure of {len(found)} of {len(sentences)} sentence(s) ({shown}): {found[0]['unfamiliar']}."]


def domain_advice(trained_on: Optional[str], menu: bool) -> str:
    """What the unsure note says of the domain: what the model was trained on, and where the page offers the Domain
    menu (``menu``), that it picks another domain."""
    said = TRAINED_ON_NOTE.format(trained_on) if trained_on else DOMAIN_NOTE
    return f"{said} {DOMAIN_MENU_NOTE}" if menu else said
