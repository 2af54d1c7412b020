"""Fixtures of the Space's tests: a small trained model, and the demo launched on loopback.

``model_for_tests`` trains a tiny Transformer for a few seconds on synthetic En->De pairs (the same on every
machine, corpus or not) with the library's trainer, once per cache folder; ``running_app`` launches the demo in this
process on 127.0.0.1 and closes it (and its decoding worker) afterwards.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]

import gradio as gr
import torch

from space.page.demo import build_demo, configure_torch, launch_options
from space.hosting.limits import Limits
from space.serving.model_store import is_model_folder
from transformer_hub.training.trainer import main as train_main

from .corpus import cache_folder, synthetic_pairs
from .multilingual import train_four_way

TINY_UPDATES = 300  # about 30 s at one thread


def train_tiny(out: Path, pairs: List[Tuple[str, str]], updates: int = TINY_UPDATES, seed: int = 0,
               vocab_size: int = 1000) -> Path:
    """Train ``updates`` steps with the library's trainer on ``pairs``; the final model goes to ``out``.

    A count of updates, not of seconds, so that every machine, however loaded, gets the same model."""
    with tempfile.TemporaryDirectory(prefix="space_model_") as tmp:
        files = {}
        for name, rows in (("train", pairs), ("valid", pairs[:50])):
            for side, index in (("src", 0), ("tgt", 1)):
                files[f"{name}_{side}"] = Path(tmp) / f"{name}.{side}"
                files[f"{name}_{side}"].write_text("\n".join(r[index] for r in rows) + "\n", encoding="utf-8")
        train_main(["--out", f"{tmp}/run", "--train-src", str(files["train_src"]), "--train-tgt", str(files["train_tgt"]),
                    "--valid-src", str(files["valid_src"]), "--valid-tgt", str(files["valid_tgt"]),
                    "--preset", "tiny", "--d-model", "64", "--d-ff", "128", "--max-len", "128", "--dropout", "0.1",
                    "--vocab-size", str(vocab_size), "--max-tokens", "1500", "--warmup", "30", "--peak-lr", "0.003",
                    "--max-updates", str(updates), "--bleu-every", "1000", "--final-beam", "0",
                    "--average-last", "2", "--threads", "1", "--seed", str(seed), "--name", "space test model (tiny)"])
        shutil.copytree(Path(tmp) / "run" / "final", out)
    return out


def model_for_tests(cache_root: Optional[os.PathLike] = None, updates: int = TINY_UPDATES) -> Path:
    """A tiny En->De model trained once on 2,000 synthetic pairs into ``cache_root`` (pytest's cache) or the temp
    folder."""
    root = Path(cache_root) if cache_root else Path(tempfile.gettempdir()) / "transformer_hub_space"
    out = root / f"tiny-en-de-{updates}u-synthetic"
    if is_model_folder(out):
        return out
    pairs = synthetic_pairs(2000)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    train_tiny(tmp, pairs, updates=updates)
    try:
        os.replace(tmp, out)
    except OSError:  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def launch_local(model_ids: Optional[Iterable[str]] = None, *, models_dir=None, limits: Optional[Limits] = None,
                 host: str = "127.0.0.1") -> Tuple[str, gr.Blocks]:
    """Build and launch the demo in this process (non-blocking); returns its URL and the Blocks."""
    demo = build_demo(model_ids, models_dir=models_dir, limits=limits)
    for attempt in range(3):
        try:
            demo.launch(**launch_options(server_name=host, server_port=free_port(host), prevent_thread_lock=True,
                                         quiet=True))
            break
        except OSError:  # the free port was taken in between: try another one
            if attempt == 2:
                raise
    return demo.local_url, demo


@dataclass
class RunningApp:
    url: str
    demo: gr.Blocks
    model: str        # the name of the model to use in requests
    model_dir: Path


@contextlib.contextmanager
def running_app(model_dir: os.PathLike, limits: Optional[Limits] = None, models_dir: Optional[os.PathLike] = None,
                extra: Iterable[str] = ()) -> Iterator[RunningApp]:
    """Launch the demo serving ``model_dir`` (and ``extra`` folders) on loopback; close it and its worker after.

    ``models_dir`` (default: an empty folder) is where it looks for shipped models, so tests do not load
    the real ones."""
    model_dir = Path(model_dir).resolve()
    threads = configure_torch()
    with tempfile.TemporaryDirectory(prefix="space_models_") as empty:
        try:
            url, demo = launch_local([str(model_dir), *map(str, extra)], models_dir=models_dir or empty,
                                     limits=limits)
            try:
                yield RunningApp(url, demo, demo.space_context.store.name_of(str(model_dir)), model_dir)
            finally:
                demo.close()
                demo.space_context.close()
        finally:
            torch.set_num_threads(threads)


def multilingual_for_tests(cache_root: Optional[os.PathLike] = None) -> Path:
    """A tiny model over en, de, fr and cs that follows its target-language tag, trained once into a folder
    named ``multilingual`` (the picker shows models by folder name)."""
    root = Path(cache_root) if cache_root else Path(tempfile.gettempdir()) / "transformer_hub_space"
    out = root / "ml" / "multilingual"
    if is_model_folder(out):
        return out
    with tempfile.TemporaryDirectory(prefix="space_ml_") as tmp:
        final = train_four_way(Path(tmp))
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = out.with_name(out.name + f".tmp{os.getpid()}")
        shutil.copytree(final, tmp_out)
        try:
            os.replace(tmp_out, out)
        except OSError:  # another process finished first
            shutil.rmtree(tmp_out, ignore_errors=True)
    return out


@dataclass
class Served:
    url: str
    app: object       # the FastAPI app: REST routes and the mounted page
    demo: gr.Blocks


@contextlib.contextmanager
def serving(model_dirs: Iterable[os.PathLike], limits: Optional[Limits] = None, settings=None,
            models_dir: Optional[os.PathLike] = None) -> Iterator[Served]:
    """``python app.py`` in this process: the page and the REST routes on one uvicorn server on loopback.

    ``models_dir`` (default: an empty folder) is where it looks for shipped models."""
    import threading
    import time

    import uvicorn

    from space.server import build_app

    threads = configure_torch()
    with tempfile.TemporaryDirectory(prefix="space_models_") as empty:
        demo = build_demo([str(Path(m).resolve()) for m in model_dirs], models_dir=models_dir or empty,
                          limits=limits)
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(build_app(demo, settings), host="127.0.0.1", port=port,
                                               log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 60
            while not server.started:
                if not thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError("the server did not start")
                time.sleep(0.05)
            yield Served(f"http://127.0.0.1:{port}/", server.config.app, demo)
        finally:
            server.should_exit = True
            thread.join(30)
            demo.space_context.close()
            torch.set_num_threads(threads)


LIMITS = Limits(max_chars=300, max_lines=8, max_output_tokens=60, max_beam=6, max_models=4)


def app_models(request):
    """``model_for_tests``'s arguments: pytest's cache folder and the updates."""
    return cache_folder(request, "space"), TINY_UPDATES


def tiny_app(request) -> Iterator[RunningApp]:
    """The demo serving the tiny en->de model under ``LIMITS``, for a module's ``app`` fixture to yield from."""
    with running_app(model_for_tests(*app_models(request)), LIMITS) as running:
        yield running


def untrained_model_dir(root: Path, tokenizer) -> Path:
    """A tiny en->de model that was never trained (seeded: its outputs are fixed), saved under ``root/en-de``:
    enough for tests of the server's plumbing, where only equal answers matter, not good ones."""
    from transformer_hub import Transformer, TransformerConfig

    vocab = tokenizer.src_vocab_size
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.preset("tiny", src_vocab_size=vocab, tgt_vocab_size=vocab,
                                                 share_embeddings=True, src_lang="en", tgt_lang="de")).eval()
    model.tokenizer = tokenizer
    model.save_pretrained(root / "en-de")
    return root / "en-de"


@contextlib.contextmanager
def model_context(folder: Path, model, limits: Limits) -> Iterator["SpaceContext"]:
    """A ``SpaceContext`` over ``model`` saved as ``folder/en-de`` (no page, no server), its decoder closed after."""
    from space.serving.context import SpaceContext
    from space.serving.model_store import ModelStore

    model.save_pretrained(folder / "en-de")
    context = SpaceContext(store=ModelStore(folder, []), limits=limits)
    try:
        yield context
    finally:
        context.close()
