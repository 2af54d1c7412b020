"""Translate: several lines in, one batch decoded, in any direction the model serves, with the strategy's knobs."""
from __future__ import annotations

import gradio as gr

from .. import interactive, service
from ..registry import tab
from ._common import UI, bind, decode_event, examples, examples_of, language_pickers, model_picker, text_input


@tab("translate", title="Translate", order=10, description="any direction the model serves")
def render(ctx) -> None:
    gr.Markdown("Type sentences, **one per line**: all lines are translated together, as one batch.")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            model = model_picker(ctx, elem_id="translate-model", auto=True)
            source, target = language_pickers(ctx, model, "translate")
            text = text_input(ctx, "Source text", value=examples_of(source.value)[0][0], lines=4,
                              elem_id="translate-input")
            strategy = gr.Radio(list(service.STRATEGIES), value="beam", label="Decoding strategy")
            with gr.Accordion("Decoding options", open=False):
                engine = gr.Radio(["auto", "pytorch", "ctranslate2"], value=service.TRANSLATE_ENGINE, label="Engine",
                                  info="pytorch: this project's decoder; ctranslate2: the same weights, converted; "
                                       "auto: ctranslate2 when installed and able to run the options",
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
            gr.Markdown("**Word by word** (first line, greedy): colour = the model's probability. Click a word "
                        "to see what else it considered; pick one and the rest is translated again to fit.")
            words = gr.HighlightedText(label="How sure the model is", show_legend=True, combine_adjacent=False,
                                       color_map=interactive.COLOURS, interactive=False, elem_id="translate-tokens")
            alternatives = gr.Radio([], label="Alternatives for the clicked word", visible=False,
                                    elem_id="translate-alternatives")
            undo = gr.Button("Undo", size="sm", elem_id="translate-undo", interactive=False)
            prefix = gr.Textbox(visible=False, elem_id="translate-prefix")  # /continue's prefix: the kept words
            with gr.Accordion("Words, probabilities and alternatives (JSON)", open=False):
                data = gr.JSON(label="tokens", elem_id="translate-tokens-json")
    examples(text, source, "translate")
    inputs = [text, model, strategy, beam_size, length_penalty, temperature, top_p, max_length, source, target,
              engine]
    history, picked = gr.State([]), gr.State(None)
    button.click(bind(ctx, service.translate), inputs, [output, elapsed, note], api_name="translate",
                 **decode_event(ctx)).then(
        bind(ctx, interactive.tokens), [text, model, source, target], [words, data], api_name="tokens",
        **decode_event(ctx)).then(lambda: ([], gr.update(interactive=False)), None, [history, undo], **UI)
    words.select(_alternatives, data, [alternatives, picked], **UI)
    alternatives.input(bind(ctx, _prefix), [data, picked, alternatives, history], [prefix, history, undo],
                       **UI).then(
        bind(ctx, interactive.continue_from), [text, prefix, model, source, target], [output, words, data],
        api_name="continue", **decode_event(ctx)).then(lambda: gr.update(visible=False), None, alternatives, **UI)
    undo.click(_undo, history, [words, data, output, history, undo, alternatives], **UI)


def _alternatives(data, evt: gr.SelectData):
    """The clicked word's alternatives as radio choices ("piece  (p %)", token id)."""
    if not data or evt.index is None:
        return gr.update(visible=False), None
    index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    try:
        entry = data["tokens"][int(index)]
    except (IndexError, KeyError, TypeError, ValueError):  # a click on words a newer translation replaced
        return gr.update(visible=False), None
    options = [(f"{a['text'].strip() or a['piece']}  ({100 * a['probability']:.1f} %)", str(a["token"]))
               for a in entry["alternatives"]]
    return gr.update(choices=options, value=None, visible=True,
                     label=f"Alternatives for “{entry['text'].strip()}” (word {int(index) + 1})"), int(index)


def _prefix(ctx, data, index, token, history):
    """The prefix to continue from, and the current output pushed on the undo history.

    The history keeps the ``tokens`` data only: the coloured words are rebuilt from it, because the
    HighlightedText's own value comes back from the browser in another shape than the one it takes.
    """
    if data is None or index is None or token in (None, ""):
        raise gr.Error("Click a word of the translation first, then pick one of its alternatives.")
    history = list(history or []) + [data]
    return interactive.prefix_for(ctx, data, index, int(token)), history, gr.update(interactive=True)


def _undo(history):
    """Back to the translation before the last chosen alternative."""
    if not history:
        return gr.update(), gr.update(), gr.update(), [], gr.update(interactive=False), gr.update(visible=False)
    history = list(history)
    data = history.pop()
    return (interactive.highlighted(data), data, data["translation"], history, gr.update(interactive=bool(history)),
            gr.update(visible=False))
