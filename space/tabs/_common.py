"""Small pieces the built-in tabs share."""
from __future__ import annotations

import functools

import gradio as gr

from .. import service
from ..context import SpaceContext

DECODE = "decode"  # concurrency group of every event that runs the model


def decode_event(ctx: SpaceContext) -> dict:
    """Keyword arguments of every event that runs the model: one concurrency group, no Gradio preprocessing.

    The handlers check every value themselves (``service``, ``limits``); Gradio's preprocessing would
    hand each input to a worker thread and back, ~6 ms of a /translate request (eight inputs) on 2 cores.
    """
    return dict(concurrency_id=DECODE, concurrency_limit=ctx.decode_workers, preprocess=False)


def bind(ctx: SpaceContext, fn):
    """``fn(ctx, ...)`` as a Gradio handler ``(...)`` with the Space's error handling and inference mode."""
    return service.handler(functools.partial(fn, ctx))


def model_picker(ctx: SpaceContext, label: str = "Model") -> gr.Dropdown:
    names = ctx.model_names
    return gr.Dropdown(choices=names, value=ctx.default_model, label=label, interactive=True,
                       info=None if names else "No model found: ship one under space/models/ or pass --model.")


def text_input(ctx: SpaceContext, label: str, value: str = "", lines: int = 3, elem_id=None) -> gr.Textbox:
    return gr.Textbox(label=label, value=value, lines=lines, max_lines=ctx.limits.max_lines + 2, elem_id=elem_id,
                      placeholder="A dog is running in the snow.",
                      max_length=ctx.limits.max_chars * ctx.limits.max_lines)  # a hint only: handlers enforce limits
