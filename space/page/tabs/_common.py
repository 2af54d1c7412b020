"""Small pieces the built-in tabs share: the model picker, the language pickers with a swap, examples."""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from typing import Iterator, List, Optional, Sequence, Tuple

import gradio as gr

from transformer_hub.hub import ModelLoadError

from ...hosting.limits import RequestError
from ...serving.batching import Cancelled, QueueFull
from ...serving.choice import AUTO as BEST_MODEL, AUTO_LABEL
from ...serving.context import SpaceContext
from ...serving.languages import AUTO, DEFAULT_PAIR, choices, fit_pair
from ...serving.leaving import CLIENT_LEFT, DEPARTED
from ..examples import examples_in

logger = logging.getLogger(__name__)
DECODE = "decode"  # concurrency group of every event that runs the model
UI = dict(api_visibility="private", queue=False)  # events that only rearrange the page
# The language pickers' own events take their values as sent: their choices change with every pick, and
# Gradio's preprocessing checks a value against the choices the server last sent, so a second event
# fired before the page applied the first one's update (a fast pick) failed with "not in the list of
# choices".  ``fit_pair`` checks the values itself (anything not served falls back to a served pair).
PICKERS = dict(UI, preprocess=False)


def decode_event(ctx: SpaceContext) -> dict:
    """Keyword arguments of every event that runs the model: one concurrency group, no Gradio preprocessing.

    The handlers check every value themselves (``service``, ``limits``); Gradio's preprocessing would
    hand each input to a worker thread and back before the handler starts.
    """
    return dict(concurrency_id=DECODE, concurrency_limit=ctx.decode_workers, preprocess=False)


@contextlib.contextmanager
def _shown(name: str) -> Iterator[None]:
    """Every failure inside as Gradio's error, one clear line: the one place the Space's refusals
    (``RequestError``) become ``gr.Error``; the server keeps serving."""
    try:
        yield
    except gr.Error:  # the page's own
        raise
    except RequestError as exc:
        raise gr.Error(exc.message) from exc
    except Cancelled as exc:  # the visitor closed the page: nobody reads this; one line in the log
        logger.info("%s stopped: %s", name, exc)
        raise gr.Error("Stopped: the page that asked for this was closed.") from None
    except QueueFull as exc:
        raise gr.Error(f"The server is busy ({exc}); please try again in a moment.") from exc
    except ModelLoadError as exc:
        raise gr.Error(f"The model could not be loaded: {exc}") from exc
    except ValueError as exc:  # the library's checks of the visitor's input
        logger.info("invalid request to %s: %s", name, exc)
        raise gr.Error(f"Invalid request: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - logged with its traceback, reported in one line
        logger.exception("handler %s failed", name)
        raise gr.Error(f"Sorry, something went wrong ({type(exc).__name__}: {exc}). "
                       "The server is still running; try another input.") from exc


def handler(fn):
    """``fn`` as a Gradio event whose every failure reaches the visitor as a ``gr.Error`` (``_shown``); a generator
    (a stream of updates) stays one."""
    name = getattr(fn, "__name__", None) or getattr(getattr(fn, "func", None), "__name__", repr(fn))  # partials too
    if inspect.isgeneratorfunction(getattr(fn, "func", fn)):
        @functools.wraps(fn)
        def stream(*args, **kwargs):
            with _shown(name):
                yield from fn(*args, **kwargs)

        return stream

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with _shown(name), _watched():
            return fn(*args, **kwargs)

    return wrapped


@contextlib.contextmanager
def _watched() -> Iterator[None]:
    """The event runs with ``CLIENT_LEFT`` watching its visitor's session: when the page closes (its ``unload``,
    ``watch_departures``), the decoder decodes no next part of its sentences and a document's worker stops."""
    request = gr.context.LocalContext.request.get(None)
    token = CLIENT_LEFT.set(DEPARTED.watcher(getattr(request, "session_hash", None)))
    try:
        yield
    finally:
        CLIENT_LEFT.reset(token)


def watch_departures(demo: gr.Blocks) -> None:
    """Inside ``demo``'s ``Blocks``: a visitor closing the page marks their session left (``_watched``)."""
    def left(request: gr.Request) -> None:
        DEPARTED.leave(getattr(request, "session_hash", None))

    demo.unload(left)


def bind(ctx: SpaceContext, fn):
    """``fn(ctx, ...)`` as a Gradio handler ``(...)`` with the Space's error handling."""
    return handler(functools.partial(fn, ctx))


def model_picker(ctx: SpaceContext, label: str = "Model", elem_id: Optional[str] = None,
                 auto: bool = True) -> gr.Dropdown:
    """The model dropdown.  One rule for every tab: it opens on "Best for the direction" (``auto``: the
    best-scored model of each direction, listed first)."""
    names = [(name, name) for name in ctx.model_names]
    if auto and names:
        names.insert(0, (AUTO_LABEL, BEST_MODEL))
    value = names[0][1] if auto and names else ctx.default_model
    return gr.Dropdown(choices=names, value=value, label=label,
                       interactive=True, elem_id=elem_id,
                       info=None if names else "No model found: ship one under space/models/ or pass --model.")


def text_input(ctx: SpaceContext, label: str, value: str = "", lines: int = 3, elem_id=None) -> gr.Textbox:
    return gr.Textbox(label=label, value=value, lines=lines, max_lines=ctx.limits.max_lines + 2, elem_id=elem_id,
                      placeholder="A dog is running in the snow.",
                      max_length=ctx.limits.max_chars * ctx.limits.max_lines)  # a hint only: handlers enforce limits


def _config(ctx: SpaceContext, model: Optional[str]):
    try:
        return ctx.store.config(model) if model in ctx.store.specs else None
    except Exception:  # noqa: BLE001 - an unreadable config: free pickers; the decoding call says what is wrong
        return None


def _fit(ctx: SpaceContext, model, source, target, detect: bool = False):
    pairs = ctx.chooser.pairs() if model == BEST_MODEL else None  # every direction some model serves
    return fit_pair(_config(ctx, model), source, target, pairs, detect)


def fitted_pair(ctx: SpaceContext, model, source, target, detect: bool = False) -> Tuple[str, str]:
    """The (source, target) the language pickers settle on for ``model`` after a pick (what ``_pickers`` sets)."""
    return tuple(_fit(ctx, model, source, target, detect)[2:])  # type: ignore[return-value]


def _pickers(ctx: SpaceContext, model, source, target, detect: bool = False) -> Tuple[dict, dict]:
    sources, targets, source, target = _fit(ctx, model, source, target, detect)
    return (gr.update(choices=choices(sources), value=source), gr.update(choices=choices(targets), value=target))


def _swap(ctx: SpaceContext, model, source, target, detect: bool = False) -> Tuple[dict, dict]:
    return _pickers(ctx, model, target, source, detect)  # fit_pair keeps the swapped pair when the model serves it


def language_pickers(ctx: SpaceContext, model: Optional[gr.Dropdown], prefix: str,
                     detect: bool = False) -> Tuple[gr.Dropdown, gr.Dropdown]:
    """Source and target language pickers and a swap button, narrowed to what ``model`` serves (None: every
    language of the Space, for a tab that uses several models); ``detect`` heads the sources with "Detect
    language", the default."""
    start = (model.value if isinstance(model, gr.Dropdown) else ctx.default_model) if model is not None else None
    sources, targets, source, target = fit_pair(_config(ctx, start), AUTO if detect else DEFAULT_PAIR[0],
                                                DEFAULT_PAIR[1], ctx.chooser.pairs() if start == BEST_MODEL else None,
                                                detect)
    with gr.Row(equal_height=True, elem_classes=["language-pickers"]):
        src = gr.Dropdown(choices(sources), value=source, label="From", elem_id=f"{prefix}-source-lang",
                          interactive=True, min_width=120)
        swap = gr.Button("⇄", size="sm", elem_id=f"{prefix}-swap", min_width=40, scale=0)
        tgt = gr.Dropdown(choices(targets), value=target, label="To", elem_id=f"{prefix}-target-lang",
                          interactive=True, min_width=120)
    model = model if model is not None else gr.State(None)
    pickers = functools.partial(_pickers, ctx, detect=detect)
    if isinstance(model, gr.Dropdown):
        model.change(pickers, [model, src, tgt], [src, tgt], **PICKERS)
    src.input(pickers, [model, src, tgt], [src, tgt], **PICKERS)
    swap.click(functools.partial(_swap, ctx, detect=detect), [model, src, tgt], [src, tgt], **PICKERS)
    return src, tgt


def examples_of(language: Optional[str], domains: Sequence[str] = ()) -> List[List[str]]:
    """The examples of ``language`` (the default source's when None or "auto"), as the Dataset's samples;
    ``domains``: those of the models the tab translates with (software adds the documentation lines)."""
    return [[line] for line in examples_in(language or DEFAULT_PAIR[0], domains)]


def examples(text: gr.Textbox, source: gr.Dropdown, prefix: str, domains: Sequence[str] = ()) -> gr.Dataset:
    """Clickable sentences in the chosen source language (Multi30k captions; documentation lines too when
    ``domains`` include software); a click puts one in ``text``."""
    samples = examples_of(source.value, domains)
    dataset = gr.Dataset(components=[text], samples=samples, label="Examples (click one)",
                         elem_id=f"{prefix}-examples", samples_per_page=len(samples))
    source.change(lambda lang: gr.Dataset(samples=examples_of(lang, domains)), source, dataset, **PICKERS)
    dataset.click(lambda sample: sample[0], dataset, text, **UI)
    return dataset


def sentence_inputs(ctx: SpaceContext, prefix: str, example: int = 0) -> Tuple[gr.Dropdown, gr.Dropdown,
                                                                              gr.Dropdown, gr.Textbox]:
    """A one-sentence tab's inputs: the model, its languages, the sentence (Multi30k example ``example`` of the
    source language to start with) and the clickable examples; returns (model, source, target, text)."""
    model = model_picker(ctx, elem_id=f"{prefix}-model")
    source, target = language_pickers(ctx, model, prefix)
    text = text_input(ctx, "Source sentence", value=examples_of(source.value)[example][0], lines=2,
                      elem_id=f"{prefix}-input")
    examples(text, source, prefix)
    return model, source, target, text


FAILED_NOTE = "⚠ **No result**: the last request failed (the message on the page says why); its old result was cleared."


def clear_on_failure(event, outputs: List, note: Optional[gr.components.Component] = None) -> None:
    """After ``event`` fails, empty ``outputs`` (and put ``FAILED_NOTE`` in ``note``): an old result left under
    Gradio's red "Error" badges reads as the answer to the new request."""
    targets = list(outputs) + ([note] if note is not None else [])

    def cleared():
        values = [gr.update(value=None) for _ in outputs]
        return values + ([gr.update(value=FAILED_NOTE)] if note is not None else [])

    event.failure(cleared, None, targets, **UI)
