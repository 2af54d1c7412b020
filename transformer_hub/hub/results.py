"""``results.json``: measured results of trained models, one schema for every writer and reader.

The training script writes one for its run (``<out>/results.json``), the variant study one for all its
variants (``space/models/variants/results.json``); the Space reads them.  The file is::

    {"schema": 1,
     "settings": {...},                  # what was run: budgets, options (JSON values; paths relative only)
     "models": [{"name": "paper", "path": "paper", "parameters": 2349056,
                 "architecture": {"layout": "encoder-decoder", "norm": "post", ...},
                 "training": {"updates": 1000, "train_seconds": 623.2, "train_tokens_per_s": 5407.3, ...},
                 "decoding": {"sentences": 1000, "seconds": 7.5, "sentences_per_s": 132.9, "beam": 5}}],
     "results": [{"model": "paper", "split": "test_2016_flickr", "direction": "en-de",
                  "metric": "bleu", "value": 28.01}, ...]}

``path`` is the model folder relative to the file's own folder (``null``: measured, not shipped).
``metric`` is one of :data:`METRICS`.  :func:`validate` checks all of it (types, names, references,
no absolute paths anywhere) and raises ``ValueError`` naming the first problem.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Dict, List, Optional, Union

SCHEMA = 1
METRICS = {"bleu": "sacreBLEU (cased)", "bleu_lowercase": "sacreBLEU (lowercased)", "chrf": "chrF"}
_DIRECTION = re.compile(r"^[a-z]{2,3}-[a-z]{2,3}$")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


@dataclass
class Score:
    """One number: ``model``'s ``metric`` on ``split`` in ``direction`` (``"en-de"``; None if it names none)."""

    model: str
    split: str
    metric: str
    value: float
    direction: Optional[str] = None


@dataclass
class ModelResult:
    """One trained model: where it is, its size and architecture, how it was trained and how fast it decodes."""

    name: str
    path: Optional[str] = None
    parameters: Optional[int] = None
    architecture: Dict[str, Any] = field(default_factory=dict)
    training: Dict[str, Any] = field(default_factory=dict)
    decoding: Dict[str, Any] = field(default_factory=dict)

    def training_minutes(self) -> Optional[float]:
        """Training time in minutes (updates only when the writer separated it), or None."""
        for key in ("train_seconds", "train_compute_minutes", "train_wall_seconds", "train_wall_minutes"):
            if isinstance(self.training.get(key), (int, float)):
                value = float(self.training[key])
                return value / 60.0 if key.endswith("seconds") else value
        return None


@dataclass
class Results:
    """A whole ``results.json``."""

    models: List[ModelResult] = field(default_factory=list)
    results: List[Score] = field(default_factory=list)
    settings: Dict[str, Any] = field(default_factory=dict)
    schema: int = SCHEMA

    def model(self, name: str) -> Optional[ModelResult]:
        return next((m for m in self.models if m.name == name), None)

    def score(self, model: str, metric: str, split: Optional[str] = None,
              direction: Optional[str] = None) -> Optional[float]:
        """The value of ``metric`` for ``model`` (first match on ``split`` / ``direction`` when given)."""
        for s in self.results:
            if (s.model == model and s.metric == metric and split in (None, s.split)
                    and direction in (None, s.direction)):
                return s.value
        return None

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": self.schema, "settings": self.settings, "models": [asdict(m) for m in self.models],
                "results": [asdict(s) for s in self.results]}

    @classmethod
    def from_dict(cls, data: Any) -> "Results":
        """Build from parsed JSON, validated (``ValueError`` naming the first problem)."""
        validate(data)
        return cls(models=[ModelResult(**m) for m in data["models"]], results=[Score(**s) for s in data["results"]],
                   settings=dict(data.get("settings", {})), schema=data["schema"])


def _is_absolute(value: str) -> bool:
    return (PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute()
            or bool(_WINDOWS_DRIVE.match(value)) or value.startswith("~"))


def _no_absolute_paths(value: Any, where: str) -> None:
    if isinstance(value, str):
        if _is_absolute(value):
            raise ValueError(f"{where}: {value!r} is an absolute path; results.json holds relative paths only")
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_absolute_paths(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _no_absolute_paths(item, f"{where}[{i}]")


def _check_fields(data: Any, where: str, required: Dict[str, tuple], optional: Dict[str, tuple]) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(required) - set(optional))
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; known: {sorted({**required, **optional})}")
    for key, types in required.items():
        if key not in data:
            raise ValueError(f"{where}: missing {key!r}")
    for key, types in {**required, **optional}.items():
        if key in data and not (isinstance(data[key], types) and not isinstance(data[key], bool)
                                or data[key] is None and type(None) in types):
            raise ValueError(f"{where}.{key}: expected {' or '.join(t.__name__ for t in types)}, got {data[key]!r}")


def validate(data: Any) -> None:
    """Check parsed ``results.json`` content against the schema; ``ValueError`` names the first problem."""
    _check_fields(data, "results.json", {"schema": (int,), "models": (list,), "results": (list,)},
                  {"settings": (dict,)})
    if data["schema"] != SCHEMA:
        raise ValueError(f"results.json: schema {data['schema']} is not the supported {SCHEMA}")
    _no_absolute_paths(data, "results.json")
    names = set()
    for i, m in enumerate(data["models"]):
        where = f"models[{i}]"
        _check_fields(m, where, {"name": (str,)}, {"path": (str, type(None)), "parameters": (int, type(None)),
                                                    "architecture": (dict,), "training": (dict,), "decoding": (dict,)})
        if not m["name"] or m["name"] in names:
            raise ValueError(f"{where}: name {m['name']!r} is empty or repeated")
        names.add(m["name"])
        for part in ("training", "decoding"):
            for key, value in m.get(part, {}).items():
                if not isinstance(value, (int, float, str)) or isinstance(value, bool):
                    raise ValueError(f"{where}.{part}.{key}: expected a number or a string, got {value!r}")
    for i, s in enumerate(data["results"]):
        where = f"results[{i}]"
        _check_fields(s, where, {"model": (str,), "split": (str,), "metric": (str,), "value": (int, float)},
                      {"direction": (str, type(None))})
        if s["model"] not in names:
            raise ValueError(f"{where}: model {s['model']!r} is not one of the models {sorted(names)}")
        if s["metric"] not in METRICS:
            raise ValueError(f"{where}: metric {s['metric']!r} is not one of {', '.join(METRICS)}")
        if s.get("direction") is not None and not _DIRECTION.match(s["direction"]):
            raise ValueError(f"{where}: direction {s['direction']!r} is not 'src-tgt' (e.g. 'en-de')")


def scores_from_card(model: str, records: List[Dict[str, Any]]) -> List[Score]:
    """Model-card result entries (``split``, ``direction``, ``metric``, ``metric_name``, ``value``) as scores."""
    by_name = {name: key for key, name in METRICS.items()}
    return [Score(model=model, split=str(r["split"]), metric=by_name.get(r.get("metric_name"), r["metric"]),
                  value=float(r["value"]), direction=r.get("direction")) for r in records]


def relative_path(path: Union[str, os.PathLike], start: Union[str, os.PathLike]) -> str:
    """``path`` relative to the folder ``start`` (POSIX separators), for ``ModelResult.path``."""
    return Path(os.path.relpath(Path(path).resolve(), Path(start).resolve())).as_posix()


def save(results: Results, path: Union[str, os.PathLike]) -> Path:
    """Validate and write ``results`` to ``path`` (atomically: a reader never sees half a file)."""
    data = results.to_dict()
    validate(data)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def load(path: Union[str, os.PathLike]) -> Results:
    """Read and validate ``path``; ``ValueError`` for unreadable or invalid content."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc
    try:
        return Results.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
