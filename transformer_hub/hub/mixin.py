"""``HubMixin``: how a model is stored like a Hub model (safetensors, config.json, tokenizer, card)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Optional

from huggingface_hub import PyTorchModelHubMixin
from safetensors.torch import save_file

from .card import CARD_FILE, PLOT_FILE, model_card
from .loading import CONFIG_JSON, DOMAINS_FILE, WEIGHTS_FILE, load_pretrained, tied_groups


def save_folder(model, directory) -> None:
    """Write config.json, model.safetensors, the tokenizer files and the model card."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = model.state_dict()
    tensors = {group[0]: state[group[0]].detach().contiguous().cpu() for group in tied_groups(model)}
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
    model_card(model, has_plot=(directory / PLOT_FILE).is_file()).save(directory / CARD_FILE)


class HubMixin(PyTorchModelHubMixin):
    """How a model is stored like a Hub model: what ``Transformer`` inherits.

    huggingface_hub's ``PyTorchModelHubMixin`` gives ``save_pretrained`` and ``push_to_hub``, which write
    through ``_save_pretrained`` (here: :func:`save_folder`); ``from_pretrained`` is replaced by the strict
    :func:`load_pretrained` (the mixin's loads with ``strict=False`` and falls back to unpickling
    ``pytorch_model.bin``).  This module never imports the model: ``cls`` is the class being loaded.
    """

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
