"""The Space's ``quality="best"``: which model has tuned reranking weights for a direction, and reranking in the
decoding worker.

``SpaceModels`` (service.py) asks here when the pipeline passes it ``quality="best"``: the model is the one asked
for, if its folder's ``rerank.json`` has weights for the direction, or (model "auto") the direction's best-scored
model if it has them, else the first model that does; the sentences are reranked by
``transformer_hub.rerank.rerank_in_worker`` in the decoding worker, which holds the weights (the server process
reads only the small ``rerank.json``), queued with every other decode in the decoder's micro-batcher.
Anything else is a ``ValueError`` with a plain message (a 400 on REST).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set, Tuple

from transformer_hub.decoding import TranslationResult
from transformer_hub.rerank import RERANK_FILE, RerankFile, refuse_search_options, rerank_in_worker
from transformer_hub.text.models import QUALITIES

from .context import SpaceContext

_TUNED: Dict[Tuple[str, int], Set[str]] = {}  # (rerank.json, its mtime) -> its directions ("en-de")
_LOCK = threading.Lock()


def quality_option(value: object) -> str:
    """The page's "Best quality" box (True / False) or an API caller's "fast" / "best" as a quality."""
    if isinstance(value, bool) or value is None:
        return "best" if value else "fast"
    if not isinstance(value, str) or value not in QUALITIES:
        raise ValueError(f"quality must be one of {', '.join(QUALITIES)} (or the page's true / false), got {value!r}")
    return value


def tuned_directions(ctx: SpaceContext, name: str) -> Set[str]:
    """The directions ("en-de") model ``name``'s folder has reranking weights for (none for a Hub model)."""
    spec = ctx.store.spec(name)
    path = Path(spec.source) / RERANK_FILE
    if not spec.local or not path.is_file():
        return set()
    key = (str(path), path.stat().st_mtime_ns)
    with _LOCK:
        if key not in _TUNED:
            _TUNED[key] = set(RerankFile.load(path).directions)
        return _TUNED[key]


def best_model(ctx: SpaceContext, model: Optional[str], src_lang: Optional[str], tgt_lang: Optional[str],
               domain: Optional[str] = None) -> str:
    """The model that reranks ``src_lang -> tgt_lang``: ``model`` (a picker name) when it is tuned for it, else
    (``model`` None) the direction's best model on ``domain`` when tuned, else the first tuned one."""
    pair = f"{src_lang}-{tgt_lang}"
    if model is not None:
        if pair not in tuned_directions(ctx, model):
            raise ValueError(_untuned(ctx, f"model {model} has no tuned reranking weights for {src_lang}->{tgt_lang}"))
        return model
    default = ctx.chooser.best(src_lang, tgt_lang, domain) if src_lang and tgt_lang else None
    names = ([default] if default else []) + [n for n in ctx.store.names() if n != default]
    for name in names:
        if pair in tuned_directions(ctx, name):
            return name
    raise ValueError(_untuned(ctx, f"no model has tuned reranking weights for {src_lang}->{tgt_lang}"))


def _untuned(ctx: SpaceContext, what: str) -> str:
    tuned = {name: sorted(tuned_directions(ctx, name)) for name in ctx.store.names()}
    offered = "; ".join(f"{name}: {', '.join(pairs)}" for name, pairs in tuned.items() if pairs)
    return f"{what} (quality best); " + (f"tuned: {offered}" if offered else "no model here is tuned") + \
        ", or use quality fast"


def rerank(ctx: SpaceContext, name: str, sentences: List[str], src_langs: list, tgt_langs: list,
           prefix: Optional[list] = None, constraints: Optional[list] = None, domains: Optional[list] = None,
           cancelled: Optional[Callable[[], bool]] = None) -> List[TranslationResult]:
    """The sentences reranked by model ``name`` in the decoding worker (its ``rerank.json`` and helpers), each
    with its domain (``domains``: the pipeline's, for a model trained with domain tags; None: the default);
    ``batching.Cancelled`` once ``cancelled()`` (the client left)."""
    refuse_search_options(prefix, constraints)
    for src, tgt in dict.fromkeys(zip(src_langs, tgt_langs)):
        best_model(ctx, name, src, tgt)  # refused here, with the message, before the worker is asked
    folder = str(Path(ctx.store.spec(name).source).resolve())  # the worker's rerank.json and helpers

    def decode(batch: List[Tuple[str, str, str, Optional[str]]]) -> List[TranslationResult]:
        return ctx.decoder.call(name, rerank_in_worker, folder, *(list(column) for column in zip(*batch)))

    # through the decoder's micro-batcher: the page's and REST's queue, first come first served with plain
    # decodes and bounded (QueueFull), and concurrent "best" requests of one model merged into one call
    domains = domains if domains is not None else [None] * len(sentences)
    return ctx.decoder.batcher.run(("rerank", name), decode, list(zip(sentences, src_langs, tgt_langs, domains)),
                                   cancelled)
