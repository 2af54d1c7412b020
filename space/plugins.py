"""The Space's tabs are plugins: each one registers itself in ``TABS``.

A tab is a title, an order (smaller comes first) and a ``render(ctx)``
function that builds the tab's components inside the current ``gr.Tab`` and
wires their events (each with an ``api_name``).  The built-in tabs live in
``space/tabs/``; outside packages add their own through the entry-point group
``transformer_hub.space_tabs``, whose entries point at a module that registers
on import, or at a no-argument ``register()`` function::

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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, List

from transformer_hub.registry import Registry, load_plugins

if TYPE_CHECKING:  # pragma: no cover
    from .context import SpaceContext

TAB_ENTRY_POINT_GROUP = "transformer_hub.space_tabs"


@dataclass(frozen=True)
class Tab:
    """One tab of the demo."""

    name: str
    title: str
    order: int
    render: Callable[["SpaceContext"], None]
    description: str = ""


TABS: Registry = Registry("space tab")


def tab(name: str, *, title: str, order: int = 100, description: str = "") -> Callable:
    """Decorator registering ``render(ctx)`` as a tab: ``@tab("translate", title="Translate", order=10)``."""

    def add(render: Callable[["SpaceContext"], None]) -> Callable[["SpaceContext"], None]:
        TABS.register(name)(Tab(name=name, title=title, order=order, render=render, description=description))
        return render

    return add


def load_tab_plugins() -> List[str]:
    """Import the built-in tabs and every ``transformer_hub.space_tabs`` entry point (once each)."""
    from . import tabs  # noqa: F401 - importing registers the built-in tabs

    return load_plugins(group=TAB_ENTRY_POINT_GROUP)


def ordered_tabs() -> List[Tab]:
    """All registered tabs, by order then name."""
    load_tab_plugins()
    return sorted((TABS.get(name) for name in TABS.names()), key=lambda t: (t.order, t.name))
