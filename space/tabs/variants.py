"""Architecture variants: the models with their configuration and measured numbers, side by side, per engine."""
from __future__ import annotations

import gradio as gr

from .. import describe, service
from ..registry import tab
from ._common import bind, decode_event, examples, examples_of, language_pickers, text_input

CURVES_FILE = "validation_curves.png"


@tab("variants", title="Architecture variants", order=30, description="compare architectures and engines")
def render(ctx) -> None:
    names = ctx.model_names
    gr.Markdown("The available checkpoints and their configuration. BLEU (a test split, cased), training time "
                "and speed come from the variant study's `space/models/variants/results.json`, and for other "
                "models from their model card (each trained on its own budget).")
    table = gr.Dataframe(value=describe.describe_models(ctx), headers=describe.MODEL_COLUMNS,
                         label="Available models", interactive=False, wrap=True, elem_id="variants-table")
    refresh = gr.Button("Refresh table", size="sm")
    refresh.click(bind(ctx, describe.describe_models), None, table, api_name="models")
    curves = ctx.store.models_dir / "variants" / CURVES_FILE
    if curves.is_file():  # written by scripts/variant_study.py beside results.json
        # the title as text above the picture: the image's own label would sit over the plot's title
        gr.Markdown("#### Validation curves of the variant study (same budget, same data)")
        gr.Image(str(curves), show_label=False, interactive=False, elem_id="variants-curves")
    with gr.Row():
        with gr.Column():
            models = gr.CheckboxGroup(names, value=names[:ctx.limits.max_models], label="Models to compare",
                                      elem_id="variants-models")
            source, target = language_pickers(ctx, None, "variants")  # several models: every language
            text = text_input(ctx, "Source text", value=examples_of(source.value)[1][0], lines=2,
                              elem_id="variants-input")
            with gr.Row():
                strategy = gr.Radio(["greedy", "beam"], value="beam", label="Decoding")
                beam_size = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="Beam size")
            engines = gr.CheckboxGroup(["pytorch", "ctranslate2"], value=[service.DEFAULT_ENGINE],
                                       label="Engines (pick both to compare them on the same input)",
                                       elem_id="variants-engines")
            button = gr.Button("Translate with each", variant="primary", elem_id="variants-button")
        with gr.Column():
            results = gr.Dataframe(headers=["model", "engine", "translation", "ms", "normalised score", "parameters"],
                                   datatype=["str", "str", "str", "number", "number", "str"], wrap=True,
                                   column_widths=["20%", "11%", "38%", "9%", "11%", "11%"],
                                   label="Side by side", interactive=False, elem_id="variants-results")
    examples(text, source, "variants")
    button.click(bind(ctx, service.variants_translate), [text, models, strategy, beam_size, source, target, engines],
                 results, api_name="variants", **decode_event(ctx))
    with gr.Row():
        drawn = gr.Dropdown(names, value=ctx.default_model, label="Architecture to draw", scale=1)
    diagram = gr.Plot(label="Architecture", elem_id="variants-diagram",
                      value=(service.architecture(ctx, ctx.default_model) if ctx.default_model else None))
    drawn.change(bind(ctx, service.architecture), drawn, diagram, api_name="architecture")
