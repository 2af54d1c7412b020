"""``build_demo()``: the Gradio Blocks of the Space, assembled from the registered tabs."""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Optional

import gradio as gr
import torch

from ..hosting.limits import Limits
from ..serving.batching import MicroBatcher
from ..serving.context import DECODE_WORKERS, SpaceContext
from ..serving.decoder import Decoder
from ..serving.languages import LANGUAGES
from ..serving.service import domain_choices
from ..serving.model_store import ModelStore, model_ids_from_env
from . import keys
from .plugins import ordered_tabs
from .tabs._common import watch_departures
from .tools import add_tools, hide_page_events

TITLE = "Attention Is All You Need: a Transformer from scratch"
QUEUE_MAX_SIZE = int(os.environ.get("SPACE_QUEUE_SIZE", "64"))      # waiting requests before "queue full"
# Decodes running at once.  One: the decoding worker decodes one call at a time, and concurrent requests
# merge into that call (space/serving/batching.py) rather than queue behind each other.
CONCURRENCY = int(os.environ.get("SPACE_CONCURRENCY", "1"))
# One intra-op thread in the decoding worker: small models decode faster that way, and the other core
# serves Gradio.  0 leaves torch's default.
TORCH_THREADS = int(os.environ.get("SPACE_TORCH_THREADS", "1"))
CSS = """
#translate-output textarea, #compare-greedy textarea, #compare-beam textarea { font-size: 1.05em; }
/* tables: numbers, names and headers never break inside a word (a cell wraps at spaces only) */
.table-wrap td, .table-wrap th, .table-wrap td *, .table-wrap th * {
  overflow-wrap: normal !important; word-break: normal !important; hyphens: none; }
#variants-table td, #variants-results td { font-family: var(--font); font-size: 0.9em; }
/* help texts under the controls: the theme's grey (#9ca3af) on white is 2.5:1; gray-600 is 7.6:1 (WCAG AA: 4.5) */
body:not(.dark) { --block-info-text-color: #4b5563; }
@media (max-width: 600px) {
  /* a phone: the tab names wrap onto lines instead of hiding behind a menu; pickers take the whole width */
  .tab-wrapper .tab-container { flex-wrap: wrap; height: auto; row-gap: 2px; }
  .tab-wrapper { height: auto !important; padding-bottom: 4px; }
  .tab-container button { padding: 4px 8px; font-size: 0.95em; }
  .language-pickers { flex-wrap: wrap !important; }
  .language-pickers > * { flex: 1 1 100% !important; min-width: 100% !important; }
  #intro h1 { font-size: 1.35em; margin-bottom: 0.2em; }
  #intro p { font-size: 0.92em; }
  .gradio-container { padding: 6px !important; }
  /* a table wider than the screen scrolls inside its frame, the page never does; Gradio sizes the columns from
     their percentages of the frame, so the variants table gets a frame wide enough for its longest numbers */
  .table-container { overflow-x: auto !important; }
  #variants-table .table-wrap { min-width: 980px; }
  #variants-results .table-wrap { min-width: 900px; }
  /* the matplotlib pictures keep their drawn size (8-11 pt labels) and scroll sideways, instead of being
     shrunk to the screen's width with 4 px labels */
  #compare-tree, #inside-positions-plot, #inside-step-plot, #inside-forcing-plot { overflow-x: auto !important; }
  #compare-tree img, #inside-positions-plot img, #inside-step-plot img, #inside-forcing-plot img {
    max-width: none !important; width: auto !important; }
}
"""

def intro(domains: Iterable[str] = ()) -> str:
    """The page's first lines: what the models were trained on (the domains some loaded model knows)."""
    trained_on = "Multi30k's short image descriptions"
    if "software" in domains:
        trained_on += " and LibreOffice's help (software documentation)"
    return f"""# {TITLE}
The Transformer of [Vaswani et al. (2017)](https://arxiv.org/abs/1706.03762), written from scratch and trained on
{trained_on}: it translates between {', '.join(LANGUAGES.values())}. Every tab is also an
API endpoint ("Use via API" at the bottom of the page).
"""


def build_demo(model_ids: Optional[Iterable[str]] = None, *, models_dir: Optional[os.PathLike] = None,
               limits: Optional[Limits] = None, store: Optional[ModelStore] = None) -> gr.Blocks:
    """Assemble the tabs (built-in and plugins) into a queued ``gr.Blocks``; start loading the default model.

    ``model_ids``: extra models (local folders or ``user/repo[@revision]``) next to those shipped in
    ``models_dir`` (default ``space/models``); ``None`` reads them from ``MODEL_IDS``.
    """
    ctx = serving_context(model_ids, models_dir=models_dir, limits=limits, store=store)
    tabs = ordered_tabs()
    with gr.Blocks(title=TITLE) as demo:
        gr.Markdown(intro(value for _, value in domain_choices(ctx)), elem_id="intro")
        with gr.Tabs(selected=tabs[0].name if tabs else None, overflow_behavior="wrap"):
            for tab in tabs:
                with gr.Tab(tab.title, id=tab.name, elem_id=f"tab-{tab.name}"):
                    tab.render(ctx)
        tools = add_tools(ctx)  # translate, detect, languages: the MCP server's tools (GRADIO_MCP_SERVER=true)
        watch_departures(demo)  # a visitor closing the page stops their decoding
    hide_page_events(demo, tools)
    demo.space_context = ctx  # for tests and benchmarks: the store, decoder and limits behind this demo
    demo.queue(max_size=QUEUE_MAX_SIZE, default_concurrency_limit=CONCURRENCY)
    return demo


def serving_context(model_ids: Optional[Iterable[str]] = None, *, models_dir: Optional[os.PathLike] = None,
                    limits: Optional[Limits] = None, store: Optional[ModelStore] = None) -> SpaceContext:
    """The page's ``SpaceContext`` (store, decoder behind the micro-batcher, limits), its decoder started: the
    models being loaded while the caller builds what serves them (the page, or a Ray Serve replica)."""
    if store is None:
        store = ModelStore(models_dir, model_ids_from_env() if model_ids is None else list(model_ids))
    limits = limits or Limits.from_env()
    decoder = Decoder(store, threads=TORCH_THREADS or torch.get_num_threads(), batcher=MicroBatcher(
        max_parallel=CONCURRENCY, max_waiting=QUEUE_MAX_SIZE, part_seconds=limits.decode_part_seconds))
    workers = int(os.environ.get("SPACE_DECODE_WORKERS", str(max(DECODE_WORKERS, 4 * CONCURRENCY))))
    ctx = SpaceContext(store=store, limits=limits, decoder=decoder, decode_workers=workers)
    decoder.start()  # the worker starts and loads the default model
    return ctx


def configure_torch() -> int:
    """Set this process's torch intra-op threads (``SPACE_TORCH_THREADS``, default 1); returns the previous count."""
    previous = torch.get_num_threads()
    if TORCH_THREADS > 0:
        torch.set_num_threads(TORCH_THREADS)
    return previous


def launch_options(**overrides: Any) -> Dict[str, Any]:
    """``demo.launch`` arguments; host and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT unless given."""
    options: Dict[str, Any] = dict(css=CSS, theme=gr.themes.Soft(), show_error=True, footer_links=["api"],
                                   head=keys.HEAD)  # a Tab in the Glossary box types a tab (keys.py)
    options.update(overrides)
    return options
