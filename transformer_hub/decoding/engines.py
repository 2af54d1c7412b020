"""Decoding engines: what turns prepared id lists into hypotheses, chosen by ``generate(..., engine=...)``.

An engine has ``check(config, workers)`` (``ValueError`` for an option it cannot honour, before any work)
and ``decode(model, sources, caps, config, progress=, prefixes=, workers=)`` (id lists, each ending in
eos, and each one's output cap -> n-best lists in input order); an engine whose ``constrains`` is true also
takes ``constraints=`` (one ``constraints.Constraints`` or None per source; ``generate`` refuses constraints
for the others, CTranslate2 among them).  Engines are found by name in the
``ENGINES`` registry, whose entries are factories returning a shared engine: ``"pytorch"`` (below)
and ``"ctranslate2"`` (``transformer_hub.export.engine``, registered by the package's ``register_builtin_parts``);
plugins add theirs through entry points.  An engine object (a ``CTranslate2Engine`` with its own
options, a ``DecodingPool`` of worker processes) can be passed directly.
"""
from __future__ import annotations

from typing import Any, List, Optional, Protocol, Sequence, runtime_checkable

import torch
from torch import nn

from ..model import Dropout, no_dropout
from ..registry import Registry
from .batching import decode_in_batches, with_seed
from .config import STRATEGIES, DecodingConfig
from .prefix import Prefix
from .results import Hypothesis
from .stepper import Batch
from .threads import check_workers, decoding_threads

ENGINES: Registry = Registry("decoding engine")


@runtime_checkable
class Engine(Protocol):
    """What ``engine=`` accepts besides a name."""

    def check(self, config: DecodingConfig, workers: int = 1) -> None:
        """Raise ``ValueError`` for an option this engine cannot honour."""

    def decode(self, model: Any, sources: Sequence[List[int]], caps: Sequence[int], config: DecodingConfig,
               progress: bool = False, prefixes: Optional[Sequence[Optional[Prefix]]] = None,
               workers: int = 1) -> List[List[Hypothesis]]:
        """Id lists and their caps -> n-best lists, in input order."""


def get_engine(engine) -> Engine:
    """The engine for ``engine=``: a registered name, or an engine object."""
    if isinstance(engine, str) and engine in ENGINES:
        return ENGINES.get(engine)()
    if not isinstance(engine, str) and isinstance(engine, Engine):
        return engine
    raise ValueError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES.names())} "
                     "(or an engine object: a CTranslate2Engine, a DecodingPool)")


def _device(model) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def check_no_foreign_dropout(model) -> None:
    """Refuse modules in training mode that ``no_dropout`` cannot switch off (torch's dropout and batch norm)."""
    for name, module in model.named_modules():
        if (module.training and isinstance(module, (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm))
                and not isinstance(module, Dropout)):
            raise ValueError(f"module {name} ({type(module).__name__}) is in training mode and would change decoding: "
                             "call model.eval() first, or use transformer_hub.model.Dropout")


def decode_batch(model, rows: List[List[int]], caps: List[int], config: DecodingConfig,
                 prefixes: Optional[List[Optional[Prefix]]] = None,
                 constraints: Optional[list] = None) -> List[List[Hypothesis]]:
    """Decode one batch: id lists (each ending in eos, longest first), each one's output cap, forced prefix and
    constraints (``constraints.Constraints``, beam search only).

    A model with decoder-start tags (``config.tag_position == "decoder"``) receives each row's first id, its
    target-language tag, after bos in the decoder instead of in the source; the tag takes one target position."""
    starts = None
    if getattr(model.config, "decoder_tags", False):  # (a duck-typed config without the field: source tags)
        starts = torch.tensor([ids[:1] for ids in rows], dtype=torch.long, device=_device(model))
        rows = [ids[1:] for ids in rows]
        caps = [max(1, min(cap, model.config.max_len - 1)) for cap in caps]  # bos and tag take 2 positions, not 1
    lengths = [len(ids) for ids in rows]
    device, pad = _device(model), model.config.pad_id
    src = torch.full((len(rows), max(lengths)), pad, dtype=torch.long)
    for row, ids in enumerate(rows):
        src[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    batch = Batch(src.to(device), torch.tensor(lengths, device=device), torch.tensor(caps, device=device),
                  seed=config.seed or 0, prefixes=prefixes, starts=starts,
                  constraints=constraints if constraints and any(c is not None for c in constraints) else None)
    # both thread-local, entered in the thread that decodes: dropout is off here whatever the modules' flags,
    # which stay untouched (another thread may be training the same model)
    with torch.inference_mode(), no_dropout():
        out = STRATEGIES.get(config.strategy)(model, batch, config)
        for n, hyps in zip(lengths, out):
            for hyp in hyps:
                if hyp.attention is not None:  # drop the padded source columns; own the memory
                    hyp.attention = hyp.attention[..., :n].clone().cpu()
    return out


class PyTorchEngine:
    """The library's own decoding, in this process; ``workers`` threads decode different batches at once."""

    name = "pytorch"
    constrains = True  # honours ``constraints=`` (lexically constrained beam search)

    def check(self, config: DecodingConfig, workers: int = 1) -> None:
        check_workers(workers)
        STRATEGIES.get(config.strategy)  # an unknown name fails here, before any work

    def decode(self, model, sources: Sequence[List[int]], caps: Sequence[int], config: DecodingConfig,
               progress: bool = False, prefixes: Optional[Sequence[Optional[Prefix]]] = None,
               workers: int = 1, constraints: Optional[Sequence] = None) -> List[List[Hypothesis]]:
        self.check(config, workers)
        check_no_foreign_dropout(model)
        config = with_seed(config)

        def map_batches(rows, caps_of, prefixes_of, constraints_of):
            decode = lambda r, c, p, k: decode_batch(model, r, c, config, p, k)  # noqa: E731
            threads = min(workers, len(rows))
            if threads <= 1:
                yield from map(decode, rows, caps_of, prefixes_of, constraints_of)
                return
            with decoding_threads(threads) as executor:  # batches are independent: several at once
                yield from executor.map(decode, rows, caps_of, prefixes_of, constraints_of)

        return decode_in_batches(model, list(sources), list(caps), config, map_batches, progress,
                                 list(prefixes) if prefixes is not None else None, f"decoding ({config.strategy})",
                                 list(constraints) if constraints is not None else None)


_PYTORCH = PyTorchEngine()


@ENGINES.register("pytorch")
def pytorch_engine() -> PyTorchEngine:
    """The shared PyTorch engine (it holds no state)."""
    return _PYTORCH
