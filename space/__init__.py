"""The Gradio Space of transformer_hub: ``build_demo()`` assembles tabs registered as plugins.

    from space import build_demo
    build_demo(model_ids=["user/repo@main"]).launch()

The names below are imported on first use, so importing ``space`` alone does not pull in Gradio.
"""
from importlib import import_module

_EXPORTS = {"build_demo": "page.demo", "configure_torch": "page.demo", "launch_options": "page.demo",
            "ModelStore": "serving.model_store", "TAB_ENTRY_POINT_GROUP": "page.plugins", "TABS": "page.registry",
            "Tab": "page.registry", "ordered_tabs": "page.plugins", "tab": "page.registry"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
