"""Launch the demo on loopback from Python (tests, benchmarks): ``url, demo = launch_local(...)``."""
from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional, Tuple

import gradio as gr

import torch

from .demo import build_demo, configure_torch, launch_options
from .limits import Limits
from .models_store import DEFAULT_MODELS_DIR, SHIPPED


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def launch_local(model_ids: Optional[Iterable[str]] = None, *, models_dir=None, limits: Optional[Limits] = None,
                 host: str = "127.0.0.1", port: Optional[int] = None) -> Tuple[str, gr.Blocks]:
    """Build and launch the demo in this process (non-blocking); returns its URL and the Blocks (``.close()`` it)."""
    demo = build_demo(model_ids, models_dir=models_dir, limits=limits)
    for attempt in range(3):
        try:
            demo.launch(**launch_options(server_name=host, server_port=port or free_port(host),
                                         prevent_thread_lock=True, quiet=True))
            break
        except OSError:  # the free port was taken in between: try another one
            if attempt == 2 or port:
                raise
    return demo.local_url, demo


@dataclass
class RunningApp:
    url: str
    demo: gr.Blocks
    model: str        # the name of the model to use in requests
    shipped: bool     # True when it is the shipped, trained space/models/en-de


@contextlib.contextmanager
def running_app(model_dir: os.PathLike, limits: Optional[Limits] = None) -> Iterator[RunningApp]:
    """Launch the demo with ``model_dir`` (the shipped model or an extra folder) on loopback; close it after."""
    model_dir = Path(model_dir).resolve()
    shipped = model_dir == (DEFAULT_MODELS_DIR / SHIPPED).resolve()
    threads = configure_torch()
    try:
        url, demo = launch_local([] if shipped else [str(model_dir)], limits=limits)
        try:
            yield RunningApp(url, demo, demo.space_context.store.name_of(str(model_dir)), shipped)
        finally:
            demo.close()
            if demo.space_context.decoder is not None:
                demo.space_context.decoder.close()
    finally:
        torch.set_num_threads(threads)
