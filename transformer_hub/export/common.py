"""What both exports share: optional packages, which variants a format can represent, vocabularies, weights.

Nothing here imports ``ctranslate2`` or ``transformers``: :func:`require` imports
them when an export or the engine needs them, with an error that says how to
install them.
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Dict, List, Union

import torch

from ..config import TransformerConfig

INSTALL = {  # module -> what to install (the package, or this project's extra that carries it)
    "ctranslate2": "pip install ctranslate2  (or: pip install 'transformer_hub[fast]')",
    "transformers": "pip install transformers  (or: pip install 'transformer_hub[export]')",
}

# Per format, the variant names it represents exactly; anything else (a plugin's part too) is refused.
SUPPORTED: Dict[str, Dict[str, tuple]] = {
    "ctranslate2": dict(layout=("encoder-decoder",), positional=("sinusoidal", "learned", "rope"),
                        norm=("post", "pre"), feed_forward=("relu", "gelu", "swiglu"), attention=("math", "sdpa"),
                        tag_position=("source", "decoder")),
    "marian": dict(layout=("encoder-decoder",), positional=("sinusoidal",), norm=("post",),
                   feed_forward=("relu", "gelu"), attention=("math", "sdpa"), tag_position=("source",)),
}

# Why a built-in variant does not fit a format: the piece of the format that is missing.
MISSING: Dict[tuple, str] = {
    ("ctranslate2", "layout", "decoder-only"):
        "CTranslate2's TransformerSpec (ctranslate2.Translator) needs an encoder and encoder-decoder attention, and "
        "this exporter writes no language-model package (TransformerDecoderModelSpec for ctranslate2.Generator) for "
        "the decoder-only layout's single causal stack over source and target",
    ("marian", "layout", "decoder-only"):
        "transformers' MarianMTModel needs an encoder and encoder-decoder attention; the decoder-only layout has neither",
    ("marian", "positional", "learned"):
        "MarianMTModel has only fixed sinusoidal positions (recomputed on load, never stored): no learned position "
        "table; use --format ctranslate2",
    ("marian", "positional", "rope"):
        "MarianMTModel has no rotary positions (only fixed sinusoids added to the embeddings); use --format ctranslate2",
    ("marian", "norm", "pre"):
        "MarianMTModel is post-norm only (no pre-norm residual blocks, no final LayerNorm); use --format ctranslate2",
    ("marian", "tag_position", "decoder"):
        "MarianMTModel.generate starts every output from decoder_start_token_id alone; a tag forced after it "
        "(forced_bos_token_id) is one per call, and is returned and scored as part of the output",
    ("marian", "feed_forward", "swiglu"):
        "MarianMTModel's feed-forward has two matrices and one activation, no gated unit for SwiGLU; "
        "use --format ctranslate2",
}


class UnsupportedModelError(ValueError):
    """The model uses a part that the export format (or engine) cannot represent."""


class MissingDependencyError(ImportError):
    """An optional package needed for an export or an engine is not installed."""


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` (tried at every call, so an uninstall is noticed) or say how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(f"{purpose} needs the {module} package, which is not installed: "
                                     f"{INSTALL.get(module, 'pip install ' + module)}") from exc


def check_exportable(config: TransformerConfig, fmt: str) -> None:
    """Raise :class:`UnsupportedModelError` naming what ``fmt`` lacks for this config; None when it fits."""
    if fmt not in SUPPORTED:
        raise ValueError(f"unknown export format {fmt!r}; formats: {', '.join(SUPPORTED)}")
    for field, names in SUPPORTED[fmt].items():
        value = getattr(config, field)
        if value in names:
            continue
        reason = MISSING.get((fmt, field, value))
        if reason is None:
            others = [f for f in SUPPORTED if f != fmt and value in SUPPORTED[f][field]]
            hint = f"; use --format {others[0]}" if others else ""
            reason = f"the {fmt} format has no equivalent of it (it represents {field} in {list(names)}){hint}"
        raise UnsupportedModelError(f"cannot export {field}={value!r} to {fmt}: {reason}")


def load(model_or_path) -> "torch.nn.Module":
    """A ``Transformer`` as given, or loaded from a ``save_pretrained`` folder / Hub repo id."""
    from ..transformer import Transformer

    if isinstance(model_or_path, Transformer):
        return model_or_path
    if isinstance(model_or_path, (str, os.PathLike)):
        return Transformer.from_pretrained(str(model_or_path))
    raise TypeError(f"expected a Transformer or a model folder / repo id, got {type(model_or_path).__name__}")


def vocabulary(model, side: str) -> List[str]:
    """The pieces of ids 0 .. vocab_size - 1 on ``side`` ("source" / "target"): the token strings of an export.

    Ids past the tokenizer's pieces (a model whose embedding table is larger)
    get placeholder names, so every id keeps a unique token.
    """
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        raise ValueError("the model has no tokenizer attached: an export needs its vocabulary (model.tokenizer)")
    size = model.config.src_vocab_size if side == "source" else model.config.tgt_vocab_size
    processor = tokenizer.source if side == "source" else tokenizer.target
    n = processor.GetPieceSize()
    if n > size:
        raise ValueError(f"the {side} tokenizer has {n} pieces but the model's {side} vocabulary only {size}")
    return [processor.IdToPiece(i) for i in range(n)] + [f"<transformer_hub_unused_{i}>" for i in range(n, size)]


def state(model) -> Dict[str, torch.Tensor]:
    """The model's float32 CPU weights by state-dict name (tied names point at the same tensor)."""
    return {name: t.detach().float().cpu() for name, t in model.state_dict().items()}


def sinusoids(model) -> torch.Tensor:
    """The model's own (max_len, d_model) sinusoid table (section 3.5, interleaved sin/cos)."""
    from ..model import sinusoid_table

    return sinusoid_table(model.config.max_len, model.config.d_model)


PathLike = Union[str, os.PathLike]
