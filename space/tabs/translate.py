"""Translate: several lines in, one batch decoded, in any direction the model serves, with the strategy's knobs."""
from __future__ import annotations

import gradio as gr

from .. import service
from ..registry import tab
from ._common import bind, decode_event, examples, examples_of, language_pickers, model_picker, text_input


@tab("translate", title="Translate", order=10, description="any direction the model serves")
def render(ctx) -> None:
    gr.Markdown("Type sentences, **one per line**: all lines are translated together, as one batch.")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            model = model_picker(ctx, elem_id="translate-model")
            source, target = language_pickers(ctx, model, "translate")
            text = text_input(ctx, "Source text", value=examples_of(source.value)[0][0], lines=4,
                              elem_id="translate-input")
            strategy = gr.Radio(list(service.STRATEGIES), value="beam", label="Decoding strategy")
            with gr.Accordion("Decoding options", open=False):
                engine = gr.Radio(["pytorch", "ctranslate2"], value=service.DEFAULT_ENGINE, label="Engine",
                                  info="pytorch: this project's decoder; ctranslate2: the same weights, converted",
                                  elem_id="translate-engine")
                beam_size = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="Beam size (beam)")
                length_penalty = gr.Slider(0.0, 2.0, value=0.6, step=0.1,
                                           label="Length penalty α (beam; GNMT, paper: 0.6)")
                temperature = gr.Slider(0.1, 2.0, value=1.0, step=0.05, label="Temperature (sample)")
                top_p = gr.Slider(0.05, 1.0, value=0.9, step=0.05, label="Top-p (sample)")
                max_length = gr.Slider(0, ctx.limits.max_output_tokens, value=0, step=1,
                                       label="Max output tokens (0 = source length + 50, capped)")
            button = gr.Button("Translate", variant="primary", elem_id="translate-button")
        with gr.Column(scale=1):
            output = gr.Textbox(label="Translation", lines=4, interactive=False, elem_id="translate-output",
                                buttons=["copy"])
            elapsed = gr.Number(label="Time taken (ms)", interactive=False, precision=1, elem_id="translate-time")
            note = gr.Markdown(elem_id="translate-engine-note")
    examples(text, source, "translate")
    inputs = [text, model, strategy, beam_size, length_penalty, temperature, top_p, max_length, source, target,
              engine]
    button.click(bind(ctx, service.translate), inputs, [output, elapsed, note], api_name="translate",
                 **decode_event(ctx))
