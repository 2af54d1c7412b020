"""transformer_hub: the Transformer of "Attention Is All You Need", from scratch, Hub-native."""
from . import variants  # noqa: F401 - registers the built-in alternatives
from .config import PRESETS, TransformerConfig
from .decoding import STRATEGIES, DecodingConfig, Hypothesis, TranslationResult, generate
from .model import DecoderOutput, EncoderState, KVCache, Transformer
from .registry import ATTENTION, FEED_FORWARD, LAYOUT, NORM, POSITIONAL, Registry, load_plugins
from .tokenizer import Tokenizer

__version__ = "0.1.0"
__all__ = [
    "TransformerConfig", "PRESETS", "Transformer", "Tokenizer", "EncoderState", "KVCache", "DecoderOutput",
    "Registry", "load_plugins", "POSITIONAL", "NORM", "FEED_FORWARD", "ATTENTION", "LAYOUT",
    "DecodingConfig", "Hypothesis", "TranslationResult", "STRATEGIES", "generate",
]
