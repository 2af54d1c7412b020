"""The network of section 3 (``model.py``: the parts; ``stacks.py``: the stacks and the whole), its alternatives
(``variants/``), the key/value cache of incremental decoding (``cache.py``), the loss of section 5.4
(``losses.py``) and the speed-only kernels (``kernels.py``: opt-in, the model itself never imports them).

Nothing here imports decoding, the Hub or training: they take the model they are handed.  The class users
meet, ``transformer_hub.Transformer``, adds saving/loading and ``translate`` on top of ``BaseTransformer``.
"""
from .cache import EncoderState, KeyValueBuffer, KVCache
from .model import (Dropout, Embeddings, MathAttention, MultiHeadAttention, Parts, PositionalEncoding,
                    PositionwiseFeedForward, PostNorm, Rotate, SinusoidalPositionalEncoding, Tensor, no_dropout,
                    scaled_dot_product_attention, sinusoid_table)
from .stacks import BaseTransformer, DecoderLayer, DecoderOutput, EncoderDecoder, EncoderLayer, causal_mask

__all__ = [
    "BaseTransformer", "EncoderDecoder", "Parts", "Embeddings", "PositionalEncoding", "SinusoidalPositionalEncoding",
    "sinusoid_table", "scaled_dot_product_attention", "MathAttention", "MultiHeadAttention",
    "PositionwiseFeedForward", "PostNorm", "EncoderLayer", "DecoderLayer", "DecoderOutput", "causal_mask",
    "EncoderState", "KVCache", "KeyValueBuffer", "Dropout", "no_dropout", "Rotate", "Tensor",
]
