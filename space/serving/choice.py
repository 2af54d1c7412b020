"""The model for a direction when none is chosen: the library's ``selection.best_model`` over the Space's models.

Candidates are the local models (shipped folders and ``--model`` folders, never Hub ids: choosing must not
wait on the network), scored by their model cards; the variant-study models are used only for a direction
no other model serves.  Read once per store, on first use.
"""
from __future__ import annotations

import logging
import threading
from typing import Dict, List, Optional, Tuple

from transformer_hub.hub.selection import Candidate, best_model, candidate

from .model_store import ModelStore

logger = logging.getLogger(__name__)
AUTO = "auto"  # the model name that asks for the best model of the direction
AUTO_LABEL = "Best for the direction"


class ModelChooser:
    """``best(src, tgt, domain)``: the name of the best-scored local model serving the direction (None if none does)."""

    def __init__(self, store: ModelStore) -> None:
        self.store = store
        self._groups: Optional[Tuple[List[Candidate], List[Candidate]]] = None
        self._lock = threading.Lock()

    def _candidates(self) -> Tuple[List[Candidate], List[Candidate]]:
        with self._lock:
            if self._groups is None:
                main: List[Candidate] = []
                variants: List[Candidate] = []
                for name, spec in self.store.specs.items():
                    if not spec.local:
                        continue
                    try:
                        found = candidate(name, self.store.config(name), self.store.card(name), source=spec.source)
                    except Exception as exc:  # noqa: BLE001 - a broken model is reported when someone picks it
                        logger.warning("model %s is not a candidate for the default: %s", name, exc)
                        continue
                    (variants if spec.kind == "variant" else main).append(found)
                default = self.store.default()  # ties and unscored directions: the Space's default model first
                main.sort(key=lambda c: c.name != default)
                self._groups = (main, variants)
            return self._groups

    def best(self, src_lang: str, tgt_lang: str, domain: Optional[str] = None) -> Optional[str]:
        """The best-scored model for the direction on ``domain``'s test data (None: captions)."""
        for group in self._candidates():
            found = best_model(group, src_lang, tgt_lang, domain)
            if found is not None:
                return found.name
        return None

    def pairs(self) -> List[Tuple[str, str]]:
        """Every direction some candidate serves, in the order first met."""
        return list(dict.fromkeys(pair for group in self._candidates() for c in group for pair in c.pairs))

    def table(self) -> Dict[Tuple[str, str], str]:
        """``{(src, tgt): model name}`` for every direction served."""
        return {pair: self.best(*pair) for pair in self.pairs()}  # type: ignore[misc]
