"""Translate: text or a document in, every sentence decoded in one batch, the layout kept, in any direction
the model serves (the source detected by default), with each word coloured by the model's probability."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from transformer_hub.formats import document_formats, extensions

from ...hosting.limits import RequestError
from ...pictures import word_view
from ...serving import service
from ...serving import glossary as page_glossary
from .. import documents, interactive
from ..registry import tab
from ._common import (UI, bind, clear_on_failure, decode_event, examples, examples_of, language_pickers, model_picker,
                      text_input)


@tab("translate", title="Translate", order=10, description="any direction the model serves")
def render(ctx) -> None:
    labels = ", ".join(f.label for f in document_formats())
    gr.Markdown("Type or paste a text: its sentences are translated together, as one batch, and come back in "
                f"the text's layout. Or upload a document below ({labels}).")
    ui = SimpleNamespace()  # the tab's components, filled by the builders below
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            _source(ctx, ui)
            _decoding_options(ctx, ui)
            _glossary_box(ui)
            _document_box(ctx, ui)
        with gr.Column(scale=1):
            _outputs(ui)
    ui.history, ui.picked, ui.shown, ui.at = gr.State([]), gr.State(None), gr.State(None), gr.State(None)
    _translate_events(ctx, ui)
    _word_events(ctx, ui)


def _source(ctx, ui: SimpleNamespace) -> None:
    """The model, the languages, the text and its button, the examples, the strategy and the domain."""
    ui.model = model_picker(ctx, elem_id="translate-model", auto=True)
    ui.source, ui.target = language_pickers(ctx, ui.model, "translate", detect=True)
    ui.text = text_input(ctx, "Source text", value=examples_of(None)[0][0], lines=4, elem_id="translate-input")
    # the button right under the text (on the first screen at 1280x900 and 390x844); the
    # examples and the decoding settings follow it
    ui.button = gr.Button("Translate", variant="primary", elem_id="translate-button")
    domains = service.domain_choices(ctx)  # a model trained with domain tags reads its text with one
    examples(ui.text, ui.source, "translate", [value for _, value in domains])
    ui.strategy = gr.Radio(list(service.STRATEGIES), value="beam", label="Decoding strategy")
    ui.domain = gr.Dropdown(domains or [("Automatic", "auto")], value="auto", label="Domain",
                            visible=bool(domains), elem_id="translate-domain", info=service.DOMAIN_INFO)


def _decoding_options(ctx, ui: SimpleNamespace) -> None:
    """The engine and the strategies' numbers (folded), and the "Best quality" box."""
    with gr.Accordion("Decoding options", open=False):
        ui.engine = gr.Radio(list(service.ENGINE_CHOICES), value=service.TRANSLATE_ENGINE, label="Engine",
                             info="pytorch: this project's decoder; ctranslate2: the same weights, converted; "
                                  "auto: ctranslate2 when installed and able to run the options",
                             elem_id="translate-engine")
        ui.beam_size = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="Beam size (beam)")
        ui.length_penalty = gr.Slider(0.0, 2.0, value=0.6, step=0.1, label="Length penalty α (beam; GNMT, paper: 0.6)")
        ui.temperature = gr.Slider(0.1, 2.0, value=1.0, step=0.05, label="Temperature (sample)")
        ui.top_p = gr.Slider(0.05, 1.0, value=0.9, step=0.05, label="Top-p (sample)")
        ui.max_length = gr.Slider(0, ctx.limits.max_output_tokens, value=0, step=1,
                                  label="Max output tokens (0 = source length + 50, capped)")
    # the reranker's choice among the n-best: slower (docs/benchmarks.md#quality), so the box starts off
    ui.best = gr.Checkbox(False, label="Best quality", elem_id="translate-quality",
                          info="rerank each sentence's n-best with the weights tuned on val (slower; the "
                               "decoding options do not apply); the time it took is shown under the translation")


def _glossary_box(ui: SimpleNamespace) -> None:
    with gr.Accordion("Glossary", open=False, elem_id="translate-glossary-box"):
        ui.glossary = gr.Textbox("", label="Terms the translation must use", lines=3, max_lines=12,
                                 placeholder="bicycle\tFahrrad\nred car\tRotwagen",
                                 info="One entry per line: source term, a tab, target term (TSV), or "
                                      "source,target (CSV). A source term found in a sentence (any case, whole "
                                      "words) puts its target term in that sentence's translation "
                                      "(beam search, PyTorch).", elem_id="translate-glossary")
        ui.glossary_format = gr.Radio(list(page_glossary.ENTRY_FORMATS), value=page_glossary.AUTO,
                                      label="Entries format", info="auto: TSV when a line has a tab, else CSV",
                                      elem_id="translate-glossary-format")


def _document_box(ctx, ui: SimpleNamespace) -> None:
    """The document upload (every registered format's extensions), its button and the translated file."""
    with gr.Accordion(f"Translate a document ({' '.join(extensions())})", open=False, elem_id="translate-document"):
        # the limits in text that wraps: the file box's label is one line, cut at the box's width
        gr.Markdown(f"A document, its structure kept (at most {ctx.limits.max_file_bytes:,} bytes, "
                    f"{ctx.limits.max_file_sentences:,} sentences).", elem_id="translate-file-limits")
        ui.upload = gr.File(label="A document", file_types=list(extensions()), elem_id="translate-file")
        ui.file_button = gr.Button("Translate the document", elem_id="translate-file-button")
        ui.translated = gr.File(label="Translated document", interactive=False, elem_id="translate-file-output")
        ui.file_note = gr.Markdown(elem_id="translate-file-note")
        ui.file_text = gr.Textbox(label="The translated document", lines=6, max_lines=20, interactive=False,
                                  visible=False, buttons=["copy"], elem_id="translate-file-text")


def _outputs(ui: SimpleNamespace) -> None:
    """The translation, its note, the word view with its alternatives and undo, and /continue's hidden fields."""
    ui.output = gr.Textbox(label="Translation", lines=4, interactive=False, elem_id="translate-output",
                           buttons=["copy"])
    # the time is in the note under the translation; this field serves the API (/translate's second output)
    ui.elapsed = gr.Number(label="Time taken (ms)", visible=False, precision=1, elem_id="translate-time")
    ui.note = gr.Markdown(elem_id="translate-engine-note")
    gr.Markdown("**Word by word**: the translation above, each word coloured by the model's probability "
                "(⚠ marks a sentence the model is unsure of). Click a word to see what else it considered; "
                "pick one and the rest of its sentence is translated again to fit.")
    ui.words = gr.HighlightedText(label="How sure the model is", show_legend=True, combine_adjacent=False,
                                  color_map=word_view.COLOURS, interactive=False, elem_id="translate-tokens")
    ui.alternatives = gr.Radio([], label="Alternatives for the clicked word", visible=False,
                               elem_id="translate-alternatives")
    ui.undo = gr.Button("Undo", size="sm", elem_id="translate-undo", interactive=False)
    ui.prefix = gr.Textbox(visible=False, elem_id="translate-prefix")  # /continue's prefix: the kept words
    ui.sentence = gr.Textbox(visible=False, elem_id="translate-sentence")  # /continue's text: that sentence
    # /continue's outputs (one sentence), spliced into the whole translation by the next step
    ui.part = (gr.Textbox(visible=False), gr.HighlightedText(visible=False, color_map=word_view.COLOURS),
               gr.JSON(visible=False))
    ui.tokens_api = gr.Button(visible=False)  # /tokens for API callers: the page gets its words from /translate
    with gr.Accordion("Words, probabilities and alternatives (JSON)", open=False):
        ui.data = gr.JSON(label="tokens", elem_id="translate-tokens-json")


def _translate_events(ctx, ui: SimpleNamespace) -> None:
    """/translate (the text), /translate_file (the document) and /tokens (the word view for API callers)."""
    inputs = [ui.text, ui.model, ui.strategy, ui.beam_size, ui.length_penalty, ui.temperature, ui.top_p,
              ui.max_length, ui.source, ui.target, ui.engine]  # the document's too (after its file), and both
    # take the "Best quality" box; the glossary rides in the same /translate call (documents take neither)
    translated_text = ui.button.click(bind(ctx, service.translate_view),
                                      inputs + [ui.best, ui.glossary, ui.glossary_format, ui.domain],
                                      [ui.output, ui.elapsed, ui.note, ui.shown], api_name="translate",
                                      **decode_event(ctx))
    translated_text.success(  # only on success: after a failure ``shown`` still holds the old translation
        lambda d: (_coloured(d), d, [], gr.update(interactive=False)) if d else (gr.update(),) * 4,
        ui.shown, [ui.words, ui.data, ui.history, ui.undo], **UI).then(None, None, None, js=SHOW_RESULT, **UI)
    clear_on_failure(translated_text, [ui.output, ui.words, ui.data, ui.shown], ui.note)
    ui.tokens_api.click(bind(ctx, interactive.tokens), [ui.text, ui.model, ui.source, ui.target],
                        [ui.words, ui.data], api_name="tokens", **decode_event(ctx))
    translated_file = ui.file_button.click(bind(ctx, _document), [ui.upload] + inputs[1:] + [ui.best, ui.domain],
                                           [ui.translated, ui.file_note, ui.file_text], api_name="translate_file",
                                           **decode_event(ctx))
    clear_on_failure(translated_file, [ui.translated, ui.file_text], ui.file_note)  # not the last document's note


def _word_events(ctx, ui: SimpleNamespace) -> None:
    """A click on a word: its alternatives; a pick: /continue from it, spliced in; undo."""
    choose = bind(ctx, _alternatives)

    def clicked(view_data, evt: gr.SelectData):  # Gradio hands the click to a parameter annotated SelectData
        return choose(view_data, evt)

    ui.words.select(clicked, ui.data, [ui.alternatives, ui.picked, ui.words], api_name="word_choices",
                    api_visibility="undocumented", **decode_event(ctx))
    ui.alternatives.input(bind(ctx, _prefix), [ui.data, ui.picked, ui.alternatives, ui.history],
                          [ui.prefix, ui.sentence, ui.at, ui.history, ui.undo], **UI).then(
        bind(ctx, interactive.continue_from), [ui.sentence, ui.prefix, ui.model, ui.source, ui.target],
        list(ui.part), api_name="continue", **decode_event(ctx)).then(
        _splice, [ui.data, ui.at, ui.part[2]], [ui.output, ui.words, ui.data], **UI).then(
        lambda: gr.update(visible=False), None, ui.alternatives, **UI)
    ui.undo.click(_undo, ui.history, [ui.words, ui.data, ui.output, ui.history, ui.undo, ui.alternatives], **UI)


# on a phone the translation lies under the whole form (two screens down): brought into view once it is there
SHOW_RESULT = """() => { const out = document.querySelector('#translate-output');
  if (out && out.getBoundingClientRect().top > window.innerHeight - 80) out.scrollIntoView({block: 'start'}); }"""
DOCUMENT_SHOWN = 100_000  # characters of a translated document shown on the page (all of it is in the file)


def _document(ctx, *args):
    """A document translated: (the file to download, the note, its text shown on the page)."""
    path, note = documents.translate_document(ctx, *args)
    text = Path(path).read_text(encoding="utf-8") if Path(path).suffix == ".txt" else ""
    if len(text) > DOCUMENT_SHOWN:
        text = text[:DOCUMENT_SHOWN] + "\n…"
    return path, note, gr.update(value=text, visible=bool(text))


def _coloured(data, clicked=None):
    """The word view's value with a legend of only the labels it shows."""
    return gr.HighlightedText(value=word_view.highlighted(data, clicked), color_map=word_view.colours(data, clicked))


def _alternatives(ctx, data, evt: gr.SelectData):
    """The clicked word highlighted and the whole words the model would put in its place as radio choices
    ("word  p %", the word), the current one marked and chosen."""
    index = None if not data or evt is None or evt.index is None else evt.index
    index = index[0] if isinstance(index, (list, tuple)) else index
    try:
        word = word_view.entry_word(data, int(index)) if index is not None else None
    except (IndexError, KeyError, TypeError, ValueError):  # a click on words a newer translation replaced
        word = None
    if word is None or not data["tokens"][data["words"][word]["tokens"][0]]["alternatives"]:
        return gr.update(visible=False), None, gr.update()
    choices = interactive.word_choices(ctx, data, word)
    options = [(f"{c.text}  {100 * c.probability:.1f} %" + ("  (current)" if c.current else ""), c.text)
               for c in choices]
    current = next((c.text for c in choices if c.current), None)
    return (gr.update(choices=options, value=current, visible=True,
                      label=f"Words the model would put in place of “{data['words'][word]['text']}”"),
            word, _coloured(data, word))


def _prefix(ctx, data, word, choice, history):
    """The clicked word's sentence and the prefix to continue it from; the current view pushed on the undo history.

    The history keeps the view's data only: the coloured words are rebuilt from it, because the
    HighlightedText's own value comes back from the browser in another shape than the one it takes.
    """
    if data is None or word is None or not isinstance(choice, str) or not choice.strip():
        raise RequestError("Click a word of the translation first, then pick one of its alternatives.")
    history = list(history or []) + [data]
    sentence, source, prefix = interactive.prefix_for(data, int(word), choice)
    return prefix, source, sentence, history, gr.update(interactive=True)


def _splice(data, sentence, part):
    """The continued sentence put back into the whole translation: (text, coloured words, data)."""
    if not data or part is None:
        return gr.update(), gr.update(), gr.update()
    whole = interactive.splice(data, sentence, part)
    return whole["translation"], _coloured(whole), whole


def _undo(history):
    """Back to the translation before the last chosen alternative."""
    if not history:
        return gr.update(), gr.update(), gr.update(), [], gr.update(interactive=False), gr.update(visible=False)
    history = list(history)
    data = history.pop()
    return (_coloured(data), data, data["translation"], history, gr.update(interactive=bool(history)),
            gr.update(visible=False))
