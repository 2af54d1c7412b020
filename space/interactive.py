"""Interactive translation: per-token probabilities and alternatives, continuing from a chosen word, the beam tree.

Thin calls of ``generate`` with ``return_alternatives=K``, ``prefix=`` and ``return_search=True``; the
pieces are shown with the model's tokenizer (read in this process; the weights stay in the worker).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import gradio as gr

from .context import SpaceContext
from .limits import clean_text, int_option
from .service import decoding_config, languages_for, pick_model, run

ALTERNATIVES = 5  # alternatives shown per word
# probability bands of the coloured output (label -> colour), most sure first; the legend shows them
BANDS: List[Tuple[float, str, str]] = [(0.9, "sure (≥ 90%)", "#2e9e44"), (0.5, "likely (50-90%)", "#9acd32"),
                                       (0.2, "unsure (20-50%)", "#f0a830"), (0.0, "doubtful (< 20%)", "#e04040")]
COLOURS = {label: colour for _, label, colour in BANDS}


def band(probability: float) -> str:
    return next(label for low, label, _ in BANDS if probability >= low)


def _display(piece: str) -> str:
    return piece.replace("\u2581", " ")


def _prefix_text(ctx: SpaceContext, value) -> Optional[str]:
    """The forced start of the output, cleaned and limited like any input text (None when there is none)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise gr.Error(f"prefix must be text, got {type(value).__name__}.")
    return clean_text(value, ctx.limits, single=True, what="the words the translation must start with").sentences[0]


def tokens(ctx: SpaceContext, text: str, model: Optional[str] = None, source_lang: str = "en",
           target_lang: str = "de", prefix: str = "") -> Tuple[List[Tuple[str, str]], Dict[str, Any]]:
    """The greedy translation piece by piece: (highlighted pieces, data with probabilities and alternatives)."""
    sentence = clean_text(text, ctx.limits, single=True).sentences[0]
    name = pick_model(ctx, model, source_lang, target_lang)
    config = decoding_config(ctx, "greedy", return_alternatives=ALTERNATIVES)
    (result,), seconds = run(ctx, name, [sentence], config, languages_for(ctx, name, source_lang, target_lang),
                             prefix=_prefix_text(ctx, prefix))
    hyp, tokenizer = result.best, ctx.store.tokenizer(name)
    cfg = ctx.store.config(name)
    special = {cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id}
    pieces = tokenizer.pieces(hyp.tokens, side="target")
    entries = []
    for i, (token, piece) in enumerate(zip(hyp.tokens, pieces)):
        alternatives = hyp.alternatives[i] if hyp.alternatives else []
        probability = next((p for t, p in alternatives if t == token), None)
        alternatives = [(t, p) for t, p in alternatives if t not in special]  # words only: one can continue from them
        alt_pieces = tokenizer.pieces([t for t, _ in alternatives], side="target")
        entries.append({"index": i, "token": token, "piece": piece, "text": _display(piece),
                        "probability": round(float(probability), 4) if probability is not None else None,
                        "alternatives": [{"token": t, "piece": ap, "text": _display(ap), "probability": round(p, 4)}
                                         for (t, p), ap in zip(alternatives, alt_pieces)]})
    data = {"model": name, "source": sentence, "translation": hyp.text, "tokens": entries,
            "source_lang": source_lang, "target_lang": target_lang, "ms": round(seconds * 1000.0, 1)}
    return highlighted(data), data


def highlighted(data: Dict[str, Any]) -> List[Tuple[str, str]]:
    """The coloured words of ``tokens``' data: (piece as shown, probability band) per output token."""
    return [(e["text"], band(e["probability"] or 0.0)) for e in data["tokens"]]


def prefix_for(ctx: SpaceContext, data: Dict[str, Any], index: int, token: int) -> str:
    """The text of the output up to word ``index`` with ``token`` in its place: the prefix to continue from."""
    ids = [e["token"] for e in data["tokens"][:index]] + [int(token)]
    return ctx.store.tokenizer(data["model"]).decode(ids, side="target")


def continue_from(ctx: SpaceContext, text: str, prefix: str, model: Optional[str] = None, source_lang: str = "en",
                  target_lang: str = "de") -> Tuple[str, List[Tuple[str, str]], Dict[str, Any]]:
    """Translate ``text`` so that the output starts with ``prefix``: (translation, highlighted pieces, data)."""
    if not isinstance(prefix, str) or not prefix.strip():
        raise gr.Error("Give the prefix the translation must start with (the words to keep).")
    highlighted, data = tokens(ctx, text, model, source_lang, target_lang, prefix=prefix)
    return data["translation"], highlighted, data


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
