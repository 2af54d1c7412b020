"""The Space's tabs are plugins: built-ins register themselves; outside packages arrive by entry point."""
from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

gr = pytest.importorskip("gradio")

from helpers.tolerances import f64
from helpers.space_fixtures import free_port
from space import TAB_ENTRY_POINT_GROUP, TABS, build_demo, ordered_tabs, tab
from space.hosting.limits import Limits

BUILT_IN = ["translate", "compare", "variants", "attention"]


def tab_labels(demo) -> list:
    return [block.label for block in demo.blocks.values() if isinstance(block, gr.Tab)]


def markdown_texts(demo) -> list:
    return [block.value or "" for block in demo.blocks.values() if isinstance(block, gr.Markdown)]


@pytest.fixture
def no_models(tmp_path, monkeypatch):
    monkeypatch.delenv("MODEL_IDS", raising=False)
    (tmp_path / "models").mkdir()
    return tmp_path / "models"


def test_built_in_tabs_in_order_translate_first(no_models):
    names = [t.name for t in ordered_tabs()]
    assert [n for n in names if n in BUILT_IN] == BUILT_IN
    demo = build_demo(models_dir=no_models)
    labels = tab_labels(demo)
    assert labels[:4] == ["Translate", "Beam vs greedy", "Architecture variants", "Attention"]
    tabs = next(b for b in demo.blocks.values() if isinstance(b, gr.Tabs))
    assert tabs.selected == "translate"  # open on load


def test_every_event_has_an_api_name(no_models):
    demo = build_demo(models_dir=no_models)
    named = {fn.api_name for fn in demo.fns.values() if fn.api_name}
    assert {"translate", "compare", "variants", "models", "architecture", "attention", "playground_train",
            "playground_stop", "playground_predict"} <= named
    for fn in demo.fns.values():  # every public handler is reachable by name; page-only helpers are private
        assert fn.api_visibility == "private" or fn.api_name in named, fn.name
    # page-only helpers; the session-end cleanup (``unload``: a visitor's training stops) is not a click
    private = [fn for fn in demo.fns.values() if fn.api_visibility == "private"
               and fn.targets != [(None, "unload")]]
    assert private and all(not fn.queue for fn in private)  # pickers, swap, examples: instant, never queued


def test_duplicate_tab_name_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        tab("translate", title="Another translate")(lambda ctx: None)


def test_unknown_tab_lists_the_known_ones():
    with pytest.raises(ValueError, match="translate"):
        TABS.get("no-such-tab")


def test_directly_registered_tab_is_rendered(no_models):
    @tab("direct-test", title="Direct test tab", order=35)
    def render(ctx):
        gr.Markdown("rendered by a directly registered tab")

    try:
        demo = build_demo(models_dir=no_models)
        labels = tab_labels(demo)
        assert labels.index("Direct test tab") == labels.index("Architecture variants") + 1
        assert "rendered by a directly registered tab" in markdown_texts(demo)
    finally:
        TABS.unregister("direct-test")


PLUGIN = '''
import gradio as gr
from space import tab


@tab("throwaway", title="Throwaway plugin", order=45, description="a tab from another package")
def render(ctx):
    gr.Markdown("hello from an installed plugin package")
    box = gr.Textbox(label="in")
    out = gr.Textbox(label="out")
    gr.Button("Shout").click(lambda s: s.upper() + "!", box, out, api_name="throwaway_shout")
'''


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """A fake installed distribution: a module plus a dist-info whose entry_points.txt names it."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "throwaway_space_tab.py").write_text(textwrap.dedent(PLUGIN))
    dist = site / "throwaway_space_tab-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: throwaway-space-tab\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{TAB_ENTRY_POINT_GROUP}]\nthrowaway = throwaway_space_tab\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield "throwaway"
    TABS.unregister("throwaway")
    sys.modules.pop("throwaway_space_tab", None)
    from transformer_hub import registry

    registry._loaded_plugins.difference_update({k for k in registry._loaded_plugins if "throwaway" in k})


def test_entry_point_plugin_tab_is_discovered_and_rendered(installed_plugin, no_models):
    assert installed_plugin not in TABS._items
    demo = build_demo(models_dir=no_models)
    assert installed_plugin in TABS
    labels = tab_labels(demo)
    assert labels.index("Throwaway plugin") == labels.index("Attention") + 1  # order 45: after 40, before 50
    assert labels.index("Throwaway plugin") < labels.index("Inside the Transformer")
    assert "hello from an installed plugin package" in markdown_texts(demo)
    assert any(fn.api_name == "throwaway_shout" for fn in demo.fns.values())


def test_entry_point_plugin_tab_works_in_the_running_app(installed_plugin, no_models):
    gradio_client = pytest.importorskip("gradio_client")

    demo = build_demo(models_dir=no_models)
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        client = gradio_client.Client(demo.local_url, verbose=False)
        assert client.predict("hello", api_name="/throwaway_shout") == "HELLO!"
        with pytest.raises(Exception, match="No model is available"):  # no model: a message, not a crash
            client.predict(text="A dog.", model=None, api_name="/translate")
    finally:
        demo.close()


def test_broken_plugin_does_not_break_the_space(tmp_path, monkeypatch, no_models, caplog):
    site = tmp_path / "broken"
    dist = site / "broken_tab-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-tab\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{TAB_ENTRY_POINT_GROUP}]\nbroken = no_such_module_anywhere\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    demo = build_demo(models_dir=no_models)
    assert tab_labels(demo)[:4] == ["Translate", "Beam vs greedy", "Architecture variants", "Attention"]
    assert "no_such_module_anywhere" in caplog.text or "broken" in caplog.text


def test_plugins_can_be_switched_off(installed_plugin, no_models, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_HUB_DISABLE_PLUGINS", "1")
    demo = build_demo(models_dir=no_models, limits=Limits())
    assert "Throwaway plugin" not in tab_labels(demo)


def test_variants_tab_shows_the_study_curves_when_present(no_models):
    assert not [b for b in build_demo(models_dir=no_models).blocks.values() if isinstance(b, gr.Image)]
    (no_models / "variants").mkdir()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 2))
    fig.savefig(no_models / "variants" / "validation_curves.png")
    plt.close(fig)
    demo = build_demo(models_dir=no_models)
    images = [b for b in demo.blocks.values() if isinstance(b, gr.Image) and b.elem_id == "variants-curves"]
    assert len(images) == 1 and images[0].value is not None
    assert not images[0].show_label  # its label would cover the plot's own title: the title is text above it
    assert any("Validation curves" in text for text in markdown_texts(demo))


def test_the_page_names_no_single_direction(no_models):
    texts = " ".join(markdown_texts(build_demo(models_dir=no_models)))
    assert "En → De" not in texts and "English in" not in texts and "English, German, French, Czech" in texts


def _view(words, probabilities, unsure=False):
    """The word view's data for one sentence whose pieces are whole words."""
    text = " ".join(words)
    return {"translation": text, "separators": ["", ""], "threshold": 0.58,
            "sentences": [{"source": "x", "translation": text, "confidence": 0.5, "unsure": unsure}],
            "tokens": [{"sentence": 0, "text": " " + w, "piece": "\u2581" + w, "probability": p, "alternatives": []}
                       for w, p in zip(words, probabilities)],
            "words": [{"sentence": 0, "text": w, "probability": p, "tokens": [i]}
                      for i, (w, p) in enumerate(zip(words, probabilities))]}


def test_undo_restores_the_coloured_words_from_the_kept_data():
    """Undo rebuilds the HighlightedText from the kept view data: the component's own value comes back
    from the browser as a list of dicts, which it does not accept as output (the undo used to fail on it)."""
    from space.pictures import word_view
    from space.page.tabs import translate

    first, second = _view(["Ein", "Hund."], [0.95, 0.3]), _view(["Zwei", "Hunde."], [0.1, 0.7], unsure=True)
    words, restored, text, history, undo, alternatives = translate._undo([first, second])
    assert restored is second and text == "Zwei Hunde." and history == [first]
    shown = [("Zwei", "doubtful (< 20%)"), (" Hunde.", "likely (50-90%)"), (" ⚠", word_view.UNSURE)]
    assert [(e["token"], e["class_or_confidence"]) for e in words.value] == shown
    assert set(words.color_map) == {"doubtful (< 20%)", "likely (50-90%)", word_view.UNSURE}  # the legend: what is shown
    assert undo["interactive"] is True and alternatives["visible"] is False
    *_, history, undo, _ = translate._undo(history)
    assert history == [] and undo["interactive"] is False
    assert translate._undo([])[3] == []  # nothing to undo: nothing changes


def test_word_view_colours_whole_words_of_every_sentence(tiny_tokenizer):
    """Pieces become words (a word's probability is the product of its pieces'), every sentence is shown in
    its layout, and a sentence below the confidence threshold is marked."""
    import math

    from space.pictures import word_view
    from transformer_hub.decoding import CONFIDENCE_THRESHOLD, Hypothesis, TranslationResult
    from transformer_hub.text import split_sentences

    layout = split_sentences("A dog runs. A man sits.\n\nTwo children play.", "en")
    outputs = ["Ein Hund rennt.", "Ein Mann sitzt.", "Zwei Kinder spielen."]
    probability = [0.9, 0.95, 0.3]  # per piece; the third sentence is unsure
    results = []
    for text, p in zip(outputs, probability):
        ids = tiny_tokenizer.encode(text, side="target")
        logprobs = [math.log(p)] * (len(ids) + 1)  # + eos
        results.append(TranslationResult(source=text, hypotheses=[Hypothesis(
            text=text, tokens=ids, token_logprobs=logprobs, score=sum(logprobs), normalized_score=0.0)]))
    from transformer_hub.text.pipeline import joined

    whole = joined("A dog runs. A man sits.\n\nTwo children play.", results, layout, 0.6)  # as the pipeline joins
    whole.layout = layout
    data = word_view.build(whole, tiny_tokenizer, set(), model="m")
    assert data["translation"] == "Ein Hund rennt. Ein Mann sitzt.\n\nZwei Kinder spielen."
    assert [s["unsure"] for s in data["sentences"]] == [False, False, True] and 0.3 < CONFIDENCE_THRESHOLD
    pieces = tiny_tokenizer.pieces(tiny_tokenizer.encode(" ".join(outputs), side="target"))
    assert "." in pieces  # the full stop is a piece of its own here: a word written without a space
    assert [w["text"] for w in data["words"]] == " ".join(outputs).replace(".", " .").split()
    # shown with the word before it, in that word's colour: "rennt." (a click on it is a click on "rennt")
    for word in data["words"]:
        pieces = [data["tokens"][i] for i in word["tokens"]]
        assert word["probability"] == f64(math.prod(t["probability"] for t in pieces))  # exp(sum of logs), float64
    shown = word_view.highlighted(data)
    assert "".join(text for text, _ in shown) == "Ein Hund rennt. Ein Mann sitzt.\n\nZwei Kinder spielen. ⚠"
    assert shown[-1] == (" ⚠", word_view.UNSURE) and ("\n\n", None) in shown
    assert word_view.entry_word(data, 0) == 0 and word_view.entry_word(data, len(shown) - 1) is None
    assert "unsure of 1 of 3 sentence(s)" in word_view.note(data) and "Multi30k" in word_view.note(data)


def test_language_picker_events_take_values_as_sent(no_models):
    """The pickers' choices change with every pick: Gradio's check of a value against the choices it last sent
    failed a second event fired before the page applied the first one's update ("de is not in the list of
    choices"), so these events skip preprocessing and ``fit_pair`` checks the values."""
    demo = build_demo(models_dir=no_models)
    pickers = {block._id for block in demo.blocks.values()
               if isinstance(block, gr.Dropdown) and (block.elem_id or "").endswith(("-source-lang", "-target-lang"))}
    assert len(pickers) == 10  # From and To in each of the five tabs
    fns = list(demo.fns.values()) if isinstance(demo.fns, dict) else list(demo.fns)
    events = [fn for fn in fns if pickers & {block._id for block in fn.outputs}]
    assert len(events) == 14  # model change (four tabs), source pick and swap (five tabs each)
    assert all(fn.preprocess is False for fn in events), [fn.name for fn in events if fn.preprocess]


def test_a_handler_bound_to_the_context_reports_bad_input_as_such():
    """``bind`` hands ``handler`` a ``functools.partial`` (no ``__name__``): a library ValueError must still reach
    the visitor as "Invalid request: ...", not as a failure of the error handling itself."""
    import functools

    from space.page.tabs._common import handler

    def refuse(ctx, text):
        raise ValueError(f"the decoder-only layout has no encoder and decoder ({ctx}, {text})")

    with pytest.raises(gr.Error, match=r"Invalid request: the decoder-only layout has no encoder and decoder \(1, x\)"):
        handler(functools.partial(refuse, 1))("x")
