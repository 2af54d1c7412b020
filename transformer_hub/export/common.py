"""What both exports share: optional packages, which variants a format can represent, vocabularies, weights.

Nothing here imports ``ctranslate2`` or ``transformers``: :func:`require` imports
them when an export or the engine needs them, with an error that says how to
install them.
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any, Dict, List, Union

import torch

from ..config import TransformerConfig
from ..registry import PARTS

INSTALL = {  # module -> what to install (the package, or this project's extra that carries it)
    "ctranslate2": "pip install ctranslate2  (or: pip install 'transformer_hub[fast]')",
    "transformers": "pip install transformers  (or: pip install 'transformer_hub[export]')",
}

# Per format, the target-language tag positions it represents (the parts say for themselves: their ``exports``).
TAG_POSITIONS: Dict[str, tuple] = {"ctranslate2": ("source", "decoder"), "marian": ("source",)}
TAG_MISSING = ("MarianMTModel.generate starts every output from decoder_start_token_id alone; a tag forced after it "
               "(forced_bos_token_id) is one per call, and is returned and scored as part of the output")


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


def check_exportable(config: TransformerConfig, fmt: str) -> Dict[str, Any]:
    """The options ``fmt`` takes for this config: each part's ``exports[fmt]`` together (see ``registry.py``).

    A part that gives a reason instead, or names no ``fmt`` at all (a plugin's part, unless it says), raises
    :class:`UnsupportedModelError` naming it and what is missing.
    """
    if fmt not in TAG_POSITIONS:
        raise ValueError(f"unknown export format {fmt!r}; formats: {', '.join(TAG_POSITIONS)}")
    options: Dict[str, Any] = {}
    for field, registry in PARTS.items():
        name = getattr(config, field)
        said = registry.about(name, "exports", {})
        if isinstance(said.get(fmt), dict):
            options.update(said[fmt])
            continue
        reason = said.get(fmt) or f"the {registry.kind} {name!r} names no {fmt} export (its class's ``exports``)"
        raise UnsupportedModelError(f"cannot export {field}={name!r} to {fmt}: {reason}")
    if config.tag_position not in TAG_POSITIONS[fmt]:
        raise UnsupportedModelError(f"cannot export tag_position={config.tag_position!r} to {fmt}: {TAG_MISSING}")
    return options


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


PathLike = Union[str, os.PathLike]
