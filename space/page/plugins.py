"""The Space's tabs are plugins: each one registers itself in ``TABS`` (``space/page/registry.py``).

The built-in tabs live in ``space/page/tabs/``; outside packages add their own through the entry-point group
``transformer_hub.space_tabs``, whose entries point at a module that registers on import, or at a
no-argument ``register()`` function::

    # pyproject.toml of another package
    [project.entry-points."transformer_hub.space_tabs"]
    my_tab = "my_package.space_tab"          # a module that calls space.tab(...)

    # my_package/space_tab.py
    from space import tab

    @tab("my-tab", title="My tab", order=100)
    def render(ctx):
        ...
"""
from __future__ import annotations

from typing import List

from transformer_hub.registry import load_plugins

from .registry import TABS, Tab, tab

__all__ = ["TABS", "TAB_ENTRY_POINT_GROUP", "Tab", "load_tab_plugins", "ordered_tabs", "tab"]
TAB_ENTRY_POINT_GROUP = "transformer_hub.space_tabs"


def load_tab_plugins() -> List[str]:
    """Import the built-in tabs and every ``transformer_hub.space_tabs`` entry point (once each)."""
    from . import tabs  # noqa: F401 - importing registers the built-in tabs

    return load_plugins(group=TAB_ENTRY_POINT_GROUP)


def ordered_tabs() -> List[Tab]:
    """All registered tabs, by order then name."""
    load_tab_plugins()
    return sorted((TABS.get(name) for name in TABS.names()), key=lambda t: (t.order, t.name))
