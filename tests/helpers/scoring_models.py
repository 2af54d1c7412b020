"""Random tiny models over a tokenizer with language tags, for the forced-scoring and reranking tests."""
import functools

import torch

from transformer_hub import Tokenizer, Transformer, TransformerConfig

from .decoding_fixtures import synthetic_pairs

LANGS = ["en", "de", "fr"]
MULTILINGUAL = dict(languages=LANGS, src_lang=None, tgt_lang=None)  # the config overrides of a multilingual model


@functools.lru_cache(maxsize=None)
def _tokenizer() -> Tokenizer:
    pairs = synthetic_pairs(300, seed=4)
    return Tokenizer.train([s for s, _ in pairs], [t for _, t in pairs], vocab_size=300, languages=LANGS)


def random_model(seed: int = 0, **overrides) -> Transformer:
    """A random tiny model over a tokenizer with language tags (eos made likelier, so outputs end)."""
    tok = _tokenizer()
    if overrides.get("layout") == "decoder-only":
        overrides.setdefault("n_encoder_layers", 0)
    torch.manual_seed(seed)
    model = Transformer(TransformerConfig.preset("tiny", src_vocab_size=tok.src_vocab_size,
                                                 tgt_vocab_size=tok.tgt_vocab_size, **overrides))
    model.tokenizer = tok
    with torch.no_grad():
        model.body.generator.weight[model.config.eos_id] *= 3.0
    return model.eval()
