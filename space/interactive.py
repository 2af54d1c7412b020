"""Interactive translation: per-token probabilities and alternatives, continuing from a chosen word, the beam tree.

Thin calls of ``generate`` with ``return_alternatives=K``, ``prefix=`` and ``return_search=True``; the
pieces are shown with the model's tokenizer (read in this process; the weights stay in the worker).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import gradio as gr

from . import view
from .context import SpaceContext
from .limits import clean_text, int_option
from .service import ALTERNATIVES, decode_text, decoding_config, languages_for, pick_model, run

COLOURS = view.COLOURS  # the word view's legend (labels -> colours)
highlighted = view.highlighted


def _prefix_text(ctx: SpaceContext, value) -> Optional[str]:
    """The forced start of the output, cleaned and limited like any input text (None when there is none)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise gr.Error(f"prefix must be text, got {type(value).__name__}.")
    return clean_text(value, ctx.limits, single=True, what="the words the translation must start with").sentences[0]


def tokens(ctx: SpaceContext, text: str, model: Optional[str] = None, source_lang: str = "en",
           target_lang: str = "de", prefix: str = "") -> Tuple[List[Tuple[str, Optional[str]]], Dict[str, Any]]:
    """The greedy translation of every sentence, word by word: (highlighted words, data with the pieces,
    their probabilities and alternatives).  With a ``prefix``, one sentence whose output starts with it."""
    prefix = _prefix_text(ctx, prefix)
    clean = clean_text(text, ctx.limits, single=prefix is not None)
    config = decoding_config(ctx, "greedy", return_alternatives=ALTERNATIVES)
    data, _ = decode_text(ctx, clean, model, config, source_lang, target_lang, prefix=prefix)
    return view.highlighted(data), data


def prefix_for(ctx: SpaceContext, data: Dict[str, Any], word: int, token: int) -> Tuple[int, str, str]:
    """For word ``word`` replaced by ``token``: (its sentence, that sentence's source, the output up to the
    word with ``token`` in its place: the prefix to continue from)."""
    first = data["words"][word]["tokens"][0]
    sentence = data["tokens"][first]["sentence"]
    ids = [e["token"] for e in data["tokens"][:first] if e["sentence"] == sentence] + [int(token)]
    prefix = ctx.store.tokenizer(data["model"]).decode(ids, side="target")
    return sentence, data["sentences"][sentence]["source"], prefix


def continue_from(ctx: SpaceContext, text: str, prefix: str, model: Optional[str] = None, source_lang: str = "en",
                  target_lang: str = "de") -> Tuple[str, List[Tuple[str, Optional[str]]], Dict[str, Any]]:
    """Translate one sentence ``text`` so that the output starts with ``prefix``: (translation, words, data)."""
    if not isinstance(prefix, str) or not prefix.strip():
        raise gr.Error("Give the prefix the translation must start with (the words to keep).")
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
    outputs = [s["translation"] for s in sentences]
    separators = whole["separators"]
    joined = separators[0] + "".join(o + sep for o, sep in zip(outputs, separators[1:]))
    return {**whole, "tokens": whole["tokens"][:first] + new_tokens + whole["tokens"][end:], "words": words,
            "sentences": sentences, "translation": joined}


def beam_tree(ctx: SpaceContext, text: str, beam_size: int = 4, model: Optional[str] = None,
              source_lang: str = "en", target_lang: str = "de", length_penalty: float = 0.6, max_length: int = 0):
    """Beam search as a tree: (picture, the trace as JSON with the chosen path).

    Decoded with the same options as the beam search it is shown beside, so the paths are the same."""
    sentence = clean_text(text, ctx.limits, single=True).sentences[0]
    beam_size = int_option("beam size", beam_size, 1, ctx.limits.max_beam)
    name = pick_model(ctx, model, source_lang, target_lang)
    config = decoding_config(ctx, "beam", beam_size, length_penalty, max_length=max_length, return_search=True)
    (result,), seconds = run(ctx, name, [sentence], config, languages_for(ctx, name, source_lang, target_lang))
    if result.search is None:
        raise gr.Error(f"Model {name!r} returned no search trace for this sentence.")
    tokenizer = ctx.store.tokenizer(name)
    eos = ctx.store.config(name).eos_id
    found = result.search.locate(result.best, eos)
    path = [] if found is None else [[t, node.tokens] for t, node in
                                     enumerate(result.search.path(found[0], result.search.steps[found[0]].finished[found[1]]))]
    from .tree_plot import beam_tree_figure

    figure = beam_tree_figure(result.search, lambda ids: tokenizer.pieces(ids, side="target"), found,
                              title=f"Beam search, k={beam_size} · {name}: {result.best.text}")
    data = {"model": name, "source": sentence, "translation": result.best.text, "beam_size": beam_size,
            "chosen": None if found is None else {"step": found[0], "finished_index": found[1]},
            "chosen_path": path, "search": result.search.to_dict(), "ms": round(seconds * 1000.0, 1)}
    return figure, data
