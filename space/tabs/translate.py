"""Translate: several lines in, one batch decoded, with the strategy and its knobs."""
from __future__ import annotations

import gradio as gr

from .. import service
from ..plugins import tab
from ._common import bind, decode_event, model_picker, text_input


@tab("translate", title="Translate", order=10, description="English in, German out")
def render(ctx) -> None:
    gr.Markdown("Type English sentences, **one per line**: all lines are translated together, as one batch.")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            text = text_input(ctx, "English", value=ctx.examples[0], lines=4, elem_id="translate-input")
            with gr.Row():
                model = model_picker(ctx)
                strategy = gr.Radio(list(service.STRATEGIES), value="beam", label="Decoding strategy")
            with gr.Accordion("Decoding options", open=False):
                beam_size = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="Beam size (beam)")
                length_penalty = gr.Slider(0.0, 2.0, value=0.6, step=0.1,
                                           label="Length penalty α (beam; GNMT, paper: 0.6)")
                temperature = gr.Slider(0.1, 2.0, value=1.0, step=0.05, label="Temperature (sample)")
                top_p = gr.Slider(0.05, 1.0, value=0.9, step=0.05, label="Top-p (sample)")
                max_length = gr.Slider(0, ctx.limits.max_output_tokens, value=0, step=1,
                                       label="Max output tokens (0 = source length + 50, capped)")
            button = gr.Button("Translate", variant="primary", elem_id="translate-button")
        with gr.Column(scale=1):
            output = gr.Textbox(label="German", lines=4, interactive=False, elem_id="translate-output",
                                buttons=["copy"])
            elapsed = gr.Number(label="Time taken (ms)", interactive=False, precision=1, elem_id="translate-time")
    gr.Examples(examples=[[e] for e in ctx.examples], inputs=[text], label="Multi30k test sentences (click one)")
    inputs = [text, model, strategy, beam_size, length_penalty, temperature, top_p, max_length]
    button.click(bind(ctx, service.translate), inputs, [output, elapsed], api_name="translate", **decode_event(ctx))
