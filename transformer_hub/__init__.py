"""transformer_hub: the Transformer of "Attention Is All You Need", from scratch, Hub-native."""
from . import decoding, hub
from .parts import register_builtin_parts
from .config import PRESETS, TransformerConfig
from .decoding import STRATEGIES, DecodingConfig, Hypothesis, TranslationResult, generate
from .model import DecoderOutput, EncoderState, KVCache, Transformer
from .registry import ATTENTION, FEED_FORWARD, LAYOUT, NORM, POSITIONAL, Registry, load_plugins
from .tokenizer import Tokenizer

register_builtin_parts()  # the built-in variants, strategies, engines and export formats, by name

# model.py is the paper and imports neither decoding nor the Hub (they sit above it); the package gives the
# class its conveniences here, so every import of transformer_hub (or of any submodule) sees them.
Transformer.translate = decoding.translate  # model.translate(texts, strategy=..., **options) -> list[str]
Transformer._save_pretrained = hub.save_folder  # PyTorchModelHubMixin.save_pretrained / push_to_hub call this hook
Transformer.from_pretrained = classmethod(hub.from_pretrained)  # strict loading, never unpickles

__version__ = "0.1.0"
__all__ = [
    "TransformerConfig", "PRESETS", "Transformer", "Tokenizer", "EncoderState", "KVCache", "DecoderOutput",
    "Registry", "load_plugins", "POSITIONAL", "NORM", "FEED_FORWARD", "ATTENTION", "LAYOUT",
    "DecodingConfig", "Hypothesis", "TranslationResult", "STRATEGIES", "generate",
]
