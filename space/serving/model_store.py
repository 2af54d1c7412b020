"""Which models the Space offers, and what it knows of them without loading their weights.

By default the Space is offline: it serves every ``save_pretrained`` folder under
``space/models/`` by its folder name (``en-de`` first, then the others, e.g.
``multilingual``), then ``variants/<name>``.  More models come from ``MODEL_IDS``
(comma-separated) or ``--model``: a local folder, or a Hub repository id with an
optional ``@revision`` (``user/repo@v1``).  The models folder itself can be moved
with ``TRANSFORMER_HUB_SPACE_MODELS``.

The weights are loaded only by the decoding process (``space/serving/decoder.py``); this
process reads ``config.json`` (languages, sizes, parameter counts), the tokenizer
(to show token pieces) and ``results.json`` / model cards (measured numbers).
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from transformer_hub import Tokenizer, TransformerConfig
from transformer_hub import hub
from transformer_hub.hub import results as results_json
from transformer_hub.hub import card_data_from_file
from transformer_hub.text.domain import DomainClassifier

logger = logging.getLogger(__name__)
DEFAULT_MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
MODELS_DIR_ENV = "TRANSFORMER_HUB_SPACE_MODELS"
MODEL_IDS_ENV = "MODEL_IDS"
SHIPPED = "en-de"  # listed first and the default when present
VARIANTS = "variants"
RESULTS_FILE = "results.json"


@dataclass(frozen=True)
class ModelSpec:
    """Where a model comes from. ``name`` is what the model picker shows."""

    name: str
    source: str                    # a local folder or a Hub repo id
    revision: Optional[str] = None
    kind: str = "extra"            # "shipped", "variant" or "extra"

    @property
    def local(self) -> bool:
        return os.path.isdir(self.source)


def parse_model_id(spec: str) -> ModelSpec:
    """``path/to/folder`` or ``user/repo`` or ``user/repo@revision`` -> ModelSpec."""
    spec = spec.strip()
    if not spec:
        raise ValueError("empty model id")
    if os.path.isdir(spec):
        return ModelSpec(name=spec, source=spec)
    repo, sep, revision = spec.rpartition("@")
    if sep and repo and revision:
        return ModelSpec(name=spec, source=repo, revision=revision)
    return ModelSpec(name=spec, source=spec)


def split_model_ids(value: Optional[str]) -> List[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def model_ids_from_env(extra: Sequence[str] = ()) -> List[str]:
    return split_model_ids(os.environ.get(MODEL_IDS_ENV)) + [m for m in extra if m]


def is_model_folder(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / "model.safetensors").is_file()


def discover(models_dir: Path) -> List[ModelSpec]:
    """Every model folder in ``models_dir`` (``en-de`` first), then those in ``models_dir/variants``."""
    folders = sorted(f for f in models_dir.iterdir() if f.is_dir()) if models_dir.is_dir() else []
    folders.sort(key=lambda f: f.name != SHIPPED)  # stable: the shipped model first, the rest by name
    specs = [ModelSpec(f.name, str(f), kind="shipped") for f in folders if f.name != VARIANTS and is_model_folder(f)]
    variants = models_dir / VARIANTS
    if variants.is_dir():
        specs += [ModelSpec(f"{VARIANTS}/{f.name}", str(f), kind="variant")
                  for f in sorted(variants.iterdir()) if f.is_dir() and is_model_folder(f)]
    return specs


class ModelStore:
    """Name -> where the model is, its config and tokenizer (read once each, thread-safe)."""

    def __init__(self, models_dir: Optional[os.PathLike] = None, model_ids: Iterable[str] = ()) -> None:
        self.models_dir = Path(models_dir or os.environ.get(MODELS_DIR_ENV) or DEFAULT_MODELS_DIR)
        specs = discover(self.models_dir)
        model_ids = list(model_ids)
        for model_id in model_ids:
            spec = parse_model_id(model_id)
            names = {s.name for s in specs}
            if spec.local:  # a local folder is shown by its folder name when that is unambiguous
                short = Path(spec.source.rstrip("/\\")).name
                if short and short not in names and short not in model_ids:
                    spec = ModelSpec(short, spec.source, spec.revision, spec.kind)
            if spec.name not in names and spec.source not in {s.source for s in specs if s.local}:
                specs.append(spec)
        self.specs: Dict[str, ModelSpec] = {spec.name: spec for spec in specs}
        self._configs: Dict[str, TransformerConfig] = {}
        self._tokenizers: Dict[str, Tokenizer] = {}
        self._lock = threading.Lock()
        self._locks: Dict[str, threading.Lock] = {}
        self._default: Optional[str] = None

    # ------------------------------------------------------------------ names
    def names(self) -> List[str]:
        return list(self.specs)

    def default(self) -> Optional[str]:
        """The local model serving the most directions (a multilingual one over a bilingual one), else the first."""
        if self._default is None:
            def reach(spec: ModelSpec) -> int:
                try:
                    return len(self.config(spec.name).pairs()) if spec.local else -1
                except Exception:  # noqa: BLE001 - an unreadable config is reported when the model is used
                    return -1
            ranked = sorted(self.specs.values(), key=lambda spec: -reach(spec))  # stable: listing order on ties
            self._default = ranked[0].name if ranked else ""
        return self._default or None

    def __len__(self) -> int:
        return len(self.specs)

    def spec(self, name: str) -> ModelSpec:
        if name not in self.specs:
            name = self.name_of(name) or name
        if name not in self.specs:
            known = ", ".join(self.specs) or "(none: ship one under space/models/ or pass --model)"
            raise KeyError(f"unknown model {name!r}; available: {known}")
        return self.specs[name]

    def name_of(self, model_id: str) -> Optional[str]:
        """The picker name of a model given as it was passed (a folder path or a repo id), if it is offered."""
        if model_id in self.specs:
            return model_id
        if os.path.isdir(model_id):
            target = os.path.realpath(model_id)
            for name, spec in self.specs.items():
                if spec.local and os.path.realpath(spec.source) == target:
                    return name
        return None

    # ------------------------------------------------------------------ files, never the weights
    # Read through transformer_hub.hub, as from_pretrained reads them: the same fetch, config and tokenizer
    # checks; any failure is a hub.ModelLoadError naming the folder or repo id.
    def _lock_for(self, name: str) -> threading.Lock:
        """One lock per model: a slow Hub download for one model must not hold up requests for the others."""
        with self._lock:
            return self._locks.setdefault(name, threading.Lock())

    def config(self, name: str) -> TransformerConfig:
        """The model's validated ``config.json`` (languages, sizes, variants)."""
        spec = self.spec(name)
        with self._lock_for(spec.name):
            if spec.name not in self._configs:
                with hub.loading(spec.source, spec.revision):
                    fetch = hub.fetcher(spec.source, spec.revision)
                    self._configs[spec.name] = hub.read_config(fetch(hub.CONFIG_JSON))
            return self._configs[spec.name]

    def tokenizer(self, name: str) -> Tokenizer:
        """The model's tokenizer (SentencePiece files only, checked against its config), to show token pieces."""
        spec = self.spec(name)
        config = self.config(spec.name)
        with self._lock_for(spec.name):
            if spec.name not in self._tokenizers:
                with hub.loading(spec.source, spec.revision):
                    tokenizer = hub.read_tokenizer(hub.fetcher(spec.source, spec.revision), config)
                    if tokenizer is None:
                        raise hub.CheckpointError(f"{spec.source} has no {hub.TOKENIZER_CONFIG}")
                self._tokenizers[spec.name] = tokenizer
            return self._tokenizers[spec.name]

    def results(self) -> results_json.Results:
        """Measured numbers: ``variants/results.json`` (the variant study), and for the other local models
        the results and training facts of their model card (which the trainer writes)."""
        merged = results_json.Results()
        path = self.models_dir / VARIANTS / RESULTS_FILE
        if path.is_file():
            try:
                found = results_json.load(path)
            except ValueError as exc:
                logger.warning("ignoring %s", exc)
            else:
                for model in found.models:  # named as the picker names them
                    name = (self.name_of(str(path.parent / model.path)) if model.path else None) \
                        or f"{VARIANTS}/{model.name}"
                    merged.models.append(results_json.ModelResult(**{**vars(model), "name": name}))
                    merged.results += [results_json.Score(**{**vars(s), "model": name})
                                       for s in found.results if s.model == model.name]
        for name, spec in self.specs.items():
            if merged.model(name) is None and spec.local:
                self._add_card(merged, name)
        return merged

    def _add_card(self, merged: results_json.Results, name: str) -> None:
        card = self.card(name)
        try:
            scores = results_json.scores_from_card(name, card.get("results") or [])
        except (KeyError, TypeError, ValueError) as exc:
            logger.warning("ignoring the results of %s's model card: %s", name, exc)
            scores = []
        training = {k: v for k, v in (card.get("training") or {}).items()
                    if isinstance(v, (int, float, str)) and not isinstance(v, bool)}
        if scores or training:
            merged.models.append(results_json.ModelResult(name=name, training=training))
            merged.results += scores

    def domain_classifier(self) -> Optional[DomainClassifier]:
        """The domain classifier (``domains.json``) that knows the most domains among the local models' (the
        first of equal ones: a model adapted to a project ships one that knows the project beside the base
        domains); read once.  A broken file is logged and skipped: the texts are then translated in the default
        domain."""
        with self._lock:
            if not hasattr(self, "_classifier"):
                self._classifier = None
                for spec in self.specs.values():
                    if not spec.local:
                        continue
                    try:
                        found = DomainClassifier.from_folder(spec.source)
                    except (OSError, ValueError) as exc:
                        logger.warning("ignoring the domain classifier of %s: %s", spec.name, exc)
                        continue
                    if found is not None and (self._classifier is None
                                              or len(found.domains) > len(self._classifier.domains)):
                        self._classifier = found
            return self._classifier

    def card(self, name: str) -> Dict[str, Any]:
        """The model card's data (results, training facts) of a local model; {} when there is none."""
        spec = self.spec(name)
        path = os.path.join(spec.source, "README.md")
        return card_data_from_file(path) if spec.local and os.path.isfile(path) else {}
