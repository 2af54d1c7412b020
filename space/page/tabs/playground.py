"""Playground: train a small Transformer here, live, and watch what each idea of the paper does."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Dict

import gradio as gr

from transformer_hub.playground import (LESSONS, MAX_BUDGET_SECONDS, NORMS, POSITIONS, SWITCH_NOTES, TASKS, RunConfig,
                                        label)

from ...playground import service
from ..registry import tab
from ._common import handler

DEFAULTS = RunConfig()
EVENT = dict(concurrency_id="playground")  # its own group: waiting runs never hold a decoding slot
UI = dict(api_visibility="private", queue=False)
INTRO = """Train the paper's model, the project's own `Transformer`, on a small task, in front of you: pick a task
and switches, press **Train** and watch the curves and the attention form (a diagonal for copy, an anti-diagonal
for reverse). **A/B** trains a second model that differs in the switches you change, on the same seed and data;
both curves share the axes. The presets are four lessons of the paper. One training runs at a time on this
server; each run has a time budget."""


def _switches(prefix: str, notes: bool) -> Dict[str, gr.components.Component]:
    """The paper's ideas as controls, for run A or B; A's carry the note on what each does."""
    info = (lambda name: SWITCH_NOTES[name]) if notes else (lambda name: None)
    return {
        "positions": gr.Radio([(label("positions", n), n) for n in POSITIONS], value=DEFAULTS.positions,
                              label="Positional encoding", info=info("positions"), elem_id=f"{prefix}-positions"),
        "causal_mask": gr.Checkbox(value=DEFAULTS.causal_mask, label="Causal mask in the decoder",
                                   info=info("causal_mask"), elem_id=f"{prefix}-causal"),
        "n_heads": gr.Radio([1, 2, 4], value=DEFAULTS.n_heads, label="Heads (d_model 64)", info=info("n_heads"),
                            elem_id=f"{prefix}-heads"),
        "norm": gr.Radio([(label("norm", n), n) for n in NORMS], value=DEFAULTS.norm, label="Layer norm",
                         info=info("norm"), elem_id=f"{prefix}-norm"),
        "residual": gr.Checkbox(value=DEFAULTS.residual, label="Residual connections", info=info("residual"),
                                elem_id=f"{prefix}-residual"),
        "warmup": gr.Checkbox(value=DEFAULTS.warmup, label="Learning-rate warm-up", info=info("warmup"),
                              elem_id=f"{prefix}-warmup"),
        "label_smoothing": gr.Radio([0.0, 0.1], value=DEFAULTS.label_smoothing, label="Label smoothing",
                                    info=info("label_smoothing"), elem_id=f"{prefix}-smoothing"),
    }


def _session(request: gr.Request) -> str:
    return getattr(request, "session_hash", None) or "anonymous"


@tab("playground", title="Playground", order=70, description="train a small Transformer live")
def render(ctx) -> None:
    gr.Markdown(INTRO)
    ui = SimpleNamespace(**_settings(ctx), **_runs(), **_results())
    _training_events(ctx, ui)
    _page_events(ctx, ui)


def _settings(ctx) -> dict:
    """What both runs share: the lesson preset, the task, the seed, the time budget, the peak learning rate."""
    cap = min(ctx.limits.playground_seconds, int(MAX_BUDGET_SECONDS))
    with gr.Row():
        # short choices (a phone's dropdown shows about 12 characters), what they mean in the info text; a
        # minimum width so that on a phone each takes a row of its own rather than a third of one
        lesson = gr.Dropdown([(l.short, name) for name, l in LESSONS.items()], value=None, label="Lesson presets",
                             info="each sets A and B to differ in one idea of the paper", elem_id="playground-lesson",
                             scale=2, min_width=220)
        task = gr.Dropdown(list(TASKS), value=DEFAULTS.task, label="Task", elem_id="playground-task", scale=2,
                           min_width=220, info="; ".join(f"{name}: {t.description}" for name, t in TASKS.items()))
        seed = gr.Number(value=0, precision=0, minimum=0, label="Seed (data and initialisation)", scale=1)
        budget = gr.Slider(1, max(cap, 2), value=cap, step=1, label="Time budget per run (s)",
                           elem_id="playground-budget")
        peak_lr = gr.Radio([0.003, 0.01], value=DEFAULTS.peak_lr, label="Peak learning rate", scale=1)
    lesson_text = gr.Markdown(elem_id="playground-lesson-text")
    return dict(lesson=lesson, task=task, seed=seed, budget=budget, peak_lr=peak_lr, lesson_text=lesson_text)


def _runs() -> dict:
    """Run A's switches, the A/B box and run B's switches (``switches``: A's then B's, the events' order)."""
    with gr.Row():
        with gr.Column():
            gr.Markdown("### Run A")
            a = _switches("playground-a", notes=True)
        with gr.Column():
            ab = gr.Checkbox(value=False, label="A/B: also train B (same seed, same data), curves on the same axes",
                             elem_id="playground-ab")
            gr.Markdown("### Run B")
            b = _switches("playground-b", notes=False)
    return dict(ab=ab, switches=list(a.values()) + list(b.values()))


def _results() -> dict:
    """The buttons, the status, the curves and attention, the numbers, and the trained model tried on an input."""
    with gr.Row():
        train = gr.Button("Train", variant="primary", elem_id="playground-train")
        stop = gr.Button("Stop", variant="stop", elem_id="playground-stop")
    status = gr.Markdown(elem_id="playground-status")
    # the pictures carry their titles: a panel label would cover the left subplot's title
    curves = gr.Plot(label="Learning curves", show_label=False, elem_id="playground-curves")
    attention = gr.Plot(label="Attention on a fixed held-out example", show_label=False,
                        elem_id="playground-attention")
    with gr.Accordion("Numbers (JSON)", open=False):
        summary = gr.JSON(label="runs", elem_id="playground-summary")
    with gr.Row():
        own = gr.Textbox(label="Try your own input (digits)", value="31415926", elem_id="playground-input", scale=3)
        go = gr.Button("Run the trained model", elem_id="playground-try", scale=1)
    own_output = gr.Markdown(elem_id="playground-output")
    own_attention = gr.Plot(label="Attention on your input", show_label=False, elem_id="playground-own-attention")
    return dict(train=train, stop=stop, status=status, curves=curves, attention=attention, summary=summary, own=own,
                go=go, own_output=own_output, own_attention=own_attention)


def _training_events(ctx, ui: SimpleNamespace) -> None:
    """Train (a stream of the curves), Stop, and the trained model run on the visitor's digits."""
    def start(task_name, seed_value, budget_value, lr, ab_on,  # one parameter per input: Gradio adds the request
              a_positions, a_causal, a_heads, a_norm, a_residual, a_warmup, a_smoothing,
              b_positions, b_causal, b_heads, b_norm, b_residual, b_warmup, b_smoothing, request: gr.Request):
        values = [a_positions, a_causal, a_heads, a_norm, a_residual, a_warmup, a_smoothing,
                  b_positions, b_causal, b_heads, b_norm, b_residual, b_warmup, b_smoothing]
        configs = service.build_configs(ctx, task_name, seed_value, budget_value, lr, ab_on, values)
        yield from service.train_stream(ctx, configs, _session(request))

    ui.train.click(handler(start), [ui.task, ui.seed, ui.budget, ui.peak_lr, ui.ab, *ui.switches],
                   [ui.status, ui.curves, ui.attention, ui.summary], api_name="playground_train",
                   concurrency_limit=ctx.playground.max_waiting, **EVENT)

    def halt(shown: str, request: gr.Request) -> str:
        return service.stop(ctx, _session(request), shown)

    # answered at once (no queue): every run's line, the one training marked stopped
    ui.stop.click(halt, ui.status, ui.status, api_name="playground_stop", queue=False)

    def attempt(text: str, request: gr.Request):
        return service.try_input(ctx, text, _session(request))

    ui.go.click(handler(attempt), ui.own, [ui.own_output, ui.own_attention], api_name="playground_predict",
                concurrency_limit=4, **EVENT)


def _page_events(ctx, ui: SimpleNamespace) -> None:
    """A lesson preset sets the controls; opening the tab readies a spare; leaving the page stops the run."""
    def preset(name):
        if name not in LESSONS:
            return [gr.skip()] * (4 + len(ui.switches))
        values = service.lesson_values(name)
        return [values["task"], values["peak_lr"], values["ab"], values["text"], *values["a"], *values["b"]]

    ui.lesson.change(preset, ui.lesson, [ui.task, ui.peak_lr, ui.ab, ui.lesson_text, *ui.switches], **UI)

    def left(request: gr.Request) -> None:
        ctx.playground.stop(_session(request))

    here = gr.context.Context.block  # this tab: a visitor opening it is about to train, so spares get ready
    if isinstance(here, gr.Tab):
        here.select(lambda: None if ctx.playground.warm() else None, None, None, api_visibility="private",
                    queue=False)
    root = gr.context.Context.root_block
    if root is not None:  # the visitor closed the page: their run stops now, not at the abandoned-stream check
        root.unload(left)
