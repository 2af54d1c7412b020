"""The Gradio Space of transformer_hub: ``build_demo()`` assembles tabs registered as plugins.

    from space import build_demo
    build_demo(model_ids=["user/repo@main"]).launch()
"""
from .demo import build_demo, configure_torch, launch_options
from .models_store import ModelStore
from .plugins import TAB_ENTRY_POINT_GROUP, TABS, Tab, ordered_tabs, tab

__all__ = ["build_demo", "configure_torch", "launch_options", "ModelStore", "TABS", "Tab", "tab", "ordered_tabs",
           "TAB_ENTRY_POINT_GROUP"]
