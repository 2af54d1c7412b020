"""Architecture variants: the available models with their configuration and measured numbers, side by side."""
from __future__ import annotations

import gradio as gr

from .. import service
from ..plugins import tab
from ._common import bind, decode_event, text_input

CURVES_FILE = "validation_curves.png"


@tab("variants", title="Architecture variants", order=30, description="compare architectures")
def render(ctx) -> None:
    names = ctx.model_names
    gr.Markdown("The shipped checkpoints and their configuration. BLEU (test_2016_flickr, cased), training time "
                "and speed come from the variant study's `space/models/variants/results.json`, and for other "
                "models from their model card (the shipped `en-de` was trained longer, on its own budget).")
    table = gr.Dataframe(value=service.describe_models(ctx), headers=service.MODEL_COLUMNS,
                         label="Available models", interactive=False, wrap=True, elem_id="variants-table")
    refresh = gr.Button("Refresh table", size="sm")
    curves = ctx.store.models_dir / "variants" / CURVES_FILE
    if curves.is_file():  # written by scripts/variant_study.py beside results.json
        gr.Image(str(curves), label="Validation curves of the variant study (same budget, same data)",
                 interactive=False, elem_id="variants-curves")
    refresh.click(bind(ctx, service.describe_models), None, table, api_name="models")
    with gr.Row():
        with gr.Column():
            models = gr.CheckboxGroup(names, value=names[:ctx.limits.max_models], label="Models to compare",
                                      elem_id="variants-models")
            text = text_input(ctx, "English", value=ctx.examples[1], lines=2, elem_id="variants-input")
            with gr.Row():
                strategy = gr.Radio(["greedy", "beam"], value="beam", label="Decoding")
                beam_size = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="Beam size")
            button = gr.Button("Translate with each", variant="primary", elem_id="variants-button")
        with gr.Column():
            results = gr.Dataframe(headers=["model", "translation", "ms", "normalised score", "parameters"],
                                   datatype=["str", "str", "number", "number", "str"], wrap=True,
                                   column_widths=["22%", "46%", "10%", "11%", "11%"],
                                   label="Side by side", interactive=False, elem_id="variants-results")
    button.click(bind(ctx, service.variants_translate), [text, models, strategy, beam_size], results,
                 api_name="variants", **decode_event(ctx))
    with gr.Row():
        picked = gr.Dropdown(names, value=ctx.default_model, label="Architecture to draw", scale=1)
    diagram = gr.Plot(label="Architecture", elem_id="variants-diagram",
                      value=(service.architecture(ctx, ctx.default_model) if ctx.default_model else None))
    picked.change(bind(ctx, service.architecture), picked, diagram, api_name="architecture")
