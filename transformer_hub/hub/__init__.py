"""Models stored like Hub models: strict loading (``loading.py``), saving (``mixin.py``: what ``Transformer``
inherits), the model card (``card.py``), the ``results.json`` records (``results.py``) and the per-direction
choice of model from those scores (``selection.py``).  Nothing here imports the model: it is handed the class.
"""
from .card import CARD_FILE, PLOT_FILE, card_data_from_file, model_card, save_card
from .loading import (CONFIG_JSON, WEIGHTS_DTYPES, WEIGHTS_FILE, CheckpointError, ModelLoadError, fetcher,
                      is_repo_id, load_pretrained, load_weights, loading, read_config, read_tokenizer)
from .mixin import HubMixin, save_folder

__all__ = [
    "HubMixin", "save_folder", "load_pretrained", "loading", "ModelLoadError", "CheckpointError", "read_config",
    "load_weights", "is_repo_id", "fetcher", "read_tokenizer", "model_card", "card_data_from_file", "WEIGHTS_FILE", "CONFIG_JSON", "CARD_FILE", "PLOT_FILE",
    "WEIGHTS_DTYPES", "save_card",
]
