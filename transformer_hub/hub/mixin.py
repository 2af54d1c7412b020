"""``HubMixin``: how a model is stored like a Hub model (safetensors, config.json, tokenizer, card)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, Optional

import torch
from huggingface_hub import PyTorchModelHubMixin
from safetensors.torch import save_file

from .card import CARD_FILE, PLOT_FILE, model_card
from .loading import CONFIG_JSON, DOMAINS_FILE, WEIGHTS_DTYPES, WEIGHTS_FILE, load_pretrained, tied_groups


def check_weights_dtype(name: str) -> str:
    """``name`` when it is one of ``WEIGHTS_DTYPES``; a ValueError listing them otherwise."""
    if name not in WEIGHTS_DTYPES:
        raise ValueError(f"weights_dtype must be one of {', '.join(WEIGHTS_DTYPES)}, got {name!r}")
    return name


def stored_tensors(model, weights_dtype: str) -> Dict[str, torch.Tensor]:
    """One CPU tensor per tied group, its floating values cast to ``weights_dtype``; every value must stay finite
    (a weight past float16's 65504 would load back as inf), else a ValueError naming the tensor."""
    target, state, tensors = WEIGHTS_DTYPES[check_weights_dtype(weights_dtype)], model.state_dict(), {}
    for group in tied_groups(model):
        tensor = state[group[0]].detach().cpu()
        if tensor.is_floating_point() and tensor.dtype != target:
            cast = tensor.to(target)
            if not torch.isfinite(cast).all():
                why = ("holds NaN or infinite values" if not torch.isfinite(tensor).all() else
                       f"holds {tensor.abs().max().item():.6g}, past {weights_dtype}'s largest finite value "
                       f"{torch.finfo(target).max:g}")
                raise ValueError(f"cannot store tensor {group[0]} in {weights_dtype}: it {why}; "
                                 "save with weights_dtype='float32'")
            tensor = cast
        tensors[group[0]] = tensor.contiguous()
    return tensors


def save_folder(model, directory, weights_dtype: Optional[str] = None) -> None:
    """Write config.json, model.safetensors, the tokenizer files and the model card.

    The weights are stored in ``weights_dtype`` (default: the model's ``weights_dtype``, float32 unless it was
    loaded from a float16 file); they are checked before anything is written.
    """
    weights_dtype = weights_dtype or getattr(model, "weights_dtype", "float32")
    tensors = stored_tensors(model, weights_dtype)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / WEIGHTS_FILE), metadata={"format": "pt"})
    (directory / CONFIG_JSON).write_text(json.dumps(model.config.to_dict(), indent=2, sort_keys=True) + "\n")
    if model.tokenizer is not None:
        model.tokenizer.save(directory)
    if getattr(model, "domain_data", None):
        (directory / DOMAINS_FILE).write_text(json.dumps(model.domain_data, ensure_ascii=False,
                                                         separators=(",", ":")) + "\n", encoding="utf-8")
    plot = model.card_data.get("plot")
    if plot and Path(plot).is_file() and Path(plot).resolve() != (directory / PLOT_FILE).resolve():
        shutil.copyfile(plot, directory / PLOT_FILE)
    has_plot = (directory / PLOT_FILE).is_file()
    model_card(model, has_plot=has_plot, weights_dtype=weights_dtype).save(directory / CARD_FILE)


class HubMixin(PyTorchModelHubMixin):
    """How a model is stored like a Hub model: what ``Transformer`` inherits.

    huggingface_hub's ``PyTorchModelHubMixin`` gives ``save_pretrained`` and ``push_to_hub``, which write
    through ``_save_pretrained`` (here: :func:`save_folder`); ``from_pretrained`` is replaced by the strict
    :func:`load_pretrained` (the mixin's loads with ``strict=False`` and falls back to unpickling
    ``pytorch_model.bin``).  This module never imports the model: ``cls`` is the class being loaded.

    ``weights_dtype`` is the dtype ``save_pretrained`` (and ``push_to_hub``) stores the weights in: float32 for a
    model built here, the stored one for a loaded model, so re-saving a float16 folder keeps it float16.
    """

    weights_dtype: str = "float32"

    def save_pretrained(self, save_directory, *, weights_dtype: Optional[str] = None, **kwargs):
        """huggingface_hub's ``save_pretrained`` (``push_to_hub=True`` too), the weights stored in
        ``weights_dtype`` ("float32" or "float16"; default: ``self.weights_dtype``); they load as float32."""
        kept = self.weights_dtype
        self.weights_dtype = check_weights_dtype(weights_dtype or kept)  # the card says what is stored
        try:
            return super().save_pretrained(save_directory, **kwargs)
        finally:
            self.weights_dtype = kept

    def _save_pretrained(self, save_directory: Path) -> None:
        save_folder(self, save_directory)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, revision: Optional[str] = None, cache_dir=None,
                        force_download: bool = False, token=None, local_files_only: bool = False, **unused):
        """Load a ``save_pretrained`` folder or Hub repo: config validated first, weights strictly, tokenizer too."""
        if unused:
            raise TypeError(f"unexpected arguments {sorted(unused)}; the config comes from config.json")
        return load_pretrained(cls, pretrained_model_name_or_path, revision=revision, cache_dir=cache_dir,
                               force_download=force_download, token=token, local_files_only=local_files_only)
