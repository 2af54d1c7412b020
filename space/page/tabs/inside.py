"""Inside the Transformer: the paper's ideas on the chosen model, for the visitor's sentence.

Four views, each an API endpoint returning its pictures and its data as JSON: all three kinds of
attention (``/attention_all``), positional information (``/positions``), decoding step by step with
teacher forcing against free running (``/steps``), and the training recipe (``/recipe``).
"""
from __future__ import annotations

import functools
from typing import List, Tuple

import gradio as gr

from ...pictures.attention import KIND_TITLES
from .. import inside
from ..registry import tab
from ._common import (PICKERS, UI, bind, decode_event, examples, examples_of, fitted_pair, handler, language_pickers,
                      model_picker, text_input)

INTRO = ("The model of the paper, opened up on your sentence: pick a model and a language pair, type a sentence "
         "(or click an example: they come with their Multi30k reference translations), then open a view.")
ATTENTION = (
    "**Attention (sections 3.2.1 to 3.2.3).** Each head of each layer mixes the vectors of the positions it "
    "attends to, weighted by softmax(QK<sup>T</sup>/√d<sub>k</sub>). The encoder's self-attention lets every source "
    "piece look at every other; the decoder's self-attention is *masked*, so a position sees only the ones before it "
    "(the empty upper triangle); the encoder-decoder attention lets each output position look at the source. All "
    "three come from one forward pass, teacher-forced on the model's own translation (or on the one you give).")
POSITIONS = (
    "**Positional encoding (section 3.5).** Attention by itself ignores word order, so position is put in. The "
    "paper adds sin(pos/10000<sup>2i/d</sup>) and cos(...) to the embeddings: each dimension is a wave of its own "
    "wavelength, and the dot product of two positions' vectors depends on their distance. Learned positions add a "
    "trained vector instead; rotary positions (RoPE) add nothing but rotate queries and keys, so a query-key score "
    "depends on how far apart they are. Taken from the chosen model's own positional module.")
STEPS = (
    "**Decoding one step at a time (sections 3.1 and 6.1).** The decoder predicts the next piece from the source "
    "and the pieces so far. Greedy decoding takes the most likely one (red); beam search keeps the k most likely "
    "prefixes (blue) and drops the rest (grey). Move the slider over the steps. Below: **teacher forcing**, as in "
    "training, feeds the reference's pieces in and shows how likely each next reference piece was; free running "
    "feeds the model's own output back, and the dotted line marks where greedy decoding leaves the reference.")
RECIPE = (
    "**The training recipe (sections 5.3 and 5.4), from the model's own files.** The learning rate grows linearly "
    "for the warm-up updates, then falls as 1/√step: lr = factor · d_model<sup>-0.5</sup> · min(step<sup>-0.5</sup>, "
    "step · warmup<sup>-1.5</sup>), drawn with this model's d_model, warm-up and peak, beside the rate its trainer "
    "logged and its loss curves. Label smoothing trains against a target that keeps 1 - ε on the right piece and "
    "spreads ε over the whole vocabulary; shown at a piece of your sentence's translation.")


@tab("inside", title="Inside the Transformer", order=60, description="the paper's ideas on your sentence")
def render(ctx) -> None:
    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column():
            model = model_picker(ctx, elem_id="inside-model")  # "Best for the direction", as on every tab
            source, target = language_pickers(ctx, model, "inside")
            model.info = inside.best_note(ctx, model.value, source.value, target.value) or None
        with gr.Column():
            text = text_input(ctx, "Source sentence", value=examples_of(source.value)[0][0], lines=2,
                              elem_id="inside-input")
            examples(text, source, "inside")
    common = [text, model, source, target]
    with gr.Tabs(overflow_behavior="wrap"):  # every view's name in sight, at any width
        with gr.Tab("Attention, all three kinds", id="inside-attention"):
            button, sliders = _attention(ctx, common)
            views = [_available(ctx, "attention", common, button)]
        with gr.Tab("Positional encoding", id="inside-positions"):
            views.append(_available(ctx, "positions", common, _positions(ctx, common)))
        with gr.Tab("Step by step", id="inside-steps"):
            views.append(_available(ctx, "steps", common, _steps(ctx, common)))
        with gr.Tab("Training recipe", id="inside-recipe"):
            views.append(_available(ctx, "recipe", common, _recipe(ctx, common)))
    outputs = [model, *sliders, *(part for view in views for part in view)]
    for picker in (model, source, target):  # "Best for the direction" is another model in another direction
        picker.change(functools.partial(_follow, ctx), [model, source, target, *sliders], outputs,
                      show_progress="hidden", **PICKERS)


def _available(ctx, view: str, common, button) -> Tuple[gr.Button, gr.Markdown]:
    """Under a view's button, the one sentence saying why it cannot show the model (the button then off);
    nothing when it can.  ``_follow`` keeps both in step with the pickers."""
    reason = inside.why_not(ctx, common[1].value, view, common[2].value, common[3].value)
    button.interactive = reason is None
    return button, gr.Markdown(reason or "", visible=reason is not None, elem_id=f"inside-{view}-why-not")


def _follow(ctx, name, source, target, layer, head) -> list:
    """Once the model or a language changes: the picker's line on what "Best for the direction" is, the layer and
    head sliders sized to the model the views show (their values kept within), and each view's button and note.

    Every picker's change runs this, and their answers may land in any order: each one reads the pair the
    language pickers settle on for the model (``fitted_pair``), so that all of them say the same."""
    source, target = fitted_pair(ctx, name, source, target)
    layers, heads = inside.sizes(ctx, name, source, target)
    updates = [gr.update(info=inside.best_note(ctx, name, source, target)),  # "": no line under a named model
               _within(layer, layers), _within(head, heads)]
    for view in inside.VIEWS:
        reason = inside.why_not(ctx, name, view, source, target)
        updates += [gr.update(interactive=reason is None), gr.update(value=reason or "", visible=reason is not None)]
    return updates


def _within(value, maximum: int) -> dict:
    """A slider's update to ``maximum``, its value kept (lowered to the maximum; 1 if it is not a number)."""
    try:
        value = min(max(int(value), 1), maximum)
    except (TypeError, ValueError):
        value = 1
    return gr.update(maximum=maximum, value=value)


def _attention(ctx, common) -> Tuple[gr.Button, List[gr.Slider]]:
    gr.Markdown(ATTENTION)
    with gr.Row():
        kind = gr.Radio([(title, key) for key, title in KIND_TITLES.items()], value="cross",
                        label="Kind of attention", elem_id="inside-kind")
        layers, heads = inside.sizes(ctx, *(c.value for c in common[1:]))
        # one layer at a time: its heads stay legible at phone width (every layer at once was 3-4 px text)
        layer = gr.Slider(1, layers, value=1, step=1, label="Layer", elem_id="inside-layer")
        head = gr.Slider(1, heads, value=1, step=1, label="Head (head view)", elem_id="inside-head")
    forced = gr.Textbox("", label="Teacher-force this translation (empty: the model's own)", lines=1,
                        elem_id="inside-forced")
    button = gr.Button("Show attention", variant="primary", elem_id="inside-attention-button")
    translation = gr.Textbox(label="Target the decoder was fed", interactive=False, elem_id="inside-translation")
    gr.Markdown("#### Model view: every head of the layer (hover a cell for its pieces and weight)")
    model_view = gr.Plot(show_label=False, elem_id="inside-model-view")
    gr.Markdown("#### Head view: one head, with the pieces")
    head_view = gr.Plot(show_label=False, elem_id="inside-head-view")
    with gr.Accordion("Weights and pieces (JSON)", open=False):
        data = gr.JSON(label="attention maps")
    weights = gr.State(None)  # the float32 weights the pictures are redrawn from (the JSON is rounded)
    button.click(bind(ctx, inside.attention_all), [*common, kind, layer, head, forced],
                 [model_view, head_view, data, translation, weights], api_name="attention_all", **decode_event(ctx))
    for control in (kind, layer):
        control.change(handler(inside.attention_redraw), [weights, kind, layer, head],
                       [model_view, head_view], **UI)
    head.change(handler(inside.head_redraw), [weights, kind, layer, head], head_view, **UI)
    return button, [layer, head]


def _positions(ctx, common) -> None:
    gr.Markdown(POSITIONS)
    with gr.Row():
        length = gr.Slider(2, inside.MAX_POSITIONS, value=50, step=1, label="Positions shown",
                           elem_id="inside-length")
        dims = gr.Textbox(value="", label="Dimensions drawn as curves, e.g. 4,10,20 (empty: four spread out)",
                          elem_id="inside-dims")
    button = gr.Button("Show positions", variant="primary", elem_id="inside-positions-button")
    picture = gr.Plot(show_label=False, elem_id="inside-positions-plot")
    with gr.Accordion("Encoding and similarities (JSON)", open=False):
        data = gr.JSON(label="positions")
    button.click(bind(ctx, inside.positions), [*common, length, dims], [picture, data], api_name="positions",
                 **decode_event(ctx))
    return button


def _steps(ctx, common) -> None:
    gr.Markdown(STEPS)
    with gr.Row():
        k = gr.Slider(1, inside.MAX_TOP_K, value=5, step=1, label="Top-k shown", elem_id="inside-k")
        beam_size = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="Beam size", elem_id="inside-beam")
    reference = gr.Textbox("", label="Reference translation (empty: the example's Multi30k reference, if any)",
                           lines=1, elem_id="inside-reference")
    button = gr.Button("Decode step by step", variant="primary", elem_id="inside-steps-button")
    step = gr.Slider(1, ctx.limits.max_output_tokens, value=1, step=1, label="Step", elem_id="inside-step")
    step_plot = gr.Plot(show_label=False, elem_id="inside-step-plot")
    gr.Markdown("#### Teacher forcing against free running")
    no_reference = gr.Markdown(NO_REFERENCE, visible=False, elem_id="inside-forcing-note")
    forcing = gr.Plot(show_label=False, elem_id="inside-forcing-plot")
    with gr.Accordion("Every step (JSON)", open=False):
        data = gr.JSON(label="steps")
    button.click(bind(ctx, inside.steps), [*common, k, beam_size, step, reference], [step_plot, forcing, data],
                 api_name="steps", **decode_event(ctx)).then(
        _after_steps, data, [step, forcing, no_reference], **UI)
    step.change(handler(inside.steps_redraw), [data, step], step_plot, **UI)
    return button


NO_REFERENCE = ("No reference translation for this sentence, so there is nothing to teacher-force: type one in "
                "the box above (the examples come with theirs) and decode again.")


def _after_steps(data):
    """The step slider sized to the steps there are; the forcing picture, or the note saying why there is none."""
    ran = isinstance(data, dict) and "steps" in data
    forced = ran and bool(data.get("forcing"))
    return (gr.update(maximum=max(2, data["steps"])) if ran else gr.update(), gr.update(visible=forced or not ran),
            gr.update(visible=ran and not forced))


def _recipe(ctx, common) -> None:
    gr.Markdown(RECIPE)
    position = gr.Slider(1, ctx.limits.max_output_tokens, value=1, step=1,
                         label="Target piece shown with label smoothing (position in the translation)",
                         elem_id="inside-position")
    button = gr.Button("Show the recipe", variant="primary", elem_id="inside-recipe-button")
    picture = gr.Plot(show_label=False, elem_id="inside-recipe-plot")
    with gr.Accordion("Schedule, curves and smoothed target (JSON)", open=False):
        data = gr.JSON(label="recipe")
    button.click(bind(ctx, inside.recipe), [*common, position], [picture, data], api_name="recipe",
                 **decode_event(ctx))
    return button
