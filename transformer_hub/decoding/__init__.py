"""Decoding: greedy, beam search and sampling over ``model.encode`` / ``model.decode`` with a key/value cache.

    from transformer_hub.decoding import DecodingConfig, generate
    results = generate(model, ["A dog runs."], strategy="beam", beam_size=4, n_best=2, return_attention=True)
    results[0].text, results[0].hypotheses[1].normalized_score, results[0].best.attention.shape
    generate(model, ["A dog runs."], prefix="Ein Hu", return_alternatives=5)      # forced start; per-token choices
    generate(model, ["A dog runs."], strategy="beam", return_search=True)[0].search  # the beam search tree
    generate(model, ["A dog runs."], strategy="beam", constraints=[["Hund"]])       # phrases the output must hold
    generate(model, ["A dog."], strategy="beam", constraints=[[Term("Köter", "dog")]], anchoring=Anchoring(gate=0.5))

Strategies are registered by name in ``STRATEGIES`` (``@STRATEGIES.register("name")``);
the options live in :class:`DecodingConfig`, apart from the model's config.
Engines (``ENGINES``: "pytorch", "ctranslate2"; or an engine object) do the decoding;
:class:`DecodingPool` is one that decodes on several cores, in worker processes.
"""
from .api import decode_ids, generate
from .config import DecodingConfig, length_penalty
from .constraints import Anchoring
from .engines import ENGINES, Engine, PyTorchEngine, get_engine
from .pool import DecodingPool
from .results import CONFIDENCE_THRESHOLD, Hypothesis, SearchNode, SearchStep, SearchTrace, TranslationResult
from .strategies import STRATEGIES, Batch, Stepper

__all__ = ["Anchoring", "CONFIDENCE_THRESHOLD", "DecodingConfig", "DecodingPool", "Hypothesis", "TranslationResult",
           "STRATEGIES", "generate", "decode_ids", "length_penalty", "Batch", "Stepper", "SearchTrace", "SearchStep",
           "SearchNode", "ENGINES", "Engine", "PyTorchEngine", "get_engine"]
