"""Mixed precision for training: bf16 autocast around forward and loss where the processor has bf16 units.

``--precision bf16`` runs the forward pass and the loss under ``torch.autocast`` in bfloat16; the weights,
their gradients and Adam's moments stay float32, so a checkpoint is the same kind of file in either precision
and a run resumes exactly across the two.  ``auto`` picks bf16 on a CPU whose flags name bf16 units
(``amx_bf16`` or ``avx512_bf16`` in ``/proc/cpuinfo``) or a CUDA device that supports it, else float32.
bf16 autocast runs on any CPU; without those units it is slower than float32, not wrong.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import ContextManager, FrozenSet, Optional

import torch

PRECISIONS = ("float32", "bf16", "auto")
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> FrozenSet[str]:
    """The processor's feature flags as ``lscpu`` lists them; empty where ``/proc/cpuinfo`` cannot be read."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def resolve_precision(precision: str, device: torch.device, flags: Optional[FrozenSet[str]] = None) -> str:
    """``float32`` or ``bf16``: ``auto`` resolved for ``device`` (``flags``: the CPU's, read when not given)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision != "auto":
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "float32"
    return "bf16" if BF16_FLAGS & (cpu_flags() if flags is None else flags) else "float32"


def autocast(precision: str, device: torch.device) -> ContextManager:
    """The context that a training step's forward pass and loss run in: bf16 autocast, or nothing."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
