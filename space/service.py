"""What the tabs' buttons do: validate, pick the model, call the library, shape the answer.

Every function here only calls ``transformer_hub`` (``generate`` and the
model's tokenizer); no model math lives in the Space.  ``handler`` wraps each
one so that it runs under ``torch.inference_mode`` in Gradio's worker thread
and so that every failure reaches the visitor as a ``gr.Error`` with a clear
message, never a stack trace; the server keeps serving.
"""
from __future__ import annotations

import functools
import logging
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gradio as gr
import torch

from transformer_hub.decoding import DecodingConfig, generate

from .context import SpaceContext
from .limits import choice_option, clean_text, float_option, int_option
from .models_store import ModelLoadError

logger = logging.getLogger(__name__)
STRATEGIES = ("greedy", "beam", "sample")


def handler(fn):
    """Run ``fn`` under inference mode and turn every failure into a ``gr.Error``."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            with torch.inference_mode():
                return fn(*args, **kwargs)
        except gr.Error:
            raise
        except ModelLoadError as exc:
            raise gr.Error(f"The model could not be loaded: {exc}") from exc
        except (ValueError, KeyError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            raise gr.Error(f"Invalid request: {message}") from exc
        except Exception as exc:  # noqa: BLE001 - logged with its traceback, reported in one line
            logger.exception("handler %s failed", fn.__name__)
            raise gr.Error(f"Sorry, something went wrong ({type(exc).__name__}: {exc}). "
                           "The server is still running; try another input.") from exc

    return wrapped


# ---------------------------------------------------------------------------- shared steps
def pick_model(ctx: SpaceContext, name: Optional[str]):
    if not ctx.store.names():
        raise gr.Error("No model is available: ship one under space/models/en-de, or start the app with "
                       "--model FOLDER_OR_REPO_ID (or MODEL_IDS).")
    if name is not None and not isinstance(name, str):  # API callers send anything: the events skip preprocessing
        raise gr.Error(f"The model must be given by its name, got {type(name).__name__}.")
    name = ctx.store.name_of(name) or name if name else ctx.store.default()
    if name not in ctx.store.specs:
        raise gr.Error(f"Unknown model {name!r}; available: {', '.join(ctx.store.names())}.")
    return name, ctx.store.get(name)


def decoding_config(ctx: SpaceContext, strategy: str, beam_size=4, length_penalty=0.6, temperature=1.0,
                    top_p=1.0, max_length=None, n_best: int = 1, attention: bool = False) -> DecodingConfig:
    """A ``DecodingConfig`` from UI/API values, every number range-checked against the Space's limits."""
    strategy = choice_option("strategy", strategy, STRATEGIES)
    options: Dict[str, Any] = dict(strategy=strategy, return_attention=attention)
    limits = ctx.limits
    options["max_length"] = (limits.max_output_tokens if max_length in (None, "", 0) else
                             int_option("max length", max_length, 1, limits.max_output_tokens))
    if strategy == "beam":
        options["beam_size"] = int_option("beam size", beam_size, 1, limits.max_beam)
        options["length_penalty"] = float_option("length penalty", length_penalty, 0.0, 2.0)
        options["n_best"] = int_option("n-best", n_best, 1, options["beam_size"])
    elif strategy == "sample":
        options["temperature"] = float_option("temperature", temperature, 0.0, 5.0, low_open=True)
        options["top_p"] = float_option("top-p", top_p, 0.0, 1.0, low_open=True)
    else:
        options["length_penalty"] = float_option("length penalty", length_penalty, 0.0, 2.0)
    return DecodingConfig(**options)


def run(ctx: SpaceContext, name: str, model, sentences: Sequence[str], config: DecodingConfig):
    """Decode ``sentences`` in one batch (shared with concurrent requests of the same model and options,
    see ``batching.py``); returns (results, seconds)."""
    start = time.perf_counter()
    if ctx.decoder is not None:  # the same call in the decoding child process (see decode_process.py)
        spec = ctx.store.spec(name)

        def decode(texts):
            return ctx.decoder.generate(spec.source, spec.revision, texts, config)
    else:
        def decode(texts):
            return generate(model, texts, config)
    batcher = ctx.batcher
    if batcher is None:
        results = decode(list(sentences))
    else:
        key = batcher.unique_key() if config.strategy == "sample" else (name, repr(config))
        results = batcher.run(key, decode, sentences)
    return results, time.perf_counter() - start


def _align(lines: List[str], outputs: List[str]) -> List[str]:
    """Put translations back at the positions of the non-empty input lines (blank lines stay blank)."""
    it = iter(outputs)
    return [next(it) if line else "" for line in lines]


def _truncation_note(results) -> None:
    if any(getattr(r, "truncated", False) for r in results):
        gr.Warning("A sentence was longer than the model accepts and was cut before translating.")


# ---------------------------------------------------------------------------- Translate
def translate(ctx: SpaceContext, text: str, model: str, strategy: str = "beam", beam_size: int = 4,
              length_penalty: float = 0.6, temperature: float = 1.0, top_p: float = 1.0,
              max_length: int = 0) -> Tuple[str, float]:
    """Several lines -> several translations, decoded as one batch; returns (text, milliseconds)."""
    clean = clean_text(text, ctx.limits)
    config = decoding_config(ctx, strategy, beam_size, length_penalty, temperature, top_p, max_length)
    name, loaded = pick_model(ctx, model)
    results, seconds = run(ctx, name, loaded, clean.sentences, config)
    _truncation_note(results)
    return "\n".join(_align(clean.lines, [r.text for r in results])), round(seconds * 1000.0, 1)


# ---------------------------------------------------------------------------- Beam vs greedy
def _summary(hyp, seconds: float) -> Dict[str, Any]:
    return {"text": hyp.text, "score": round(float(hyp.score), 4), "normalized_score": round(float(hyp.normalized_score), 4),
            "length": len(hyp), "tokens": len(hyp.tokens), "finished": bool(getattr(hyp, "finished", True)),
            "ms": round(seconds * 1000.0, 1)}


def compare(ctx: SpaceContext, text: str, model: str, beam_size: int = 4, length_penalty: float = 0.6,
            n_best: int = 4, max_length: int = 0):
    """One sentence, decoded greedily and with beam search; returns outputs, a table, the n-best list, a verdict."""
    clean = clean_text(text, ctx.limits, single=True)
    sentence = clean.sentences[0]
    n_best = int_option("n-best", n_best, 1, ctx.limits.max_beam)
    beam_size = int_option("beam size", beam_size, 1, ctx.limits.max_beam)
    beam_config = decoding_config(ctx, "beam", beam_size, length_penalty, max_length=max_length,
                                  n_best=min(n_best, beam_size))
    # greedy is scored under the same length penalty, so the normalised scores compare on one scale
    greedy_config = decoding_config(ctx, "greedy", length_penalty=length_penalty, max_length=max_length)
    name, loaded = pick_model(ctx, model)
    (greedy,), greedy_s = run(ctx, name, loaded, [sentence], greedy_config)
    (beam,), beam_s = run(ctx, name, loaded, [sentence], beam_config)
    g, b = _summary(greedy.best, greedy_s), _summary(beam.best, beam_s)
    differ = g["text"] != b["text"]
    if differ:
        better = "beam" if b["normalized_score"] > g["normalized_score"] else "greedy"
        verdict = (f"**They differ.** Beam search (k={beam_size}) found a different translation; by the "
                   f"length-normalised score the {better} output is better "
                   f"({b['normalized_score']:.3f} vs {g['normalized_score']:.3f}).")
    else:
        verdict = (f"**They agree:** beam search (k={beam_size}) and greedy decoding give the same translation "
                   f"(score {g['score']:.3f}).")
    table = [[key, g[key], b[key]] for key in ("score", "normalized_score", "length", "ms")]
    nbest = [[rank, h.text, round(float(h.score), 4), round(float(h.normalized_score), 4), len(h)]
             for rank, h in enumerate(beam.hypotheses, 1)]
    data = {"source": sentence, "greedy": g, "beam": b, "differ": differ, "beam_size": beam_size,
            "length_penalty": beam_config.length_penalty,
            "n_best": [{"rank": r[0], "text": r[1], "score": r[2], "normalized_score": r[3], "length": r[4]}
                       for r in nbest]}
    return g["text"], b["text"], table, nbest, verdict, data


# ---------------------------------------------------------------------------- Architecture variants
def describe_models(ctx: SpaceContext) -> List[List[Any]]:
    """One row per available model: its configuration and, where measured, BLEU / training time / speed."""
    results = ctx.store.results()
    rows = []
    for name in ctx.store.names():
        try:
            cfg = ctx.store.config(name)
        except Exception as exc:  # noqa: BLE001 - one broken folder must not hide the others
            rows.append([name, f"(unreadable: {exc})"] + [""] * (len(MODEL_COLUMNS) - 2))
            continue
        measured = flatten(results.get(name.split("/", 1)[-1], results.get(name, {})))
        rows.append([
            name, cfg.layout, cfg.positional, cfg.norm, cfg.feed_forward, cfg.attention,
            cfg.d_model, cfg.n_heads, cfg.d_ff, f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers}",
            _params(ctx, name, cfg, measured), _measured(measured, "bleu"), _measured(measured, "chrf"),
            _measured(measured, "train_time"), _measured(measured, "speed"),
        ])
    return rows


MODEL_COLUMNS = ["model", "layout", "positional", "norm", "feed-forward", "attention", "d_model", "heads", "d_ff",
                 "layers (enc+dec)", "parameters", "test BLEU", "test chrF", "training time", "decoding speed"]


def flatten(data: Any, prefix: str = "") -> Dict[str, Any]:
    """{"test_2016_flickr": {"bleu": 38.1}} -> {"test_2016_flickr.bleu": 38.1} (lower-case keys)."""
    out: Dict[str, Any] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{str(key).lower()}."))
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        out[prefix.rstrip(".")] = data
    return out


def _params(ctx: SpaceContext, name: str, cfg, measured: Dict[str, Any]) -> str:
    for key in ("parameters", "params", "n_parameters", "num_parameters"):
        if key in measured:
            return f"{int(measured[key]):,}"
    if name in ctx.store.loaded():
        return f"{ctx.store.get(name).num_parameters():,}"
    return f"{cfg.num_parameters():,}"


def _measured(measured: Dict[str, Any], what: str) -> str:
    """Find a measured number in a results row whatever its exact key (the variant study names them)."""
    def find(*tests):
        for key, value in measured.items():
            if all(t(key) for t in tests):
                return key, value
        return None

    hit = None
    if what in ("bleu", "chrf"):
        plain = lambda k: "lower" not in k and "signature" not in k  # noqa: E731 - cased BLEU first
        hit = (find(lambda k: what in k, lambda k: "test" in k, plain) or find(lambda k: what in k, plain)
               or find(lambda k: what in k))
        return f"{hit[1]:.2f}" if hit else "—"
    if what == "train_time":
        hit = find(lambda k: "train" in k, lambda k: any(u in k for u in ("time", "second", "minute", "hour"))
                   and "per" not in k)
        if not hit:
            return "—"
        key, value = hit
        minutes = value / 60 if not any(u in key for u in ("minute", "_min", "hour")) else value
        minutes = value * 60 if "hour" in key else minutes
        return f"{minutes:.1f} min"
    hit = find(lambda k: "sentences_per" in k or "sent_per" in k) or find(lambda k: "decod" in k and "per" in k)
    if hit:
        return f"{hit[1]:,.1f} sent/s"
    hit = find(lambda k: "tokens_per" in k)
    return f"{hit[1]:,.0f} tok/s (training)" if hit else "—"


def variants_translate(ctx: SpaceContext, text: str, models: Sequence[str], strategy: str = "beam",
                       beam_size: int = 4):
    """The same input translated by each chosen model; one row per model (and per line)."""
    clean = clean_text(text, ctx.limits)
    if isinstance(models, str):
        models = [models]
    models = [m for m in (models or []) if m]
    for name in models:
        if not isinstance(name, str):
            raise gr.Error(f"The models must be given by their names, got {type(name).__name__}.")
    if not models:
        raise gr.Error("Pick at least one model to translate with (two or more to compare them).")
    if len(models) > ctx.limits.max_models:
        raise gr.Error(f"Pick at most {ctx.limits.max_models} models at a time.")
    config = decoding_config(ctx, strategy, beam_size)
    rows = []
    for name in dict.fromkeys(models):
        _, loaded = pick_model(ctx, name)
        results, seconds = run(ctx, name, loaded, clean.sentences, config)
        rows.append([name, "\n".join(r.text for r in results), round(seconds * 1000.0, 1),
                     round(sum(float(r.best.normalized_score) for r in results) / len(results), 4),
                     f"{loaded.num_parameters():,}"])
    return rows


def architecture(ctx: SpaceContext, model: str):
    """A diagram of the chosen model's architecture (from its config only)."""
    if not model:
        raise gr.Error("Pick a model to draw.")
    if model not in ctx.store.specs:
        raise gr.Error(f"Unknown model {model!r}; available: {', '.join(ctx.store.names())}.")
    from .plots import architecture_figure

    return architecture_figure(ctx.store.config(model), title=model)


# ---------------------------------------------------------------------------- Attention
def layer_head_choices(ctx: SpaceContext, model: Optional[str]) -> Tuple[List[tuple], List[tuple]]:
    """Dropdown choices (label, value) for layers and heads; value 0 means 'average'."""
    layers, heads = 6, 8
    if model in ctx.store.specs:
        try:
            cfg = ctx.store.config(model)
            layers, heads = cfg.n_decoder_layers, cfg.n_heads
        except Exception:  # noqa: BLE001 - the attention call will report the real problem
            pass
    return ([("average of all layers", 0)] + [(f"layer {i}", i) for i in range(1, layers + 1)],
            [("average of all heads", 0)] + [(f"head {i}", i) for i in range(1, heads + 1)])


def attention(ctx: SpaceContext, text: str, model: str, strategy: str = "greedy", beam_size: int = 4,
              layer: int = 0, head: int = 0):
    """Cross-attention of the translation: (figure, data with the matrix and the piece labels, translation)."""
    clean = clean_text(text, ctx.limits, single=True)
    strategy = choice_option("strategy", strategy, ("greedy", "beam"))
    config = decoding_config(ctx, strategy, beam_size, attention=True)
    name, loaded = pick_model(ctx, model)
    (result,), seconds = run(ctx, name, loaded, clean.sentences, config)
    hyp = result.best
    weights = hyp.attention
    if weights is None:
        raise gr.Error(f"Model {name!r} did not return attention weights for this translation.")
    n_layers, n_heads = weights.shape[0], weights.shape[1]
    layer = int_option("layer", layer, 0, n_layers)
    head = int_option("head", head, 0, n_heads)
    picked = weights[layer - 1:layer] if layer else weights  # (layers, heads, T, S)
    picked = picked[:, head - 1:head] if head else picked
    matrix = picked.float().mean(dim=(0, 1))  # (T, S)
    source = list(result.source_pieces) or loaded.tokenizer.pieces(result.source_ids, side="source")
    target = result.target_pieces(loaded.tokenizer)
    rows, cols = matrix.shape
    source = (source + ["?"] * cols)[:cols]   # labels always match the matrix, whatever the library reports
    target = (target + ["?"] * rows)[:rows]
    where = f"{'layer ' + str(layer) if layer else 'all layers'}, {'head ' + str(head) if head else 'all heads'}"
    from .plots import attention_figure

    figure = attention_figure(matrix.tolist(), source, target, f"Cross-attention ({where}) · {name}")
    data = {"model": name, "translation": hyp.text, "layer": layer, "head": head, "shape": [rows, cols],
            "source_pieces": source, "target_pieces": target,
            "matrix": [[round(float(v), 4) for v in row] for row in matrix.tolist()],
            "layers": n_layers, "heads": n_heads, "ms": round(seconds * 1000.0, 1)}
    return figure, data, hyp.text
