"""The built-in parts, registered in one place.

Each registry is filled by the ``@REGISTRY.register(name)`` decorators of the modules that define its
entries; importing those modules is what registers them.  ``register_builtin_parts`` imports them all,
and the package (``transformer_hub/__init__.py``) calls it, so any import of ``transformer_hub`` or of a
submodule sees every built-in name (``TransformerConfig`` checks its variant names against the registries).
"""
from __future__ import annotations


def register_builtin_parts() -> None:
    """Register the built-in architecture parts, decoding strategies, engines and export formats (idempotent)."""
    from . import model, variants  # noqa: F401  (the paper's parts; the alternatives)
    from .decoding import beam, engines, strategies  # noqa: F401  (greedy, sample, beam; the pytorch engine)
    from .export import engine  # noqa: F401  (the ctranslate2 engine; export/__init__ registers the formats)
