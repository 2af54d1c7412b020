"""transformer_hub: the Transformer of "Attention Is All You Need", from scratch, Hub-native."""
from .config import PRESETS, TransformerConfig
from .decoding import STRATEGIES, DecodingConfig, Hypothesis, TranslationResult, generate
from .parts import register_builtin_parts
from .model import DecoderOutput, EncoderState, KVCache, Transformer
from .registry import ATTENTION, FEED_FORWARD, LAYOUT, NORM, POSITIONAL, Registry, load_plugins
from .tokenizer import Tokenizer

register_builtin_parts()  # the built-in variants, strategies, engines and export formats, by name

__version__ = "0.1.0"
__all__ = [
    "TransformerConfig", "PRESETS", "Transformer", "Tokenizer", "EncoderState", "KVCache", "DecoderOutput",
    "Registry", "load_plugins", "POSITIONAL", "NORM", "FEED_FORWARD", "ATTENTION", "LAYOUT",
    "DecodingConfig", "Hypothesis", "TranslationResult", "STRATEGIES", "generate",
]
