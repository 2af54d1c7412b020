"""One small cache of values derived from an object (a weight, a model), kept while it lives and is unchanged."""
from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, Generic, Hashable, Optional, Tuple, TypeVar

V = TypeVar("V")


class WeakVersionCache(Generic[V]):
    """``get(obj, compute)``: ``compute(obj)`` once per version of ``obj``; the entry goes when ``obj`` is freed.

    Entries are keyed on ``id(obj)`` beside a weak reference (so a new object at a recycled id is not
    mistaken for the old one) and on ``version(obj)``, a cheap key that must change whenever what
    ``compute`` reads changes (for tensors: the version counter PyTorch bumps on in-place writes, and the
    storage pointer).  ``version`` returning None means "cannot tell": computed every time, never kept.
    Writes through ``tensor.data`` bypass version counters, so they go unseen: call :meth:`clear` after those.
    """

    def __init__(self, version: Callable[[Any], Optional[Hashable]]) -> None:
        self.version = version
        self.entries: Dict[int, Tuple[weakref.ref, Hashable, V]] = {}

    def get(self, obj: Any, compute: Callable[[Any], V]) -> V:
        key = self.version(obj)
        if key is None:
            return compute(obj)
        kept = self.entries.get(id(obj))
        if kept is not None and kept[0]() is obj and kept[1] == key:
            return kept[2]
        value = compute(obj)
        forget = lambda _, i=id(obj): self.entries.pop(i, None)  # noqa: E731  (when the object is freed)
        self.entries[id(obj)] = (weakref.ref(obj, forget), key, value)
        return value

    def __contains__(self, obj: Any) -> bool:
        kept = self.entries.get(id(obj))
        return kept is not None and kept[0]() is obj

    def clear(self) -> None:
        self.entries.clear()
