"""Better outputs from the same models: n-best reranking (noisy channel, a second model, MBR), tuned on val.

    from transformer_hub.rerank import Reranker
    best = Reranker.from_pretrained("space/models/multilingual")   # reads rerank.json beside the weights
    best.translate(["A dog runs in the park."], src_lang="en", tgt_lang="de")

``python -m scripts.tune_rerank`` makes ``rerank.json``; ``quality="best"`` (CLI ``--quality best``) is this mode.
In the text pipeline it is ``RerankedModel``: ``translate_texts(RerankedModel.from_pretrained(folder), texts,
src_lang=..., tgt_lang=..., quality="best")``.
"""
from .features import FEATURES, NBestList, SearchSettings, collect
from .mbr import expected_utility, mbr_choice, utility
from ..text.models import QUALITIES
from .reranker import RERANK_FILE, DirectionWeights, Reranked, Reranker, RerankFile
from .models import RerankedModel, has_rerank_file, refuse_search_options, rerank_in_worker, rerank_sentences

__all__ = ["FEATURES", "NBestList", "SearchSettings", "collect", "expected_utility", "mbr_choice", "utility",
           "QUALITIES", "RERANK_FILE", "DirectionWeights", "Reranked", "Reranker", "RerankFile",
           "RerankedModel", "has_rerank_file", "refuse_search_options", "rerank_in_worker", "rerank_sentences"]
