"""``build_demo()``: the Gradio Blocks of the Space, assembled from the registered tabs."""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Optional

import gradio as gr
import torch

from .batching import MicroBatcher
from .decode_process import DecodeProcess
from .context import SpaceContext
from .limits import Limits
from .models_store import ModelStore, model_ids_from_env
from .plugins import ordered_tabs

TITLE = "Attention Is All You Need: a Transformer from scratch (En → De)"
QUEUE_MAX_SIZE = int(os.environ.get("SPACE_QUEUE_SIZE", "64"))      # waiting requests before "queue full"
# Decodes running at once.  One: two decoding threads in one process contend for the GIL (the decode loop
# is Python between small ops) and served fewer requests/s than one thread decoding bigger merged batches.
CONCURRENCY = int(os.environ.get("SPACE_CONCURRENCY", "1"))
# Requests admitted to the decoding handlers at once: those beyond CONCURRENCY wait inside the micro-batcher
# and are decoded together (one generate call) as soon as a decode slot frees up.  Admitting them early, not
# in Gradio's queue, is what lets concurrent requests share a call (space/bench.py: ~2x requests/s at 8 clients).
DECODE_WORKERS = int(os.environ.get("SPACE_DECODE_WORKERS", str(max(16, 4 * CONCURRENCY))))
# One intra-op thread per decode: small models decode faster that way, and the other core serves Gradio.
TORCH_THREADS = int(os.environ.get("SPACE_TORCH_THREADS", "1"))       # 0 leaves torch's default
# Decode in a child process (1) or in the server process (0): the child has its own GIL, so Gradio's
# threads and the decode loop do not take turns (space/decode_process.py).
DECODE_PROCESS = os.environ.get("SPACE_DECODE_PROCESS", "1") != "0"
CSS = """
#translate-output textarea, #compare-greedy textarea, #compare-beam textarea { font-size: 1.05em; }
footer { visibility: hidden; }
"""

INTRO = f"""# {TITLE}
The model of [Vaswani et al. (2017)](https://arxiv.org/abs/1706.03762), written from scratch with
`transformer_hub` and trained on Multi30k on a 2-core CPU. Translate, compare beam search with greedy decoding,
compare architecture variants and look at the cross-attention. Every button is also an API endpoint
(`gradio_client.Client(url).predict(..., api_name="/translate")`).
"""


def build_demo(model_ids: Optional[Iterable[str]] = None, *, models_dir: Optional[os.PathLike] = None,
               limits: Optional[Limits] = None, store: Optional[ModelStore] = None) -> gr.Blocks:
    """Assemble the tabs (built-in and plugins) into a queued ``gr.Blocks``.

    ``model_ids``: extra models (local folders or ``user/repo[@revision]``) next to those shipped in
    ``models_dir`` (default ``space/models``); ``None`` reads them from ``MODEL_IDS``.
    """
    if store is None:
        store = ModelStore(models_dir, model_ids_from_env() if model_ids is None else list(model_ids))
    ctx = SpaceContext(store=store, limits=limits or Limits.from_env(),
                       batcher=MicroBatcher(max_parallel=CONCURRENCY), decode_workers=DECODE_WORKERS,
                       decoder=DecodeProcess(TORCH_THREADS) if DECODE_PROCESS else None)
    if ctx.decoder is not None and store.default() is not None:  # the decoding child starts with the server
        spec = store.spec(store.default())
        ctx.decoder.preload(spec.source, spec.revision)
    tabs = ordered_tabs()
    with gr.Blocks(title=TITLE) as demo:
        gr.Markdown(INTRO, elem_id="intro")
        with gr.Tabs(selected=tabs[0].name if tabs else None):
            for tab in tabs:
                with gr.Tab(tab.title, id=tab.name, elem_id=f"tab-{tab.name}"):
                    tab.render(ctx)
    demo.space_context = ctx  # for tests and benchmarks: the store and limits behind this demo
    demo.queue(max_size=QUEUE_MAX_SIZE, default_concurrency_limit=CONCURRENCY)
    return demo


def configure_torch() -> int:
    """Set torch's intra-op threads for serving (``SPACE_TORCH_THREADS``, default 1); returns the previous count."""
    previous = torch.get_num_threads()
    if TORCH_THREADS > 0:
        torch.set_num_threads(TORCH_THREADS)
    return previous


def launch_options(**overrides: Any) -> Dict[str, Any]:
    """``demo.launch`` arguments; host and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT unless given."""
    options: Dict[str, Any] = dict(css=CSS, theme=gr.themes.Soft(), show_error=True, footer_links=["api"])
    options.update(overrides)
    return options
