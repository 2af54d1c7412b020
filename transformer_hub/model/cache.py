"""Decoding state: what ``encode`` hands to ``decode`` (``EncoderState``), and the key/value cache.

Incremental decoding (one new target token per ``decode`` call) keeps, per
decoder layer, two ``KeyValueBuffer``s: the self-attention keys/values of the
tokens so far, and the cross-attention keys/values of the source, computed at
the first step.  Beam search re-ranks rows between steps with ``KVCache.reorder``.
"""
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Dict, List, Optional

import torch

Tensor = torch.Tensor


class KeyValueBuffer:
    """A self-attention cache: the keys and values of every token seen so far, for incremental decoding.

    New keys/values are written in place after the old ones, into one
    (2, B, h, capacity, d_k) buffer that doubles when full; ``append``
    returns views of the filled part.  Concatenating instead would copy the
    whole cache into freshly allocated memory at every step, which on the
    CPU cost about a third of a batched decoding step.
    """

    def __init__(self) -> None:
        self.buffer: Optional[Tensor] = None
        self.keys: Optional[Tensor] = None  # buffer[0] and buffer[1], (B, h, capacity, d_k): views kept at hand
        self.values: Optional[Tensor] = None
        self.spare: Optional[Tensor] = None  # ``index_select_`` writes here, then the two swap
        self.length = 0

    def _use(self, buffer: Tensor) -> None:
        self.buffer, self.keys, self.values = buffer, buffer[0], buffer[1]

    def append(self, k: Tensor, v: Tensor):
        """Add (B, h, T, d_k) keys and values; returns all keys and values so far, (B, h, length, d_k) each."""
        start, new = self.length, k.size(2)
        end = start + new
        if self.buffer is None or self.buffer.size(3) < end:
            capacity = max(end, 16, 0 if self.buffer is None else 2 * self.buffer.size(3))
            grown = k.new_empty(2, k.size(0), k.size(1), capacity, k.size(3))
            if start:
                grown[:, :, :, :start] = self.buffer[:, :, :, :start]
            self._use(grown)
            self.spare = None
        self.keys.narrow(2, start, new).copy_(k)
        self.values.narrow(2, start, new).copy_(v)
        self.length = end
        return self.keys.narrow(2, 0, end), self.values.narrow(2, 0, end)

    def contents(self):
        """The keys and values stored so far, (B, h, length, d_k) each; None while empty."""
        if not self.length:
            return None
        return self.keys.narrow(2, 0, self.length), self.values.narrow(2, 0, self.length)

    def index_select_(self, index: Tensor) -> None:
        """Keep (reorder, repeat) batch rows ``index``, in place."""
        if self.buffer is None:
            return
        n, buffer = index.numel(), self.buffer
        if self.spare is None or self.spare.size(1) < n:
            self.spare = buffer.new_empty(2, max(n, buffer.size(1)), *buffer.shape[2:])
        target = self.spare[:, :n]
        torch.index_select(buffer[:, :, :, :self.length], 1, index, out=target[:, :, :, :self.length])
        self._use(target)
        self.spare = buffer


@dataclass
class EncoderState:
    """What ``encode`` hands to ``decode``: the encoder output (if any), source ids and mask.

    ``group`` decoder rows read each source: rows g*b .. g*b + g - 1 attend to
    source b (beam search's k beams share their sentence's encoder output
    instead of copying it k times).
    """

    src: Tensor  # (B, S) token ids
    src_mask: Tensor  # (B, S) bool, True on real tokens
    memory: Optional[Tensor] = None  # (B, S, d_model); None for the decoder-only layout
    group: int = 1  # decoder rows per source
    self_attention: Optional[List[Tensor]] = None  # per encoder layer (B, h, S, S), when ``encode`` was asked

    @property
    def rows(self) -> int:
        """How many decoder rows this state serves: sources x ``group``."""
        return self.src.size(0) * self.group

    def index_select(self, index: Tensor) -> "EncoderState":
        """Pick / repeat sources (each keeps its ``group`` of decoder rows)."""
        memory = None if self.memory is None else self.memory.index_select(0, index)
        return EncoderState(self.src.index_select(0, index), self.src_mask.index_select(0, index), memory, self.group)

    def repeat(self, k: int) -> "EncoderState":
        """The same sources for k times as many decoder rows, without copying them (beam search's beams)."""
        return EncoderState(self.src, self.src_mask, self.memory, self.group * k)

    def ungrouped(self) -> "EncoderState":
        """One source row per decoder row (copies them; for layouts that read the source per row)."""
        if self.group == 1:
            return self
        index = torch.arange(self.src.size(0), device=self.src.device).repeat_interleave(self.group)
        return replace(self.index_select(index), group=1)

    @cached_property
    def key_mask(self) -> Optional[Tensor]:
        """(B, 1, 1, S) mask for attending over the source; None when no sentence is padded (nothing to mask)."""
        return None if bool(self.src_mask.all()) else self.src_mask[:, None, None, :]


@dataclass
class KVCache:
    """Per-layer keys/values of the tokens decoded so far; ``length`` counts those tokens."""

    layers: List[Dict[str, KeyValueBuffer]] = field(default_factory=list)  # per layer {"self": .., "cross": ..}
    length: int = 0

    @classmethod
    def empty(cls, n_layers: int) -> "KVCache":
        return cls([{"self": KeyValueBuffer(), "cross": KeyValueBuffer()} for _ in range(n_layers)])

    def reorder(self, index: Tensor, source_index: Optional[Tensor] = None, source_moved: bool = True) -> None:
        """Keep batch rows ``index`` (beam search re-ranks hypotheses each step).

        The cross-attention keys/values are computed from the source, so they follow the
        encoder state's sources: ``source_index`` (default ``index``; for a grouped state,
        see ``EncoderState.repeat``, it indexes sources, not rows).  ``source_moved=False``
        leaves them as they are (a beam moving within its own sentence sees the same source).
        """
        for layer in self.layers:
            layer["self"].index_select_(index)
            if "cross" in layer and source_moved:
                layer["cross"].index_select_(index if source_index is None else source_index)
