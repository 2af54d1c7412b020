"""The single-sentence comparisons of the Beam vs greedy and Architecture variants tabs: one fixed model (or
several, side by side) decoding one input with each option, not the translation pipeline's per-direction choice;
the beam search as a tree; and the architecture diagram drawn from a model's config."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from transformer_hub.hub import ModelLoadError

from ..hosting.limits import RequestError, clean_text, int_option
from ..serving.context import SpaceContext
from ..serving.service import DEFAULT_ENGINE, decoding_config, engine_note, languages_for, pick_engine, pick_model, run


# ---------------------------------------------------------------------------- Beam vs greedy
def _summary(hyp, seconds: float) -> Dict[str, Any]:
    return {"text": hyp.text, "score": round(float(hyp.score), 4),
            "normalized_score": round(float(hyp.normalized_score), 4), "length": len(hyp), "tokens": len(hyp.tokens),
            "finished": bool(getattr(hyp, "finished", True)), "ms": round(seconds * 1000.0, 1)}


def _verdict(g: Dict[str, Any], b: Dict[str, Any], beam_size: int) -> str:
    if g["text"] == b["text"]:
        return (f"**They agree:** beam search (k={beam_size}) and greedy decoding give the same translation "
                f"(score {g['score']:.3f}).")
    better = "beam" if b["normalized_score"] > g["normalized_score"] else "greedy"
    return (f"**They differ.** Beam search (k={beam_size}) found a different translation; by the "
            f"length-normalised score the {better} output is better "
            f"({b['normalized_score']:.3f} vs {g['normalized_score']:.3f}).")


def compare(ctx: SpaceContext, text: str, model: str, beam_size: int = 4, length_penalty: float = 0.6,
            n_best: int = 4, max_length: int = 0, source_lang: str = "en", target_lang: str = "de",
            engine: str = DEFAULT_ENGINE):
    """One sentence, decoded greedily and with beam search; returns outputs, a table, the n-best list, a verdict,
    and that beam search as a tree (``search_tree``).  With an engine that keeps no trace, the tree is
    PyTorch's search, and the verdict says so."""
    sentence = clean_text(text, ctx.limits, single=True).sentences[0]
    n_best = int_option("n-best", n_best, 1, ctx.limits.max_beam)
    beam_size = int_option("beam size", beam_size, 1, ctx.limits.max_beam)
    engine = pick_engine(engine)
    # one beam search gives the result and the tree, traced where the engine can ("auto" then picks PyTorch)
    beam_config = decoding_config(ctx, "beam", beam_size, length_penalty, max_length=max_length,
                                  n_best=min(n_best, beam_size), return_search=engine in ("pytorch", "auto"))
    # greedy is scored under the same length penalty, so the normalised scores compare on one scale
    greedy_config = decoding_config(ctx, "greedy", length_penalty=length_penalty, max_length=max_length)
    name = pick_model(ctx, model, source_lang, target_lang)
    pair = languages_for(ctx, name, source_lang, target_lang)
    (greedy,), greedy_s = run(ctx, name, [sentence], greedy_config, pair, engine)
    (beam,), beam_s = run(ctx, name, [sentence], beam_config, pair, engine)
    (traced,), tree_s = ((beam,), beam_s) if beam.search is not None else run(
        ctx, name, [sentence], beam_config.replace(return_search=True), pair, "pytorch")
    tree = search_tree(ctx, name, sentence, traced, beam_size, tree_s)
    g, b = _summary(greedy.best, greedy_s), _summary(beam.best, beam_s)
    table = [[key, g[key], b[key]] for key in ("score", "normalized_score", "length", "ms")]
    nbest = [[rank, h.text, round(float(h.score), 4), round(float(h.normalized_score), 4), len(h)]
             for rank, h in enumerate(beam.hypotheses, 1)]
    data = {"source": sentence, "greedy": g, "beam": b, "differ": g["text"] != b["text"], "beam_size": beam_size,
            "length_penalty": beam_config.length_penalty, "engine": engine,
            "source_lang": pair[0] or source_lang, "target_lang": pair[1] or target_lang,
            "n_best": [{"rank": r[0], "text": r[1], "score": r[2], "normalized_score": r[3], "length": r[4]}
                       for r in nbest]}
    verdict = _verdict(g, b, beam_size) + f"  \n{engine_note(engine, greedy_s + beam_s)} (both decodes)"
    if traced is not beam:
        verdict += f"  \nThe tree below is PyTorch's beam search with the same options: {engine} keeps no trace."
    return (g["text"], b["text"], table, nbest, verdict, data) + tree


def beam_tree(ctx: SpaceContext, text: str, beam_size: int = 4, model: Optional[str] = None,
              source_lang: str = "en", target_lang: str = "de", length_penalty: float = 0.6, max_length: int = 0):
    """Beam search as a tree, for API callers: (picture, the trace as JSON with the chosen path).

    PyTorch's beam search (no other engine keeps a trace); the Beam vs greedy tab draws its tree from the
    beam search of its comparison instead (``compare``)."""
    sentence = clean_text(text, ctx.limits, single=True).sentences[0]
    beam_size = int_option("beam size", beam_size, 1, ctx.limits.max_beam)
    name = pick_model(ctx, model, source_lang, target_lang)
    config = decoding_config(ctx, "beam", beam_size, length_penalty, max_length=max_length, return_search=True)
    (result,), seconds = run(ctx, name, [sentence], config, languages_for(ctx, name, source_lang, target_lang))
    return search_tree(ctx, name, sentence, result, beam_size, seconds)


def search_tree(ctx: SpaceContext, name: str, sentence: str, result, beam_size: int, seconds: float):
    """A beam search's result (decoded with ``return_search=True``) as a tree: (picture, the trace as JSON)."""
    if result.search is None:
        raise RequestError(f"Model {name!r} returned no search trace for this sentence.")
    tokenizer = ctx.store.tokenizer(name)
    search, eos = result.search, ctx.store.config(name).eos_id
    found = search.locate(result.best, eos)
    path = [] if found is None else [[t, node.tokens] for t, node in
                                     enumerate(search.path(found[0], search.steps[found[0]].finished[found[1]]))]
    from ..pictures.beam_tree import beam_tree_figure

    figure = beam_tree_figure(search, lambda ids: tokenizer.pieces(ids, side="target"), found,
                              title=f"Beam search, k={beam_size} · {name}: {result.best.text}")
    data = {"model": name, "source": sentence, "translation": result.best.text, "beam_size": beam_size,
            "engine": "pytorch", "chosen": None if found is None else {"step": found[0], "finished_index": found[1]},
            "chosen_path": path, "search": search.to_dict(), "ms": round(seconds * 1000.0, 1)}
    return figure, data


# ---------------------------------------------------------------------------- Architecture variants
def variants_translate(ctx: SpaceContext, text: str, models: Sequence[str], strategy: str = "beam",
                       beam_size: int = 4, source_lang: str = "en", target_lang: str = "de",
                       engines: Sequence[str] = (DEFAULT_ENGINE,)):
    """The same input translated by each chosen model with each chosen engine; one row per (model, engine)."""
    clean = clean_text(text, ctx.limits)
    models = [models] if isinstance(models, str) else [m for m in (models or []) if m]
    engines = [engines] if isinstance(engines, str) else [e for e in (engines or []) if e]
    for name in models:
        if not isinstance(name, str):
            raise RequestError(f"The models must be given by their names, got {type(name).__name__}.")
    if not models:
        raise RequestError("Pick at least one model to translate with (two or more to compare them).")
    if len(models) > ctx.limits.max_models:
        raise RequestError(f"Pick at most {ctx.limits.max_models} models at a time.")
    if not engines:
        raise RequestError("Pick at least one engine.")
    engines = [pick_engine(e) for e in dict.fromkeys(engines)]
    config = decoding_config(ctx, strategy, beam_size)
    rows = []
    for name in dict.fromkeys(models):
        name = pick_model(ctx, name)
        try:
            cfg = ctx.store.config(name)
            pair = languages_for(ctx, name, source_lang, target_lang)
        except (RequestError, ModelLoadError) as exc:  # one model that cannot serve must not hide the others
            rows += [[name, engine, f"({getattr(exc, 'message', exc)})", None, None, ""] for engine in engines]
            continue
        for engine in engines:
            try:
                results, seconds = run(ctx, name, clean.sentences, config, pair, engine)
            except (ValueError, ModelLoadError) as exc:  # e.g. a layout an engine cannot run
                rows.append([name, engine, f"({exc})", None, None, f"{cfg.num_parameters():,}"])
                continue
            rows.append([name, engine, "\n".join(r.text for r in results), round(seconds * 1000.0, 1),
                         round(sum(float(r.best.normalized_score) for r in results) / len(results), 4),
                         f"{cfg.num_parameters():,}"])
    return rows


def architecture(ctx: SpaceContext, model: str):
    """A diagram of the chosen model's architecture (from its config only)."""
    if not model:
        raise RequestError("Pick a model to draw.")
    if not isinstance(model, str) or model not in ctx.store.specs:
        raise RequestError(f"Unknown model {model!r}; available: {', '.join(ctx.store.names())}.")
    from ..pictures.architecture import architecture_figure

    return architecture_figure(ctx.store.config(model), title=model)
