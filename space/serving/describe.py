"""The variants tab's table: each model's configuration and, where measured, its results (``results.json``)."""
from __future__ import annotations

from typing import Any, List, Optional

from transformer_hub.hub import results as results_json

from .context import SpaceContext

MODEL_COLUMNS = ["model", "languages", "layout", "positional", "norm", "feed-forward", "attention", "d_model",
                 "heads", "d_ff", "layers (enc+dec)", "parameters", "test BLEU", "test chrF", "training time",
                 "training speed", "decoding speed"]
# the page's table: the columns that matter, in a width that fits (the architecture in one cell of words)
PAGE_COLUMNS = ["model", "languages", "architecture", "parameters", "test BLEU", "test chrF", "training (min)",
                "training (tokens/s)", "decoding (sentences/s)"]
NONE = "—"


def _test_score(results: results_json.Results, name: str, metric: str) -> Optional[float]:
    """The model's ``metric`` on a test split: test_2016_flickr first, en-de first where it has several."""
    scores = [s for s in results.results if s.model == name and s.metric == metric and s.split.startswith("test")]
    scores.sort(key=lambda s: (s.split != "test_2016_flickr", s.direction not in (None, "en-de")))
    return scores[0].value if scores else None


def _speeds(model: Optional[results_json.ModelResult]) -> List[str]:
    """(training speed, decoding speed), each with its unit: they are measured in different things."""
    training = model.training.get("train_tokens_per_s") if model else None
    decoding = model.decoding.get("sentences_per_s") if model else None
    return [f"{training:,.0f} tok/s" if isinstance(training, (int, float)) else NONE,
            f"{decoding:,.1f} sent/s" if isinstance(decoding, (int, float)) else NONE]


def page_rows(rows: List[List[Any]]) -> List[List[Any]]:
    """``describe_models``' rows as the page shows them (``PAGE_COLUMNS``): units in the headers, not the cells."""
    out = []
    for row in rows:
        r = dict(zip(MODEL_COLUMNS, row))
        if r.get("layout") in (None, ""):  # an unreadable model: its message
            out.append([r["model"], r["languages"]] + [""] * (len(PAGE_COLUMNS) - 2))
            continue
        architecture = (f"{r['layout']}, {r['positional']} positions, {r['norm']}-norm, {r['feed-forward']}, "
                        f"{r['attention']} attention; d_model {r['d_model']}, {r['heads']} heads, d_ff {r['d_ff']}, "
                        f"{r['layers (enc+dec)']} layers")
        out.append([r["model"], r["languages"], architecture, r["parameters"], r["test BLEU"], r["test chrF"],
                    r["training time"].replace(" min", ""), r["training speed"].replace(" tok/s", ""),
                    r["decoding speed"].replace(" sent/s", "")])
    return out


def _languages(cfg) -> str:
    if cfg.multilingual:
        return ", ".join(cfg.languages)
    return f"{cfg.src_lang}->{cfg.tgt_lang}" if cfg.src_lang and cfg.tgt_lang else NONE


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
        measured = results.model(name)
        bleu, chrf = _test_score(results, name, "bleu"), _test_score(results, name, "chrf")
        minutes = measured.training_minutes() if measured else None
        params = measured.parameters if measured and measured.parameters else cfg.num_parameters()
        rows.append([
            name, _languages(cfg), cfg.layout, cfg.positional, cfg.norm, cfg.feed_forward, cfg.attention,
            cfg.d_model, cfg.n_heads, cfg.d_ff, f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers}", f"{params:,}",
            f"{bleu:.2f}" if bleu is not None else NONE, f"{chrf:.2f}" if chrf is not None else NONE,
            f"{minutes:.1f} min" if minutes is not None else NONE, *_speeds(measured),
        ])
    return rows
