"""Which models the Space offers, and a thread-safe lazy store that loads each one once.

By default the Space is offline: it serves the ``save_pretrained`` folders
shipped under ``space/models/`` (``en-de`` first, then ``variants/<name>``).
More models come from ``MODEL_IDS`` (comma-separated) or ``--model``: a local
folder, or a Hub repository id with an optional ``@revision``
(``user/repo@v1``), downloaded the first time it is used.  The models folder
itself can be moved with ``TRANSFORMER_HUB_SPACE_MODELS``.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from transformer_hub import Transformer, TransformerConfig
from transformer_hub.hub import card_data_from_file

logger = logging.getLogger(__name__)
DEFAULT_MODELS_DIR = Path(__file__).resolve().parent / "models"
MODELS_DIR_ENV = "TRANSFORMER_HUB_SPACE_MODELS"
MODEL_IDS_ENV = "MODEL_IDS"
SHIPPED = "en-de"
RESULTS_FILE = "results.json"


class ModelLoadError(RuntimeError):
    """A model could not be loaded (missing, corrupt, unreachable); the message says which and why."""


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


def is_model_folder(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / "model.safetensors").is_file()


def discover(models_dir: Path) -> List[ModelSpec]:
    """The shipped model and the variant checkpoints found in ``models_dir``."""
    specs = []
    if is_model_folder(models_dir / SHIPPED):
        specs.append(ModelSpec(SHIPPED, str(models_dir / SHIPPED), kind="shipped"))
    variants = models_dir / "variants"
    if variants.is_dir():
        for folder in sorted(variants.iterdir()):
            if folder.is_dir() and is_model_folder(folder):
                specs.append(ModelSpec(f"variants/{folder.name}", str(folder), kind="variant"))
    for folder in sorted(models_dir.iterdir()) if models_dir.is_dir() else []:
        if folder.name not in (SHIPPED, "variants") and folder.is_dir() and is_model_folder(folder):
            specs.append(ModelSpec(folder.name, str(folder), kind="shipped"))
    return specs


class ModelStore:
    """Name -> model, loaded lazily, once, under a per-model lock (safe from Gradio's worker threads)."""

    def __init__(self, models_dir: Optional[os.PathLike] = None, model_ids: Iterable[str] = ()) -> None:
        self.models_dir = Path(models_dir or os.environ.get(MODELS_DIR_ENV) or DEFAULT_MODELS_DIR)
        specs = discover(self.models_dir)
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
        self._models: Dict[str, Transformer] = {}
        self._errors: Dict[str, str] = {}
        self._locks: Dict[str, threading.Lock] = {name: threading.Lock() for name in self.specs}

    # ------------------------------------------------------------------ names
    def names(self) -> List[str]:
        return list(self.specs)

    def default(self) -> Optional[str]:
        return next(iter(self.specs), None)

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

    # ------------------------------------------------------------------ loading
    def get(self, name: str) -> Transformer:
        """The model called ``name``, loading it on first use (once, even under concurrent calls)."""
        spec = self.spec(name)
        name = spec.name
        model = self._models.get(name)
        if model is not None:
            return model
        with self._locks[name]:
            if name in self._models:
                return self._models[name]
            if name in self._errors:
                raise ModelLoadError(self._errors[name])
            try:
                model = Transformer.from_pretrained(spec.source, revision=spec.revision)
            except Exception as exc:  # noqa: BLE001 - reported to the visitor, remembered so it is not retried each click
                message = f"could not load model {name!r} from {spec.source}: {exc}"
                logger.exception(message)
                if spec.local:
                    self._errors[name] = message
                raise ModelLoadError(message) from exc
            if model.tokenizer is None:
                message = f"model {name!r} has no tokenizer files, so it cannot translate text"
                self._errors[name] = message
                raise ModelLoadError(message)
            model.eval()
            self._models[name] = model
            logger.info("loaded model %s from %s", name, spec.source)
            return model

    def loaded(self) -> List[str]:
        return list(self._models)

    # ------------------------------------------------------------------ description without loading weights
    def config(self, name: str) -> TransformerConfig:
        """The model's config; read from config.json for local folders, so no weights are loaded."""
        spec = self.spec(name)
        name = spec.name
        if name in self._models:
            return self._models[name].config
        if spec.local:
            return TransformerConfig.from_json_file(os.path.join(spec.source, "config.json"))
        return self.get(name).config

    def results(self) -> Dict[str, Dict[str, Any]]:
        """Measured numbers (BLEU, training time, speed): from ``variants/results.json``, keyed by variant
        name, and for other local models from their model card's results and training facts."""
        path = self.models_dir / "variants" / RESULTS_FILE
        try:
            results = normalise_results(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            results = {}
        except (OSError, ValueError) as exc:
            logger.warning("ignoring %s: %s", path, exc)
            results = {}
        for name, spec in self.specs.items():
            card = os.path.join(spec.source, "README.md")
            if name not in results and name.split("/", 1)[-1] not in results and spec.local and os.path.isfile(card):
                measured = card_measurements(card_data_from_file(card))
                if measured:
                    results[name] = measured
        return results


def card_measurements(card_data: Dict[str, Any]) -> Dict[str, Any]:
    """A model card's results and training facts as a results row: {split: {metric: value}, "training": {...}}."""
    row: Dict[str, Any] = {}
    for r in card_data.get("results", []):
        try:
            metric = str(r["metric"]) + ("_lowercase" if "lower" in str(r.get("metric_name", "")).lower() else "")
            row.setdefault(str(r.get("split") or "test"), {})[metric] = float(r["value"])
        except (KeyError, TypeError, ValueError):
            continue
    if isinstance(card_data.get("training"), dict):
        row["training"] = card_data["training"]
    return row


def normalise_results(data: Any) -> Dict[str, Dict[str, Any]]:
    """Accept ``{name: {...}}``, ``[{"name": ...}, ...]`` or ``{"variants": ...}`` / ``{"results": ...}``."""
    if isinstance(data, dict):
        for key in ("variants", "results", "models"):
            if key in data and isinstance(data[key], (list, dict)):
                return normalise_results(data[key])
        return {str(k): v for k, v in data.items() if isinstance(v, dict)}
    if isinstance(data, list):
        out = {}
        for row in data:
            if isinstance(row, dict):
                name = row.get("name") or row.get("variant") or row.get("model")
                if name:
                    out[str(name)] = row
        return out
    return {}


def model_ids_from_env(extra: Sequence[str] = ()) -> List[str]:
    return split_model_ids(os.environ.get(MODEL_IDS_ENV)) + [m for m in extra if m]
