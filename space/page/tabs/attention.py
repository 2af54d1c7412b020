"""Attention: a heatmap of the decoder's cross-attention, per layer and head or averaged."""
from __future__ import annotations

import functools

import gradio as gr

from ...serving import service
from ..registry import tab
from ._common import bind, clear_on_failure, decode_event, sentence_inputs


@tab("attention", title="Attention", order=40, description="what the decoder looks at")
def render(ctx) -> None:
    gr.Markdown("Each row is an output piece, each column a source piece; a cell is how much the decoder's "
                "encoder-decoder attention looked at that source piece while producing that output piece. "
                "Hover a cell for its words and weight; drag to zoom, double-click to zoom out.")
    layers, heads = service.layer_head_choices(ctx, ctx.default_model)
    with gr.Row():
        with gr.Column():
            model, source, target, text = sentence_inputs(ctx, "attention")
        with gr.Column():
            with gr.Row():
                strategy = gr.Radio(["greedy", "beam"], value="greedy", label="Decoding")
                beam_size = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="Beam size")
            with gr.Row():
                # custom values pass the component's own check: the handler range-checks them per model
                layer = gr.Dropdown(layers, value=0, label="Decoder layer", allow_custom_value=True,
                                    info="average: the mean over all layers", elem_id="attention-layer")
                head = gr.Dropdown(heads, value=0, label="Head", allow_custom_value=True,
                                   info="average: the mean over all heads", elem_id="attention-head")
    button = gr.Button("Show attention", variant="primary", elem_id="attention-button")
    translation = gr.Textbox(label="Translation", interactive=False, elem_id="attention-translation")
    plot = gr.Plot(label="Cross-attention", elem_id="attention-plot")
    with gr.Accordion("Matrix and pieces (JSON)", open=False):
        data = gr.JSON(label="attention matrix")
    shown = button.click(bind(ctx, service.attention), [text, model, strategy, beam_size, layer, head, source, target],
                         [plot, data, translation], api_name="attention", **decode_event(ctx))
    clear_on_failure(shown, [plot, data, translation])
    model.change(functools.partial(_choices, ctx), model, [layer, head], api_name="attention_choices")


def _choices(ctx, model):
    layers, heads = service.layer_head_choices(ctx, model)
    return gr.update(choices=layers, value=0), gr.update(choices=heads, value=0)
