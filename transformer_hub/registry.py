"""One small generic registry, plus entry-point plugin loading.

Every swappable part of the project (positional encodings, residual/norm
placement, feed-forward blocks, attention kernels, layouts, decoding
strategies, Space tabs) lives in a :class:`Registry`.  Names are unique: a
duplicate raises.  An unknown name raises a ``ValueError`` that lists what
exists.  Outside packages add parts through the entry-point group
``transformer_hub.plugins``; set ``TRANSFORMER_HUB_DISABLE_PLUGINS=1`` to skip
loading them.

An architecture part describes itself with attributes its own class defines (a subclass states its own,
since it may compute something else), read through :meth:`Registry.about`:

* ``label``: what people are shown (the diagram, the Playground);
* ``exports``: ``{format: options}`` for each export that takes it (CTranslate2 spec options, MarianConfig
  fields), or ``{format: "why not"}``; a format it does not name refuses it;
* ``check(config)``: what it needs from the config (``ValueError`` otherwise); none: nothing;
* ``parameter_count(config) -> int``: its size, so ``TransformerConfig`` refuses absurd sizes without building
  anything; without one it is counted on a ``meta``-device instance (exact, nothing allocated, but slower);
* per kind: a norm's ``final_norm`` (each stack ends with a LayerNorm) and ``steps`` (its block in order,
  ``"sublayer"`` marking the sub-layer); a layout's ``encoder`` (an encoder and encoder-decoder attention).

A plugin part needs none of these to be built, trained, saved and loaded; whatever asks for a description it
lacks (the diagram, an export) gets a :class:`PartDescriptionError` naming it, never a guess.
"""
from __future__ import annotations

import importlib.metadata
import logging
import os
from typing import Any, Callable, Dict, Generic, Iterator, List, TypeVar

T = TypeVar("T")
ENTRY_POINT_GROUP = "transformer_hub.plugins"
DISABLE_ENV = "TRANSFORMER_HUB_DISABLE_PLUGINS"
logger = logging.getLogger(__name__)
_loaded_plugins: set[str] = set()
_REQUIRED = object()


class PartDescriptionError(ValueError):
    """A registered part was asked for a description (``label``, ``steps``...) its class does not give."""


class Registry(Generic[T]):
    """A name -> object table with a decorator to fill it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: Dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@REGISTRY.register("name")``. A duplicate name raises ``ValueError``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} names must be non-empty strings, got {name!r}")

        def add(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered (by {self._items[name]!r})")
            self._items[name] = obj
            return obj

        return add

    def unregister(self, name: str) -> None:
        """Remove an entry (used by tests that register throwaway plugins)."""
        self._items.pop(name, None)

    def get(self, name: str) -> T:
        """Return the entry called ``name``; unknown names raise ``ValueError`` listing the known ones."""
        if name not in self._items:
            load_plugins()
        if name not in self._items:
            raise ValueError(f"unknown {self.kind} {name!r}; registered: {', '.join(self.names()) or '(none)'}")
        return self._items[name]

    def about(self, name: str, attribute: str, default: Any = _REQUIRED) -> Any:
        """What the entry ``name`` says of itself: ``attribute`` as its own class defines it (not inherited).

        Undeclared: ``default`` when one is given, else :class:`PartDescriptionError` naming what is missing.
        """
        entry = self.get(name)
        if attribute in vars(entry):
            return getattr(entry, attribute)
        if default is not _REQUIRED:
            return default
        raise PartDescriptionError(f"{self.kind} {name!r} ({getattr(entry, '__qualname__', entry)!r}) does not "
                                   f"describe itself: its class defines no {attribute!r}")

    def names(self) -> List[str]:
        load_plugins()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items or (isinstance(name, str) and name in self.names())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._items)})"


def load_plugins(group: str = ENTRY_POINT_GROUP) -> List[str]:
    """Import every entry point of ``group`` once (importing registers the plugin).

    If the loaded object is callable it is called with no arguments, so a plugin
    can be a module or a ``register()`` function.  Returns the names newly loaded.
    Broken plugins are logged and skipped: one bad package must not break the library.
    """
    if os.environ.get(DISABLE_ENV, "").strip().lower() in {"1", "true", "yes"}:
        return []
    loaded = []
    for ep in importlib.metadata.entry_points(group=group):
        key = f"{group}:{ep.name}={ep.value}"
        if key in _loaded_plugins:
            continue
        _loaded_plugins.add(key)
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type):
                obj()
            loaded.append(ep.name)
        except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, not fatal
            logger.warning("could not load plugin %s from group %s: %s", ep.name, group, exc)
    return loaded


# The architecture's plug points (section 3 of the paper, and the variants beside it).
POSITIONAL: Registry = Registry("positional encoding")
NORM: Registry = Registry("norm placement")
FEED_FORWARD: Registry = Registry("feed-forward")
ATTENTION: Registry = Registry("attention kernel")
LAYOUT: Registry = Registry("layout")
MODELS: Registry = Registry("model class")  # what loads a save_pretrained folder (for code below the model)
# The config field that names a part of each kind (``TransformerConfig.positional`` is a POSITIONAL name...).
PARTS: Dict[str, Registry] = {"positional": POSITIONAL, "norm": NORM, "feed_forward": FEED_FORWARD,
                              "attention": ATTENTION, "layout": LAYOUT}
