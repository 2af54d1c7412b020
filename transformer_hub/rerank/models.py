"""The quality mode inside the text pipeline: a ``Models`` (``text.pipeline``) whose ``quality="best"`` reranks.

    from transformer_hub.rerank import RerankedModel
    from transformer_hub.text.pipeline import translate_texts

    models = RerankedModel.from_pretrained("space/models/multilingual")
    translate_texts(models, [paragraph], src_lang="auto", tgt_lang="de", quality="best")[0].text

The pipeline splits, detects and joins as for any model; each sentence of a direction is then reranked by the
model's ``Reranker`` (its tuned beam, features and weights; a model trained with domain tags searches and scores
in the sentence's domain, the pipeline's ``domain``), so a sentence's output is ``Reranker.translate``'s for it.
``quality="fast"`` decodes with the given ``DecodingConfig``, as ``OneModel`` does.  ``rerank_in_worker`` is the
same decoding for a ``DecodingPool`` worker (the Space's), where the model already lives.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..decoding import DecodingConfig, TranslationResult
from ..decoding.config import one_per_text
from ..text.models import OneModel, check_quality
from .reranker import RERANK_FILE, Reranker

ENGINE = "pytorch"  # the reranker's searches and forced scores run on the PyTorch model
_WORKER_RERANKERS: Dict[tuple, Reranker] = {}  # in a worker: the rerankers built on its models (and helpers)
_WORKER_KEPT = 2


def rerank_sentences(reranker: Reranker, sentences: Sequence[str], src_langs: Sequence[Optional[str]],
                     tgt_langs: Sequence[Optional[str]], progress: bool = False,
                     domains: Optional[Sequence[Optional[str]]] = None) -> List[TranslationResult]:
    """Each sentence reranked in its own direction and domain (``domains``: one per sentence, None: the model's
    default; one ``Reranker.results`` call per direction and domain), in order."""
    domains = list(domains) if domains is not None else [None] * len(sentences)
    groups: Dict[Tuple[Optional[str], Optional[str], Optional[str]], List[int]] = {}
    for i, key in enumerate(zip(src_langs, tgt_langs, domains)):
        groups.setdefault(key, []).append(i)
    out: List[Optional[TranslationResult]] = [None] * len(sentences)
    for (src, tgt, domain), rows in groups.items():
        for i, result in zip(rows, reranker.results([sentences[i] for i in rows], src, tgt, progress=progress,
                                                    domain=domain)):
            out[i] = result
    return out  # type: ignore[return-value]


def refuse_search_options(prefix: Optional[list], constraints: Optional[list]) -> None:
    """ValueError for a forced prefix or constraints: the quality mode has neither."""
    if prefix is not None and any(prefix):
        raise ValueError("quality='best' reranks whole outputs: it cannot force a prefix (use quality='fast')")
    if constraints is not None and any(constraints):
        raise ValueError("quality='best' has no constrained search: constraints and glossaries need quality='fast'")


class RerankedModel(OneModel):
    """One model and its tuned reranker: ``quality="best"`` reranks each sentence's n-best, ``"fast"`` decodes
    with the given config; a direction without tuned weights is refused for "best" when the model is chosen."""

    def __init__(self, reranker: Reranker, name: Optional[str] = None) -> None:
        super().__init__(reranker.model, name)
        self.reranker = reranker

    @classmethod
    def from_pretrained(cls, folder: Union[str, os.PathLike], model: Any = None,
                        name: Optional[str] = None) -> "RerankedModel":
        """The model in ``folder`` (or ``model``), its ``rerank.json`` and helper models."""
        return cls(Reranker.from_pretrained(folder, model=model), name)

    def choose(self, src_lang: Optional[str], tgt_lang: Optional[str], quality: str = "fast",
               domain: Optional[str] = None) -> str:
        # refused now, before any decoding, when the direction is known (a blank text may have no source)
        if check_quality(quality) == "best" and (src_lang is not None or not self.model.config.multilingual):
            self.reranker.direction(src_lang, tgt_lang)  # ValueError naming the tuned directions
        return self.name

    def decode(self, name: str, sentences: List[str], src_langs: list, tgt_langs: list, config: DecodingConfig,
               quality: str = "fast", prefix: Optional[list] = None, constraints: Optional[list] = None,
               **options: Any) -> Tuple[List[TranslationResult], str]:
        """"fast": ``OneModel``'s decoding with ``config``; "best": the reranker's (``config`` does not apply:
        the search is the direction's tuned one); both read ``options["domain"]`` (one per sentence, the
        pipeline's for a model trained with domain tags) as ``generate`` does."""
        if check_quality(quality) == "fast":
            extra = {k: v for k, v in (("prefix", prefix), ("constraints", constraints)) if v is not None}
            return super().decode(name, sentences, src_langs, tgt_langs, config, **extra, **options)
        refuse_search_options(prefix, constraints)
        results = rerank_sentences(self.reranker, sentences, src_langs, tgt_langs, bool(options.get("progress")),
                                   one_per_text(options.get("domain"), len(sentences), "domain", "one name"))
        return results, ENGINE


def has_rerank_file(folder: Union[str, os.PathLike]) -> bool:
    return (Path(folder) / RERANK_FILE).is_file()


def rerank_in_worker(model: Any, folder: str, sentences: List[str], src_langs: list, tgt_langs: list,
                     domains: Optional[list] = None, prefix: Optional[list] = None,
                     constraints: Optional[list] = None) -> List[TranslationResult]:
    """``rerank_sentences`` on a ``DecodingPool`` worker's ``model`` (``pool.call(rerank_in_worker, folder, ...)``),
    with the ``rerank.json`` and helpers of ``folder`` and each sentence's domain (``domains``, None: the
    model's default); the reranker is kept for the next call (until its file changes)."""
    refuse_search_options(prefix, constraints)
    path = Path(folder) / RERANK_FILE
    # the model is part of the key (and kept alive by the entry), so a reloaded model gets a reranker of its own
    key = (str(path.resolve()), path.stat().st_mtime_ns if path.is_file() else None, id(model))
    if key not in _WORKER_RERANKERS:
        while len(_WORKER_RERANKERS) >= _WORKER_KEPT:
            _WORKER_RERANKERS.pop(next(iter(_WORKER_RERANKERS)))
        _WORKER_RERANKERS[key] = Reranker.from_pretrained(folder, model=model)
    return rerank_sentences(_WORKER_RERANKERS[key], sentences, src_langs, tgt_langs, domains=domains)
