"""Architecture variants: the models with their configuration and measured numbers, side by side, per engine."""
from __future__ import annotations

import gradio as gr

from ...serving import describe, service
from .. import comparisons
from ..registry import tab
from ._common import UI, bind, decode_event, examples, examples_of, language_pickers, text_input

CURVES_FILE = "validation_curves.png"
ANSWER = ["model", "engine", "translation", "ms", "normalised score", "parameters"]
SHOWN = ["model", "engine", "translation", "time (ms)", "score (normalised)"]


def _rows(value):
    """A Dataframe's value as rows, whichever shape Gradio hands it in (a dict with data, a DataFrame, rows)."""
    if value is None:
        return []
    if isinstance(value, dict):
        return value.get("data") or []
    if hasattr(value, "values") and hasattr(value, "columns"):
        return value.values.tolist()
    return list(value)


def _shown(answer):
    """/variants' rows split: those that ran, as a table, and one line per model and engine that could not."""
    rows = _rows(answer)
    ran = [row[:5] for row in rows if row[3] not in (None, "") and row[3] == row[3]]  # NaN != NaN: not run
    failed = [f"- **{row[0]}** with {row[1]}: {str(row[2]).strip('()')}" for row in rows if row[:5] not in ran]
    note = ("**Could not run:**\n" + "\n".join(failed)) if failed else ""
    return ran, note


@tab("variants", title="Architecture variants", order=30, description="compare architectures and engines")
def render(ctx) -> None:
    names = ctx.model_names
    gr.Markdown("The available checkpoints and their configuration. BLEU (a test split, cased), training time "
                "and speed come from the variant study's `space/models/variants/results.json`, and for other "
                "models from their model card (each trained on its own budget).")
    full = describe.describe_models(ctx)
    table = gr.Dataframe(value=describe.page_rows(full), headers=describe.PAGE_COLUMNS,
                         label="Available models", interactive=False, wrap=True, elem_id="variants-table",
                         column_widths=["15%", "8%", "30%", "9%", "6%", "6%", "7%", "9%", "10%"], max_height=2000)
    every_column = gr.Dataframe(value=full, headers=describe.MODEL_COLUMNS, visible=False)  # /models: all of it
    refresh = gr.Button("Refresh table", size="sm")
    refresh.click(bind(ctx, describe.describe_models), None, every_column, api_name="models").then(
        lambda rows: describe.page_rows(_rows(rows)), every_column, table, **UI)
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
            examples(text, source, "variants")
            with gr.Row():
                strategy = gr.Radio(["greedy", "beam"], value="beam", label="Decoding")
                beam_size = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="Beam size")
            engines = gr.CheckboxGroup(list(service.ENGINE_NAMES), value=[service.DEFAULT_ENGINE],
                                       label="Engines (pick both to compare them on the same input)",
                                       elem_id="variants-engines")
            button = gr.Button("Translate with each", variant="primary", elem_id="variants-button")
        with gr.Column():
            # /variants' answer, every row (a model that cannot run says why in its translation cell) ...
            answer = gr.Dataframe(headers=ANSWER, visible=False)
            # ... shown as the translations in a table and what could not run in a note under it
            results = gr.Dataframe(headers=SHOWN, datatype=["str", "str", "str", "number", "number"], wrap=True,
                                   column_widths=["24%", "14%", "38%", "10%", "14%"], max_height=2000,
                                   label="Side by side", interactive=False, elem_id="variants-results")
            failed = gr.Markdown(elem_id="variants-failed")
    button.click(bind(ctx, comparisons.variants_translate), [text, models, strategy, beam_size, source, target, engines],
                 answer, api_name="variants", **decode_event(ctx)).then(_shown, answer, [results, failed], **UI)
    with gr.Row():
        drawn = gr.Dropdown(names, value=ctx.default_model, label="Architecture to draw", scale=1)
    diagram = gr.Plot(label="Architecture", elem_id="variants-diagram",
                      value=(comparisons.architecture(ctx, ctx.default_model) if ctx.default_model else None))
    drawn.change(bind(ctx, comparisons.architecture), drawn, diagram, api_name="architecture")
