"""Better outputs from the same models: n-best reranking (noisy channel, a second model, MBR), tuned on val.

    from transformer_hub.rerank import Reranker
    best = Reranker.from_pretrained("space/models/multilingual")   # reads rerank.json beside the weights
    best.translate(["A dog runs in the park."], src_lang="en", tgt_lang="de")

``python -m scripts.tune_rerank`` makes ``rerank.json``; ``quality="best"`` (CLI ``--quality best``) is this mode.
"""
from .features import FEATURES, NBestList, SearchSettings, collect
from .mbr import expected_utility, mbr_choice, utility
from .reranker import QUALITIES, RERANK_FILE, DirectionWeights, Reranked, Reranker, RerankFile

__all__ = ["FEATURES", "NBestList", "SearchSettings", "collect", "expected_utility", "mbr_choice", "utility",
           "QUALITIES", "RERANK_FILE", "DirectionWeights", "Reranked", "Reranker", "RerankFile"]
