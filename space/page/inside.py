"""What the "Inside the Transformer" tab's buttons do: check the input, call ``transformer_hub.inside``, draw.

Views that need the weights (attention, positions, steps) run the library function in the decoding
worker (``Decoder.call``: the server process never loads weights); the training recipe needs only the
model's files (config, card, ``metrics.jsonl``), read here.  Each handler returns its pictures and the
data as JSON; the ``*_redraw`` functions draw another layer, head or step from that JSON alone (the attention
from the float32 weights ``attention_all`` keeps in the session).
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

from transformer_hub.inside import (attention_maps, positional_encoding, smoothed_target, step_by_step,
                                     teacher_forcing, training_recipe)
from transformer_hub import hub
from transformer_hub.training.metrics import MetricsLog

from ..hosting.limits import RequestError, choice_option, clean_text, int_option
from ..pictures import attention as plots
from ..pictures import inside as inside_plots
from ..serving.choice import AUTO, AUTO_LABEL
from ..serving.context import SpaceContext
from ..serving.languages import LANGUAGES
from ..serving.service import decoding_config, languages_for, pick_model, run
from .examples import EXAMPLES

KINDS = tuple(plots.KIND_TITLES)
MAX_TOP_K = 10
MAX_POSITIONS = 128


def _sentence(ctx: SpaceContext, text) -> str:
    return clean_text(text, ctx.limits, single=True).sentences[0]


def _optional(ctx: SpaceContext, value, what: str) -> Optional[str]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return clean_text(value, ctx.limits, single=True, what=what).sentences[0]


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 1)


def reference_for(text: str, source_lang: Optional[str], target_lang: Optional[str]) -> Optional[str]:
    """The Multi30k validation reference of an example sentence (the examples are four-way parallel)."""
    lines = EXAMPLES.get(source_lang or "", [])
    return EXAMPLES.get(target_lang or "", [None] * len(lines))[lines.index(text)] if text in lines else None


# ---------------------------------------------------------------------------- which model each view can show
VIEWS = ("attention", "positions", "steps", "recipe")


def resolve_model(ctx: SpaceContext, name: Optional[str], source_lang=None, target_lang=None) -> Optional[str]:
    """The model the views show for the picker's ``name`` and direction: a named model itself; "Best for the
    direction" (``AUTO``, None or "") the one the views' handlers pick (``pick_model``: the best-scored on image
    captions, the domain the views read a sentence as, else the Space's default).  None when there is none."""
    try:
        return pick_model(ctx, name, source_lang, target_lang)
    except RequestError:  # no model, or an unknown name: the view's own call says so
        return None


def why_not(ctx: SpaceContext, name: Optional[str], view: str, source_lang=None, target_lang=None) -> Optional[str]:
    """One plain sentence on why ``view`` cannot show model ``name`` (for "Best for the direction": the model it
    is for the direction); None when it can, or when there is no model to ask about (the call reports it)."""
    shown = resolve_model(ctx, name, source_lang, target_lang)
    if shown is None:
        return None
    best = f"{AUTO_LABEL} is {shown} here. " if name in (None, "", AUTO) else ""
    try:
        config = ctx.store.config(shown)
    except Exception:  # noqa: BLE001 - any unreadable model: the view's own call reports the details
        return f"{best}The model {shown} could not be read."
    if view == "attention" and getattr(config, "layout", "encoder-decoder") != "encoder-decoder":
        return (f"{best}This model is decoder-only: it has no encoder, so no encoder self-attention and no "
                "encoder-decoder attention to show. Pick an encoder-decoder model.")
    return None


def shown_models(ctx: SpaceContext, view: str) -> List[str]:
    """The models ``view`` can show, in the picker's order."""
    return [name for name in ctx.model_names if why_not(ctx, name, view) is None]


def best_note(ctx: SpaceContext, name: Optional[str], source_lang=None, target_lang=None) -> str:
    """What "Best for the direction" is for the picked direction, e.g. "Best for English → German: en-de";
    "" for a named model (the picker shows it)."""
    if name not in (None, "", AUTO):
        return ""
    shown = resolve_model(ctx, name, source_lang, target_lang)
    pair = f"{LANGUAGES.get(source_lang, source_lang)} → {LANGUAGES.get(target_lang, target_lang)}"
    return f"Best for {pair}: {shown}" if shown else ""


def sizes(ctx: SpaceContext, name: Optional[str], source_lang=None, target_lang=None) -> Tuple[int, int]:
    """(layers, heads) of the model the views show (``resolve_model``), for the layer and head sliders: the more
    layers of its encoder and decoder; (8, 16) when there is no model or its config cannot be read."""
    try:
        config = ctx.store.config(resolve_model(ctx, name, source_lang, target_lang))
    except Exception:  # noqa: BLE001 - the view's own call reports what is wrong with the model
        return 8, 16
    return max(config.n_encoder_layers, config.n_decoder_layers, 1), config.n_heads


def _can_show(ctx: SpaceContext, name: str, view: str) -> None:
    reason = why_not(ctx, name, view)
    if reason is not None:
        raise RequestError(reason)


# ---------------------------------------------------------------------------- attention, all three kinds
def attention_all(ctx: SpaceContext, text: str, model: Optional[str] = None, source_lang: str = "en",
                  target_lang: str = "de", kind: str = "cross", layer: int = 1, head: int = 1, target: str = ""):
    """Every layer and head of the three kinds: (model view of ``layer``, head view, data, the target
    teacher-forced, the weights).  The data (JSON) rounds the weights to 4 decimals; the pictures and the
    weights kept for redrawing them (``weights``, a session state) are the model's float32 values."""
    sentence = _sentence(ctx, text)
    kind = choice_option("kind", kind, KINDS)
    target = _optional(ctx, target, "the translation to teacher-force")
    name = pick_model(ctx, model, source_lang, target_lang)
    _can_show(ctx, name, "attention")
    src, tgt = languages_for(ctx, name, source_lang, target_lang)
    start = time.perf_counter()
    maps = ctx.decoder.call(name, attention_maps, sentence, src, tgt, target)
    data = {"model": name, "source": sentence, **maps.to_dict(), "ms": _ms(start)}
    weights = {"source_pieces": maps.source_pieces, "target_pieces": maps.target_pieces,
               **{k: getattr(maps, k).float().numpy() for k in KINDS}}
    model_view, head_view = attention_redraw(weights, kind, layer, head)
    return model_view, head_view, data, maps.target, weights


def attention_redraw(weights: Dict[str, Any], kind: str = "cross", layer: int = 1, head: int = 1):
    """The model view (every head of ``layer``) and the head view of ``kind`` from ``attention_all``'s weights."""
    kind, layer, head = _where(weights, kind, layer, head)
    return plots.model_view(weights, kind, layer), plots.head_view(weights, kind, layer, head)


def head_redraw(weights: Dict[str, Any], kind: str = "cross", layer: int = 1, head: int = 1):
    """The head view alone (another head: the model view of the layer stays)."""
    kind, layer, head = _where(weights, kind, layer, head)
    return plots.head_view(weights, kind, layer, head)


def _where(weights, kind: str, layer, head) -> Tuple[str, int, int]:
    """(kind, layer, head) checked; the sliders serve every kind: a decoder with fewer layers than the encoder
    shows its last one."""
    if not isinstance(weights, dict) or not all(k in weights for k in KINDS):
        raise RequestError("Show the attention first (press the button).")
    kind = choice_option("kind", kind, KINDS)
    layer = min(int_option("layer", layer, 1, 64), len(weights[kind]))
    head = min(int_option("head", head, 1, 64), len(weights[kind][0]))
    return kind, layer, head


# ---------------------------------------------------------------------------- positional information
def positions(ctx: SpaceContext, text: str = "", model: Optional[str] = None, source_lang: str = "en",
              target_lang: str = "de", length: int = 50, dims: str = ""):
    """What the model's positional encoding does over ``length`` positions: (picture, data).  With a ``text``,
    its number of source tokens is marked; ``dims`` ("4,10"): the dimensions drawn as curves (empty: a spread)."""
    name = pick_model(ctx, model, source_lang, target_lang)
    length = int_option("length", length, 2, MAX_POSITIONS)
    try:
        dims_list = [int(d) for d in str(dims or "").replace(" ", "").split(",") if d]
    except ValueError:
        raise RequestError(f"dims must be whole numbers separated by commas, got {dims!r}.") from None
    mark = None
    if isinstance(text, str) and text.strip():
        languages_for(ctx, name, source_lang, target_lang)  # the same checks as every view
        tokens = ctx.store.tokenizer(name).encode(_sentence(ctx, text), side="source")
        mark = len(tokens) + 1 + bool(ctx.store.config(name).multilingual)  # pieces, eos, and the language tag
    start = time.perf_counter()
    view = ctx.decoder.call(name, positional_encoding, length, dims_list or None)
    data = {"model": name, **view.to_dict(), "sentence_tokens": mark, "ms": _ms(start)}
    return inside_plots.positions_figure(data, mark), data


# ---------------------------------------------------------------------------- step by step
def steps(ctx: SpaceContext, text: str, model: Optional[str] = None, source_lang: str = "en",
          target_lang: str = "de", k: int = 5, beam_size: int = 4, step: int = 1, reference: str = ""):
    """Greedy's top-k and beam search's beams at each step, and teacher forcing against free running on the
    ``reference`` (default: the example's Multi30k reference): (step picture, forcing picture, data)."""
    sentence = _sentence(ctx, text)
    k = int_option("k", k, 1, MAX_TOP_K)
    beam_size = int_option("beam size", beam_size, 1, ctx.limits.max_beam)
    name = pick_model(ctx, model, source_lang, target_lang)
    src, tgt = languages_for(ctx, name, source_lang, target_lang)
    reference = _optional(ctx, reference, "the reference translation") or reference_for(sentence, source_lang,
                                                                                          target_lang)
    start = time.perf_counter()
    view = ctx.decoder.call(name, step_by_step, sentence, src, tgt, k=k, beam_size=beam_size,
                            max_length=ctx.limits.max_output_tokens)
    forcing = ctx.decoder.call(name, teacher_forcing, sentence, reference, src, tgt) if reference else None
    data = {"model": name, "source": sentence, **view.to_dict(), "reference": reference,
            "forcing": forcing.to_dict() if forcing else None, "ms": _ms(start)}
    return steps_redraw(data, step), _forcing(data), data


def steps_redraw(data: Dict[str, Any], step: int = 1):
    """Step ``step`` (from 1; clamped to the steps there are) of ``steps``' data."""
    if not isinstance(data, dict) or "top" not in data:
        raise RequestError("Run the step-by-step view first (press the button).")
    step = int_option("step", step, 1, 10_000)
    return inside_plots.step_figure(data, min(step, data["steps"]) - 1)


def _forcing(data: Dict[str, Any]):
    return inside_plots.forcing_figure(data["forcing"]) if data.get("forcing") else None


# ---------------------------------------------------------------------------- the training recipe
def _metrics(ctx: SpaceContext, name: str) -> List[Dict[str, Any]]:
    """The model's training log (``metrics.jsonl`` of its folder or repo); [] for a model without one."""
    spec = ctx.store.spec(name)
    with hub.loading(spec.source, spec.revision):
        path = hub.fetcher(spec.source, spec.revision)("metrics.jsonl", required=False)
    return MetricsLog(path).read() if path else []


def recipe(ctx: SpaceContext, text: str, model: Optional[str] = None, source_lang: str = "en",
           target_lang: str = "de", position: int = 1):
    """The model's schedule and curves from its files, and the label-smoothed target at output token
    ``position`` of the sentence's greedy translation: (picture, data)."""
    sentence = _sentence(ctx, text)
    position = int_option("position", position, 1, ctx.limits.max_output_tokens)
    name = pick_model(ctx, model, source_lang, target_lang)
    start = time.perf_counter()
    config, card = ctx.store.config(name), ctx.store.card(name)
    view = training_recipe(config, card.get("training") or {}, _metrics(ctx, name))
    data: Dict[str, Any] = {"model": name, "source": sentence, **view.to_dict(), "smoothing": None}
    if view.label_smoothing is not None:
        data["smoothing"] = _smoothing(ctx, name, sentence, (source_lang, target_lang), position,
                                       view.label_smoothing, config.tgt_vocab_size)
    data["ms"] = _ms(start)
    return inside_plots.recipe_figure(data), data


def _smoothing(ctx: SpaceContext, name: str, sentence: str, pair: Tuple[str, str], position: int, epsilon: float,
               vocab: int) -> Dict[str, Any]:
    """The smoothed target at one token of the greedy translation, beside the model's top predictions there."""
    config = decoding_config(ctx, "greedy", return_alternatives=4)
    (result,), _ = run(ctx, name, [sentence], config, languages_for(ctx, name, *pair))
    hyp = result.best
    step = min(position, len(hyp.alternatives or [])) - 1
    if step < 0:
        raise RequestError("The translation is empty: there is no target token to smooth.")
    token = (hyp.tokens + [ctx.store.config(name).eos_id])[step]
    predicted = dict(hyp.alternatives[step])
    ids = [token] + [t for t in predicted if t != token][:4]
    target = smoothed_target(int(token), vocab, epsilon)
    return {**target.to_dict(), "position": step + 1, "translation": hyp.text,
            "pieces": ctx.store.tokenizer(name).pieces(ids, side="target"), "ids": ids,
            "model_probs": [round(float(predicted.get(i, 0.0)), 6) for i in ids]}
