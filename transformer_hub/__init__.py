"""transformer_hub: the Transformer of "Attention Is All You Need", from scratch, Hub-native."""
from .config import PRESETS, TransformerConfig
from .decoding import STRATEGIES, DecodingConfig, Hypothesis, TranslationResult, generate
from .model import DecoderOutput, EncoderState, KVCache
from .registry import (ATTENTION, FEED_FORWARD, LAYOUT, NORM, PARTS, POSITIONAL, PartDescriptionError, Registry,
                       load_plugins)
from .text import translate_texts
from .tokenizer import Tokenizer
from .transformer import Transformer


def register_builtin_parts() -> None:
    """Register the built-in architecture parts, decoding strategies, engines and export formats (idempotent).

    Each registry is filled by the ``@REGISTRY.register(name)`` decorators of the modules that define its
    entries; importing those modules is what registers them.  Called below, so any import of ``transformer_hub``
    or of a submodule sees every built-in name (``TransformerConfig`` checks its variant names against them).
    """
    from .model import model, stacks, variants  # noqa: F401  (the paper's parts and layout; the alternatives)
    from .decoding import beam, engines, strategies  # noqa: F401  (greedy, sample, beam; the pytorch engine)
    from .export import engine  # noqa: F401  (the ctranslate2 engine; export/__init__ registers the formats)


register_builtin_parts()

__version__ = "0.1.0"
__all__ = [
    "TransformerConfig", "PRESETS", "Transformer", "Tokenizer", "EncoderState", "KVCache", "DecoderOutput",
    "Registry", "PartDescriptionError", "PARTS", "load_plugins", "POSITIONAL", "NORM", "FEED_FORWARD", "ATTENTION",
    "LAYOUT",
    "DecodingConfig", "Hypothesis", "TranslationResult", "STRATEGIES", "generate", "translate_texts",
]
