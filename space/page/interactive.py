"""Interactive translation: per-token probabilities and alternatives, continuing from a chosen word.

Thin calls of ``generate`` with ``return_alternatives=K`` and ``prefix=``; the
pieces are shown with the model's tokenizer (read in this process; the weights stay in the worker).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from transformer_hub.decoding import words as word_level
from transformer_hub.text import Segmented

from ..hosting.limits import RequestError, clean_text
from ..pictures import word_view
from ..serving.context import SpaceContext
from ..serving.decoder import Request
from ..serving.service import _special as special_ids  # noqa: PLC2701 - the ids the word view leaves out
from ..serving.service import ALTERNATIVES, decode_text, decoding_config, languages_for

COLOURS = word_view.COLOURS  # the word view's legend (labels -> colours)
highlighted = word_view.highlighted


def _prefix_text(ctx: SpaceContext, value) -> Optional[str]:
    """The forced start of the output, cleaned and limited like any input text (None when there is none)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RequestError(f"prefix must be text, got {type(value).__name__}.")
    kept = clean_text(value, ctx.limits, single=True, what="the words the translation must start with").sentences[0]
    return kept + " " if value[-1:].isspace() else kept  # a space after the last word: that word as it is


def tokens(ctx: SpaceContext, text: str, model: Optional[str] = None, source_lang: str = "en",
           target_lang: str = "de", prefix: str = "") -> Tuple[List[Tuple[str, Optional[str]]], Dict[str, Any]]:
    """The greedy translation of every sentence, word by word: (highlighted words, data with the pieces,
    their probabilities and alternatives).  With a ``prefix``, one sentence whose output starts with it."""
    prefix = _prefix_text(ctx, prefix)
    clean = clean_text(text, ctx.limits, single=prefix is not None)
    config = decoding_config(ctx, "greedy", return_alternatives=ALTERNATIVES)
    data, _ = decode_text(ctx, clean, model, config, source_lang, target_lang, prefix=prefix)
    return word_view.highlighted(data), data


def prefix_for(data: Dict[str, Any], word: int, choice: str) -> Tuple[int, str, str]:
    """For word ``word`` replaced by the word ``choice``: (its sentence, that sentence's source, the output up
    to the word with ``choice`` in its place and a space: the prefix to continue from, that word kept whole)."""
    sentence = data["words"][word]["sentence"]
    before = [(w["text"], w.get("space", True)) for w in data["words"][:word] if w["sentence"] == sentence]
    kept = word_level.join(before + [(choice, data["words"][word].get("space", True))])
    return sentence, data["sentences"][sentence]["source"], kept + " "


def word_choices(ctx: SpaceContext, data: Dict[str, Any], word: int) -> List[word_level.WordChoice]:
    """The whole words the model would put in place of word ``word`` of the view ``data`` (its own marked
    ``current``): each alternative of the word's first piece completed greedily, in one batch, and ranked
    (``transformer_hub.decoding.words``)."""
    tokens = [data["tokens"][i] for i in data["words"][word]["tokens"]]
    sentence = tokens[0]["sentence"]
    before = [e["token"] for e in data["tokens"][:data["words"][word]["tokens"][0]] if e["sentence"] == sentence]
    name = data["model"]
    tokenizer = ctx.store.tokenizer(name)
    alternatives = [(a["token"], a["probability"]) for a in tokens[0]["alternatives"]]
    prefixes = word_level.openings(tokenizer, before, alternatives, special_ids(ctx, name))
    pair = languages_for(ctx, name, data.get("source_lang"), data.get("target_lang"))
    source = data["sentences"][sentence]["source"]
    config = decoding_config(ctx, "greedy")
    results = ctx.decoder.generate(name, [Request(source, pair[0], pair[1], p) for p in prefixes], config)
    current = data["words"][word]
    mine = word_level.Word(current["text"], 0, len(tokens), current["probability"], current.get("space", True))
    return word_level.rank(tokenizer, prefixes, [r.best for r in results], mine, [e["token"] for e in tokens],
                           k=ALTERNATIVES)


def continue_from(ctx: SpaceContext, text: str, prefix: str, model: Optional[str] = None, source_lang: str = "en",
                  target_lang: str = "de") -> Tuple[str, List[Tuple[str, Optional[str]]], Dict[str, Any]]:
    """Translate one sentence ``text`` so that the output starts with ``prefix``: (translation, words, data)."""
    if not isinstance(prefix, str) or not prefix.strip():
        raise RequestError("Give the prefix the translation must start with (the words to keep).")
    words, data = tokens(ctx, text, model, source_lang, target_lang, prefix=prefix)
    return data["translation"], words, data


def splice(whole: Dict[str, Any], sentence: int, part: Dict[str, Any]) -> Dict[str, Any]:
    """``whole``'s view with sentence ``sentence`` replaced by the one sentence of ``part`` (a continuation)."""
    if part is None or len(part.get("sentences", [])) != 1 or not 0 <= sentence < len(whole["sentences"]):
        return part
    first = sum(1 for t in whole["tokens"] if t["sentence"] < sentence)
    end = first + sum(1 for t in whole["tokens"] if t["sentence"] == sentence)
    shift = len(part["tokens"]) - (end - first)
    new_tokens = [dict(t, sentence=sentence) for t in part["tokens"]]
    words = ([w for w in whole["words"] if w["sentence"] < sentence]
             + [dict(w, sentence=sentence, tokens=[i + first for i in w["tokens"]]) for w in part["words"]]
             + [dict(w, tokens=[i + shift for i in w["tokens"]]) for w in whole["words"] if w["sentence"] > sentence])
    sentences = whole["sentences"][:sentence] + part["sentences"] + whole["sentences"][sentence + 1:]
    layout = Segmented(tuple(s["source"] for s in sentences), tuple(whole["separators"]))
    joined = layout.join([s["translation"] for s in sentences])
    return {**whole, "tokens": whole["tokens"][:first] + new_tokens + whole["tokens"][end:], "words": words,
            "sentences": sentences, "translation": joined}
