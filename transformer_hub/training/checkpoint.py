"""Training checkpoints: atomic folders, exact resume without pickle, averaging, and Hub pushes.

A checkpoint is a ``save_pretrained`` folder (so any checkpoint loads with
``Transformer.from_pretrained``) plus ``training_state.safetensors`` (optimizer
moments, RNG states) and ``training_state.json`` (step, data position,
schedule, metrics).  Nothing is ever unpickled.
"""
from __future__ import annotations

import json
import logging
import os
import random
import shutil
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from ..hub import WEIGHTS_FILE, load_weights

STATE_TENSORS, STATE_JSON = "training_state.safetensors", "training_state.json"
logger = logging.getLogger(__name__)


@dataclass
class RunState:
    """Where a run is, as ``training_state.json`` keeps it: the update count, the data position (epoch and the
    next batch in it), the clocks, the tokens seen, the best validation scores, how many validations ran (they
    rotate the BLEU sample), the ``TrainingConfig`` it was started with (``to_dict()``) and what it was
    initialised from."""

    step: int = 0
    epoch: int = 0
    batch: int = 0
    train_seconds: float = 0.0  # inside the update step (forward, backward, optimizer)
    wall_seconds: float = 0.0   # everything, validation and checkpoints included (--max-minutes counts this)
    tokens: int = 0
    best_bleu: Optional[float] = None
    best_val_loss: Optional[float] = None
    validations: int = 0
    options: Dict[str, Any] = field(default_factory=dict)
    init: Optional[Dict[str, Any]] = None  # a warm start's source and sha256 (training.warm_start)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "RunState":
        if "args" in data and "options" not in data:  # written before TrainingConfig: the same names, as "args"
            data = {("options" if key == "args" else key): value for key, value in data.items()}
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"{STATE_JSON} has fields this version does not know: {', '.join(sorted(unknown))}")
        return cls(**data)


def step_dir(root: Path, step: int) -> Path:
    return root / f"step_{step:07d}"


def list_checkpoints(root: Path) -> List[Path]:
    """Complete checkpoint folders under ``root``, oldest first."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("step_*") if p.is_dir() and (p / STATE_JSON).is_file())


def save_checkpoint(root: Path, model, optimizer: torch.optim.Optimizer, state: RunState,
                    keep_last: int) -> Path:
    """Write ``step_N`` atomically (a temp folder renamed into place), then prune old ones (``best`` stays)."""
    root.mkdir(parents=True, exist_ok=True)
    final = step_dir(root, state.step)
    tmp = root / f".tmp_{final.name}_{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, weights_dtype="float32")  # exact resume needs every bit of the weights
    tensors, meta = optimizer_to_tensors(optimizer)
    tensors["rng.torch"] = torch.get_rng_state()
    save_file(tensors, str(tmp / STATE_TENSORS))
    full_state = {**state.to_dict(), "optimizer": meta, "python_random": _jsonable_random_state()}
    (tmp / STATE_JSON).write_text(json.dumps(full_state, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for old in list_checkpoints(root)[:-keep_last] if keep_last > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def copy_as(src: Path, dest: Path) -> None:
    """Atomically replace ``dest`` with a copy of checkpoint ``src`` (used for ``best``)."""
    tmp = dest.with_name(f".tmp_{dest.name}_{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def load_checkpoint(path: Path, model, optimizer: torch.optim.Optimizer) -> RunState:
    """Restore weights, optimizer and RNG from ``path``; returns the saved training state."""
    state = json.loads((path / STATE_JSON).read_text())
    load_weights(str(path / WEIGHTS_FILE), model)
    with safe_open(str(path / STATE_TENSORS), framework="pt") as fh:
        tensors = {k: fh.get_tensor(k) for k in fh.keys()}
    optimizer_from_tensors(optimizer, tensors, state.pop("optimizer"))
    torch.set_rng_state(tensors["rng.torch"])
    version, internal, gauss = state.pop("python_random")
    random.setstate((version, tuple(internal), gauss))
    return RunState.from_dict(state)


def _jsonable_random_state():
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def optimizer_to_tensors(optimizer: torch.optim.Optimizer):
    """Split an optimizer state dict into tensors (for safetensors) and JSON-able metadata."""
    sd = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, pstate in sd["state"].items():
        for key, value in pstate.items():
            if torch.is_tensor(value):
                tensors[f"optim.{pid}.{key}"] = value.detach().clone().contiguous()
            else:
                scalars[f"{pid}.{key}"] = value
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def optimizer_from_tensors(optimizer: torch.optim.Optimizer, tensors: Dict[str, torch.Tensor],
                           meta: Dict[str, Any]) -> None:
    state: Dict[int, Dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, pid, key = name.split(".", 2)
            state.setdefault(int(pid), {})[key] = value
    for name, value in meta["scalars"].items():
        pid, key = name.split(".", 1)
        state.setdefault(int(pid), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


def average_checkpoints(paths: List[Path], model) -> None:
    """Load into ``model`` the element-wise mean of the weights in ``paths`` (section 6.1)."""
    if not paths:
        raise ValueError("no checkpoints to average")
    total: Optional[Dict[str, torch.Tensor]] = None
    for path in paths:
        with safe_open(str(path / WEIGHTS_FILE), framework="pt") as fh:
            weights = {k: fh.get_tensor(k).double() for k in fh.keys()}
        total = weights if total is None else {k: total[k] + weights[k] for k in total}
    averaged = {k: (v / len(paths)).float() for k, v in total.items()}
    with torch.no_grad():
        state = model.state_dict(keep_vars=True)
        for name, value in averaged.items():
            state[name].copy_(value)


class HubPusher:
    """Pushes folders to a Hub repo from a background thread, retrying; a failure never stops training."""

    def __init__(self, repo_id: str, private: bool = False, revision: Optional[str] = None,
                 retries: int = 3, backoff: float = 2.0) -> None:
        self.repo_id, self.private, self.revision = repo_id, private, revision
        self.retries, self.backoff = retries, backoff
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hub-push")
        self._created = False
        self.pushed: List[str] = []
        self.failed: List[str] = []

    def _with_retries(self, what: str, fn) -> Any:
        for attempt in range(1, self.retries + 1):
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001 - network and server errors of every kind
                logger.warning("push %s to %s failed (attempt %d/%d): %s", what, self.repo_id, attempt, self.retries, exc)
                if attempt < self.retries:
                    time.sleep(self.backoff * attempt)
        raise RuntimeError(f"giving up pushing {what} after {self.retries} attempts")

    def _push(self, folder: Path, message: str) -> None:
        from huggingface_hub import HfApi

        api = HfApi()
        try:
            if not self._created:
                self._with_retries("create_repo", lambda: api.create_repo(self.repo_id, private=self.private,
                                                                          exist_ok=True))
                if self.revision:
                    self._with_retries("create_branch", lambda: api.create_branch(self.repo_id, branch=self.revision,
                                                                                  exist_ok=True))
                self._created = True
            self._with_retries(message, lambda: api.upload_folder(
                repo_id=self.repo_id, folder_path=str(folder), commit_message=message, revision=self.revision,
                ignore_patterns=[STATE_TENSORS, STATE_JSON]))
            self.pushed.append(message)
        except Exception as exc:  # noqa: BLE001
            self.failed.append(message)
            logger.error("could not push %s: %s (the local checkpoint is kept)", message, exc)

    def push(self, folder: Path, message: str) -> Future:
        """Queue a push of a snapshot of ``folder`` (copied first, so pruning cannot race the upload)."""
        snapshot = Path(tempfile.mkdtemp(prefix="push_")) / folder.name
        shutil.copytree(folder, snapshot, ignore=shutil.ignore_patterns(STATE_TENSORS))

        def job() -> None:
            try:
                self._push(snapshot, message)
            finally:
                shutil.rmtree(snapshot.parent, ignore_errors=True)
        return self._pool.submit(job)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
