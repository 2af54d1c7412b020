"""The "Inside the Transformer" tab on "Best for the direction", in a real browser, on the shipped models.

It opens on "Best for the direction" as every tab, and the line under its picker names the model that is for the
picked direction (``ModelChooser.best``, on captions: what the views read a sentence as).  Its views are drawn from
that model: the attention pictures hold the library's weights (``transformer_hub.inside.attention_maps`` of that
model, sentence and direction) for the default example, for a typed sentence and in another direction; Step by step
draws greedy's bars and the beams (counted in the picture's own pixels, by the colours the pictures draw them in), its
step slider spans the library's steps, and a typed sentence (no reference) gets the note instead of an empty forcing
picture.  The beam tree of Beam vs greedy (also on "Best for the direction") is drawn for the typed sentence too.
Browser and skips as in ``test_browser.py``.
"""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

from helpers.browser import (TIMEOUT_MS, app_url, browser, choose, fill, open_page, open_tab,  # noqa: F401
                             screenshot_on_failure)
from test_browser_inside import FIGURE_JS, changed, same_weights, weights
from space.page.examples import EXAMPLES
from space.page.tabs.inside import NO_REFERENCE
from space.pictures import beam_tree, inside as inside_pictures
from space.hosting.limits import Limits
from space.serving.choice import AUTO_LABEL, ModelChooser
from space.serving.model_store import ModelStore
from transformer_hub import Transformer
from transformer_hub.inside import attention_maps, step_by_step

MODELS = Path(__file__).resolve().parent.parent / "space" / "models"
pytestmark = pytest.mark.slow  # a server with the shipped models and a browser
TYPED = "The old man sells fresh bread at the market."  # no Multi30k reference: nothing to teacher-force

# How many pixels of the picture ``s`` are each colour (RGB within 30 in all, summed): the bars, lines and dots the
# pictures draw in their colours; an empty plot has its axes, titles and legend only.
COLOURS_JS = """([s, colours]) => { const img = document.querySelector(s + ' img');
  if (!img || !img.complete || !img.naturalWidth) return null;
  const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d'); g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data, counts = colours.map(() => 0);
  for (let i = 0; i < d.length; i += 4) colours.forEach((rgb, k) => {
    if (Math.abs(d[i] - rgb[0]) + Math.abs(d[i + 1] - rgb[1]) + Math.abs(d[i + 2] - rgb[2]) < 30) counts[k] += 1; });
  return {src: img.src, counts: counts}; }"""
# More pixels of a colour than the legend's marks have: what is drawn is there.  Measured on these pictures drawn
# empty / for the default example: a step's bars 0 red and 260 blue (the legend's patch) / 21,636 and 45,861; the
# forcing picture's curves 99 red and 97 green / 649 together; the beam tree's path and beams 1,619 and 2,300 drawn.
BARS_PX, LINES_PX = 2000, 300


def rgb(colour: str) -> list:
    return [int(colour[i:i + 2], 16) for i in (1, 3, 5)]


@pytest.fixture(scope="module")
def page(browser, app_url):
    page = open_page(browser, app_url, 1280, 900)
    yield page
    page.context.close()


@pytest.fixture(scope="module")
def chooser():
    return ModelChooser(ModelStore(MODELS))


@functools.lru_cache(maxsize=None)
def model(name: str) -> Transformer:
    return Transformer.from_pretrained(str(MODELS / name))


def colours(page, selector: str, names: dict) -> dict:
    """``{name: pixels}`` of the picture in ``selector``, once it is loaded."""
    page.wait_for_function("s => { const i = document.querySelector(s + ' img'); return i && i.complete "
                           "&& i.naturalWidth > 0; }", arg=selector, timeout=TIMEOUT_MS)
    found = page.evaluate(COLOURS_JS, [selector, [rgb(c) for c in names.values()]])
    return dict(zip(names, found["counts"]))


def image(page, selector: str) -> str:
    return page.evaluate("s => { const i = document.querySelector(s + ' img'); return i ? i.src : ''; }", selector)


def attention_shown(page, name: str, text: str, src: str, tgt: str) -> None:
    """Show the attention of ``text`` and check that both pictures hold ``name``'s weights for it (the cross
    attention of layer 1: every head in the model view, head 1 in the head view) and that the decoder was fed the
    model's own translation."""
    before = page.evaluate(f"s => JSON.stringify(({FIGURE_JS})(s))", "#inside-model-view")
    page.locator("#inside-attention-button").click()
    expected = attention_maps(model(name), text, src, tgt)
    page.wait_for_function("t => document.querySelector('#inside-translation textarea').value === t",
                           arg=expected.target, timeout=TIMEOUT_MS)
    changed(page, "#inside-model-view", before)
    tiles = weights(page.evaluate(FIGURE_JS, "#inside-model-view"))
    assert len(tiles) == expected.cross.shape[1] > 0  # one tile per head, none empty
    for h, tile in enumerate(tiles):
        assert tile.size > 0
        same_weights(tile, expected.cross[0, h])
    page.wait_for_function(f"([s, n]) => {{ const f = ({FIGURE_JS})(s); return f && f.data[0].z && "
                           "(f.data[0].z.shape ? f.data[0].z.shape.split(',')[0] : f.data[0].z.length) == n; }",
                           arg=["#inside-head-view", len(expected.target_pieces)], timeout=TIMEOUT_MS)
    (one,) = weights(page.evaluate(FIGURE_JS, "#inside-head-view"))
    same_weights(one, expected.cross[0, 0])


def test_inside_opens_on_best_for_the_direction_as_every_tab_and_names_its_model(page, chooser):
    """Before: it opened on the best model's name (en-de) while every other tab opened on "Best for the direction"."""
    open_tab(page, "Inside the Transformer")
    page.wait_for_function("m => document.querySelector('#inside-model input').value === m", arg=AUTO_LABEL,
                           timeout=10_000)
    assert page.locator("#translate-model input").input_value() == AUTO_LABEL
    assert f"Best for English → German: {chooser.best('en', 'de')}" in page.locator("#inside-model").inner_text()
    assert not page.locator("#inside-attention-button").is_disabled()


def test_best_for_the_directions_attention_holds_the_librarys_weights(page, chooser):
    """The default example, a typed sentence, then the typed sentence into French: each time every head's picture
    holds the weights of the model "Best for the direction" is for that direction."""
    open_tab(page, "Inside the Transformer")
    page.get_by_role("tab", name="Attention, all three kinds", exact=True).click()
    assert page.locator("#inside-input textarea").input_value() == EXAMPLES["en"][0]
    attention_shown(page, chooser.best("en", "de"), EXAMPLES["en"][0], "en", "de")
    fill(page, "#inside-input", TYPED)
    attention_shown(page, chooser.best("en", "de"), TYPED, "en", "de")
    choose(page, "#inside-target-lang", "French")
    french = chooser.best("en", "fr")
    page.wait_for_function("t => document.querySelector('#inside-model').innerText.includes(t)",
                           arg=f"Best for English → French: {french}", timeout=TIMEOUT_MS)
    attention_shown(page, french, TYPED, "en", "fr")
    choose(page, "#inside-target-lang", "German")
    assert not page.errors, page.errors


def test_best_for_the_directions_step_by_step_draws_the_example_and_a_typed_sentence(page, chooser):
    """Before: a typed sentence's teacher-forcing picture was an empty frame.  Now, for the example and for a
    typed sentence, the step picture has greedy's choice (red) and the kept beams (blue) drawn, and the step slider
    spans the library's steps; the example's forcing picture has its curves, the typed sentence's is replaced by
    the note saying why there is none."""
    open_tab(page, "Inside the Transformer")
    page.locator("#inside-examples").get_by_text(EXAMPLES["en"][0], exact=True).click()
    page.wait_for_function("t => document.querySelector('#inside-input textarea').value === t", arg=EXAMPLES["en"][0])
    page.get_by_role("tab", name="Step by step", exact=True).click()
    name, bars = chooser.best("en", "de"), {"greedy": inside_pictures.GREEDY, "beam": inside_pictures.BEAM}
    limit = Limits().max_output_tokens
    for text in (EXAMPLES["en"][0], TYPED):
        fill(page, "#inside-input", text)
        before = image(page, "#inside-step-plot")
        page.locator("#inside-steps-button").click()
        page.wait_for_function("([s, b]) => { const i = document.querySelector(s + ' img'); return i && i.src !== b; }",
                               arg=["#inside-step-plot", before], timeout=TIMEOUT_MS)
        drawn = colours(page, "#inside-step-plot", bars)
        assert min(drawn.values()) > BARS_PX, (text, drawn)
        steps = step_by_step(model(name), text, "en", "de", k=5, beam_size=4, max_length=limit).steps
        page.wait_for_function("n => document.querySelector('#inside-step input[type=range]').max == n",
                               arg=max(2, steps), timeout=TIMEOUT_MS)
        if text == TYPED:
            page.get_by_text(NO_REFERENCE[:60]).wait_for(state="visible", timeout=TIMEOUT_MS)
            assert not page.locator("#inside-forcing-plot").is_visible()
        else:
            curves = colours(page, "#inside-forcing-plot", {"forced": inside_pictures.REFERENCE,
                                                            "greedy": inside_pictures.GREEDY})
            # where greedy follows the reference its curve (red, drawn second) covers the teacher-forced one
            assert sum(curves.values()) > LINES_PX, curves
            assert not page.locator("#inside-forcing-note").is_visible()
    assert not page.errors, page.errors


def test_the_beam_tree_of_best_for_the_direction_is_drawn_for_a_typed_sentence(page):
    open_tab(page, "Beam vs greedy")
    assert page.locator("#compare-model input").input_value() == AUTO_LABEL
    fill(page, "#compare-input", TYPED)
    page.locator("#compare-button").click()
    tree = colours(page, "#compare-tree", {"chosen": beam_tree.CHOSEN, "kept": beam_tree.KEPT})
    assert min(tree.values()) > LINES_PX, tree
    assert not page.errors, page.errors
