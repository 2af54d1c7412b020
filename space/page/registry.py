"""The registry of the Space's tabs: ``@tab("name", title=..., order=...)`` on a ``render(ctx)`` function.

A tab is a title, an order (smaller comes first) and a ``render(ctx)`` function that builds the tab's
components inside the current ``gr.Tab`` and wires their events (each with an ``api_name``).  The
registry is the library's ``Registry``; ``space.page.plugins`` imports the built-in tabs and the entry
points, and the tabs import only this module (no import cycle).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from transformer_hub.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from ..serving.context import SpaceContext


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
