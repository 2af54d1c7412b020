"""Decisions every rank of a DistributedDataParallel run takes together.

Each step, DDP's backward all-reduces the gradients: a rank that skips ``backward`` (a non-finite loss), or
leaves the loop (a time limit, a stop signal), while the others go on leaves them waiting in that all-reduce
forever.  So whatever decides those is agreed first, with one small collective; a single process (world size 1)
decides alone and communicates nothing.
"""
from __future__ import annotations

import os
from typing import Tuple

import torch
import torch.distributed as dist


def setup(device: torch.device) -> Tuple[int, int]:
    """``(rank, world_size)`` from torchrun's environment; joins the process group when there are several."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return rank, world


def _max_over_ranks(flags: Tuple[bool, ...], world: int, device: torch.device) -> Tuple[bool, ...]:
    if world == 1:
        return flags
    tensor = torch.tensor([float(f) for f in flags], device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tuple(bool(v) for v in tensor.tolist())


def any_rank(flag: bool, world: int, device: torch.device) -> bool:
    """True on every rank when ``flag`` is true on at least one (e.g. "my loss is not finite")."""
    return _max_over_ranks((flag,), world, device)[0]


def agree_to_stop(signalled: bool, out_of_time: bool, rank: int, world: int,
                  device: torch.device) -> Tuple[bool, bool]:
    """``(signalled, out_of_time)`` as every rank sees them.

    A stop signal received by any rank stops them all (torchrun forwards SIGTERM to every worker, but not
    always at the same step); the time limit is rank 0's clock alone: the others' answers are ignored, so
    clocks that drift apart cannot split the ranks.
    """
    return _max_over_ranks((signalled, out_of_time and rank == 0), world, device)  # type: ignore[return-value]
