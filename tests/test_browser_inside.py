"""The "Inside the Transformer" tab in a real browser, on the shipped multilingual model (and the paper variant).

Opens the tab, picks an example sentence (it has a Multi30k reference), shows every view, switches the kind,
layer and head of the attention and moves the step slider, and checks each time that the picture changed.
The attention pictures are interactive (Plotly): the weights the page holds are read back and compared with
``transformer_hub.inside.attention_maps`` of the same model and sentence, and at phone size (390x844) the
attention pictures must fit the width with axis text of 11 px or more.  Screenshots of every view land in
``screenshots/inside-*.png`` under ``$SCREENSHOT_DIR`` (else the temporary folder's ``transformer_hub-screens/``); also the beam tree of a long sentence at beam 8.
Browser and skips as in ``test_browser.py``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.browser import (SHOTS, TIMEOUT_MS, browser_page, choose, fill, open_tab,  # noqa: F401
                             screenshot_on_failure, sync_api, wait_for_text)
from helpers.plotly_figures import array
from helpers.space_fixtures import running_app
from helpers.tolerances import F32_REL
from space.page.examples import EXAMPLES
from space.pictures.labels import piece_label
from space.hosting.limits import Limits
from transformer_hub import Transformer
from transformer_hub.inside import attention_maps

MODELS = Path(__file__).resolve().parent.parent / "space" / "models"
pytestmark = pytest.mark.slow  # a server and a browser
PHONE = {"width": 390, "height": 844}
MIN_FONT_PX = 11
LONG = ("A man in a blue shirt and a woman in a red dress are standing on a sidewalk next to a bicycle "
        "while two small dogs play in the grass.")


@pytest.fixture(scope="module")
def app():
    if not (MODELS / "multilingual" / "model.safetensors").is_file():
        pytest.skip("the shipped model space/models/multilingual is missing")
    with running_app(MODELS / "multilingual", Limits(), extra=[MODELS / "variants" / "paper"]) as running:
        yield running


@pytest.fixture(scope="module")
def page(app):
    yield from browser_page(app.url)


@pytest.fixture(scope="module")
def library():
    """The library's attention of the example sentence on the same model, teacher-forced on its greedy output."""
    return attention_maps(Transformer.from_pretrained(str(MODELS / "multilingual")), EXAMPLES["en"][1], "en", "de")


# The figure a gr.Plot drew: plotly.js keeps it on its div (.js-plotly-plot); the weights are the typed array
# the server sent (dtype, base64 bytes, shape), read back here as they are, not as the screen shows them.
FIGURE_JS = """s => { const gd = document.querySelector(s + ' .js-plotly-plot');
  if (!gd || !gd.data || !gd.data.length) return null;
  const z = t => t.z && t.z.bdata ? {dtype: t.z.dtype, bdata: t.z.bdata, shape: t.z.shape}
                                  : Array.from(t.z, row => Array.from(row));
  const axes = Object.keys(gd.layout).filter(k => /^[xy]axis/.test(k))
    .reduce((o, k) => (o[k] = {ticktext: gd.layout[k].ticktext || []}, o), {});
  return {title: (gd.layout.title || {}).text || '', axes: axes,
          data: gd.data.map(t => ({type: t.type, z: z(t), text: t.text}))}; }"""


def figure(page, selector: str) -> dict:
    """The plotly figure shown in ``selector``, once there is one."""
    page.wait_for_function(f"s => ({FIGURE_JS})(s) !== null", arg=selector, timeout=TIMEOUT_MS)
    return page.evaluate(FIGURE_JS, selector)


def picture(page, selector: str) -> str:
    """What identifies the picture now: a PNG's data URL, or a plotly figure's title and weights."""
    page.locator(f"{selector} img, {selector} .js-plotly-plot").first.wait_for()
    return page.evaluate(f"""s => {{ const i = document.querySelector(s + ' img'); if (i) return i.src;
                                    return JSON.stringify(({FIGURE_JS})(s)); }}""", selector)


def changed(page, selector: str, before: str) -> str:
    page.wait_for_function(f"""([s, b]) => {{ const i = document.querySelector(s + ' img');
        const now = i ? i.src : JSON.stringify(({FIGURE_JS})(s)); return now !== 'null' && now !== b; }}""",
                           arg=[selector, before], timeout=TIMEOUT_MS)
    return picture(page, selector)


def titled(page, selector: str, start: str, end: str) -> None:
    """Wait until the figure in ``selector`` is the one titled ``start ... end`` (events may land in any order)."""
    page.wait_for_function(f"""([s, a, b]) => {{ const f = ({FIGURE_JS})(s);
        return f !== null && f.title.startsWith(a) && f.title.endsWith(b); }}""", arg=[selector, start, end],
                           timeout=TIMEOUT_MS)


def weights(fig: dict) -> list:
    return [array(trace["z"]) for trace in fig["data"] if trace["type"] == "heatmap"]


def same_weights(shown: np.ndarray, library) -> None:
    """The page's float32 weights against the library's: another process and thread count may reorder the
    reductions (``helpers.tolerances``: F32_REL relative, with the same absolute floor for weights near 0)."""
    expected = library.float().numpy()
    assert shown.dtype == np.float32 and shown.shape == expected.shape
    assert np.allclose(shown, expected, rtol=F32_REL, atol=F32_REL), np.abs(shown - expected).max()


def slide(page, selector: str, value: int) -> None:
    page.locator(f"{selector} input[type=number]").fill(str(value))
    page.locator(f"{selector} input[type=number]").press("Enter")


def shoot(page, name: str, selector: str = "") -> None:
    if selector:
        page.locator(selector).screenshot(path=str(SHOTS / f"inside-{name}.png"))
    else:
        page.screenshot(path=str(SHOTS / f"inside-{name}.png"), full_page=True)


def test_attention_views_follow_kind_layer_and_head(page):
    open_tab(page, "Inside the Transformer")
    choose(page, "#inside-model", "multilingual")
    page.locator("#inside-examples").get_by_text(EXAMPLES["en"][1], exact=True).click()
    page.wait_for_function("t => document.querySelector('#inside-input textarea').value === t", arg=EXAMPLES["en"][1])
    page.locator("#inside-attention-button").click()
    assert wait_for_text(page, "#inside-translation").strip()
    model_view, head = picture(page, "#inside-model-view"), picture(page, "#inside-head-view")
    shoot(page, "attention")
    slide(page, "#inside-layer", 3)
    head = changed(page, "#inside-head-view", head)
    slide(page, "#inside-head", 2)
    head = changed(page, "#inside-head-view", head)
    page.locator("#inside-kind").get_by_label("Decoder masked self-attention").check()
    head = changed(page, "#inside-head-view", head)
    changed(page, "#inside-model-view", model_view)
    shoot(page, "model-view-decoder-self", "#inside-model-view")
    shoot(page, "head-view-decoder-self", "#inside-head-view")
    page.locator("#inside-kind").get_by_label("Encoder self-attention").check()
    changed(page, "#inside-head-view", head)
    shoot(page, "head-view-encoder-self", "#inside-head-view")
    assert not page.errors, page.errors


def test_the_inside_pictures_hold_the_librarys_weights_labelled_with_words(page, library):
    """Model view (every head of the layer) and head view: the weights the page holds are the library's for
    the same model and sentence; the axes name the pieces as words, the hover names no SentencePiece markup."""
    assert page.locator("#inside-translation textarea").input_value() == library.target
    page.locator("#inside-kind").get_by_label("Encoder-decoder (cross) attention").check()
    slide(page, "#inside-layer", 2)
    slide(page, "#inside-head", 3)
    titled(page, "#inside-model-view", "Encoder-decoder", "layer 2, every head (rows: queries, columns: keys)")
    titled(page, "#inside-head-view", "Encoder-decoder", "layer 2, head 3")
    tiles, head_fig = figure(page, "#inside-model-view"), figure(page, "#inside-head-view")
    shown = weights(tiles)
    assert len(shown) == library.cross.shape[1]  # one tile per head of layer 2
    for h, tile in enumerate(shown):
        same_weights(tile, library.cross[1, h])
    (one,) = weights(head_fig)
    same_weights(one, library.cross[1, 2])
    assert head_fig["axes"]["xaxis"]["ticktext"] == [piece_label(p) for p in library.source_pieces]
    assert head_fig["axes"]["yaxis"]["ticktext"] == [piece_label(p) for p in library.target_pieces]
    hover = [cell for row in head_fig["data"][0]["text"] for cell in row]
    assert len(hover) == one.size and not [c for c in hover if "\u2581" in c or "</s>" in c or "<2" in c]
    page.locator("#inside-kind").get_by_label("Decoder masked self-attention").check()
    titled(page, "#inside-head-view", "Decoder masked", "layer 2, head 3")
    (one,) = weights(figure(page, "#inside-head-view"))
    same_weights(one, library.decoder_self[1, 2])
    assert not page.errors, page.errors


def test_the_attention_tabs_picture_is_the_librarys_cross_attention_averaged(page, library):
    """The Attention tab's default (every layer and head averaged) for the same sentence on the same model:
    the decoder's attention while decoding equals the teacher-forced one of its own output."""
    page.get_by_role("tab", name="Attention", exact=True).click()
    choose(page, "#attention-model", "multilingual")
    fill(page, "#attention-input", EXAMPLES["en"][1])
    page.locator("#attention-button").click()
    page.wait_for_function("t => document.querySelector('#attention-translation textarea').value === t",
                           arg=library.target, timeout=TIMEOUT_MS)
    fig = figure(page, "#attention-plot")
    (shown,) = weights(fig)
    same_weights(shown, library.cross.mean(dim=(0, 1)))
    assert fig["axes"]["xaxis"]["ticktext"] == [piece_label(p) for p in library.source_pieces]
    page.locator("#attention-plot").screenshot(path=str(SHOTS / "attention-desktop.png"))
    assert not page.errors, page.errors


FIT_JS = """s => { const gd = document.querySelector(s + ' .js-plotly-plot'); const svg = gd.querySelector('.main-svg');
  const box = svg.getBoundingClientRect();
  const texts = Array.from(gd.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, '
                                              + '.annotation-text, .gtitle, .cbaxis text'));
  return {left: box.left, right: box.right, viewport: window.innerWidth,
          page: document.documentElement.scrollWidth,
          fonts: texts.filter(t => t.textContent.trim()).map(t => parseFloat(getComputedStyle(t).fontSize))}; }"""


def fits(page, selector: str) -> None:
    """The picture lies within the viewport's width, the page does not scroll sideways, and every axis text
    (ticks, titles, head names, colour scale) is at least ``MIN_FONT_PX``.  A window resize redraws a plotly
    figure after a moment (its resize handler): the width is waited for, then checked."""
    try:
        page.wait_for_function(f"s => {{ const b = ({FIT_JS})(s); return b.right <= b.viewport + 0.5; }}",
                               arg=selector, timeout=10_000)
    except sync_api.TimeoutError:
        pass  # the assertion below says how wide it stayed
    box = page.evaluate(FIT_JS, selector)
    assert box["left"] >= 0 and box["right"] <= box["viewport"] + 0.5, (selector, box)
    assert box["page"] <= box["viewport"], (selector, box)
    assert box["fonts"] and min(box["fonts"]) >= MIN_FONT_PX, (selector, sorted(box["fonts"])[:5])


def test_at_phone_size_the_attention_pictures_fit_the_width_with_legible_text(page):
    page.set_viewport_size(PHONE)
    try:
        fits(page, "#attention-plot")  # drawn at desktop width: plotly redraws it for the new width
        page.locator("#attention-plot").screenshot(path=str(SHOTS / "attention-phone.png"))
        open_tab(page, "Inside the Transformer")
        page.get_by_role("tab", name="Attention, all three kinds").click()
        model_view, head = picture(page, "#inside-model-view"), picture(page, "#inside-head-view")
        slide(page, "#inside-layer", 1)  # drawn anew at phone width
        changed(page, "#inside-model-view", model_view)
        changed(page, "#inside-head-view", head)
        for selector in ("#inside-model-view", "#inside-head-view"):
            fits(page, selector)
        shoot(page, "phone-model-view", "#inside-model-view")
        shoot(page, "phone-head-view", "#inside-head-view")
        shoot(page, "phone")
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})
    assert not page.errors, page.errors


def test_positions_of_the_rotary_and_the_sinusoidal_models(page, app):
    page.get_by_role("tab", name="Positional encoding").click()
    page.locator("#inside-positions-button").click()
    rotary = picture(page, "#inside-positions-plot")
    shoot(page, "positions-rotary", "#inside-positions-plot")
    choose(page, "#inside-model", app.demo.space_context.store.name_of(str(MODELS / "variants" / "paper")))
    page.locator("#inside-positions-button").click()
    changed(page, "#inside-positions-plot", rotary)
    shoot(page, "positions-sinusoidal", "#inside-positions-plot")
    choose(page, "#inside-model", "multilingual")


def test_step_slider_moves_through_the_decoding(page):
    page.get_by_role("tab", name="Step by step").click()
    page.locator("#inside-steps-button").click()
    step = picture(page, "#inside-step-plot")
    picture(page, "#inside-forcing-plot")  # the example's reference: teacher forcing is drawn too
    shoot(page, "steps")
    slide(page, "#inside-step", 4)
    changed(page, "#inside-step-plot", step)
    shoot(page, "step-4", "#inside-step-plot")
    shoot(page, "teacher-forcing", "#inside-forcing-plot")


def test_training_recipe(page):
    page.get_by_role("tab", name="Training recipe").click()
    page.locator("#inside-recipe-button").click()
    picture(page, "#inside-recipe-plot")
    shoot(page, "recipe", "#inside-recipe-plot")
    assert not page.errors, page.errors


def test_the_beam_tree_of_a_long_sentence_at_beam_8_fits_the_page(page):
    open_tab(page, "Beam vs greedy")
    choose(page, "#compare-model", "multilingual")
    fill(page, "#compare-input", LONG)
    beam = page.locator("#tab-compare input[type=number]").first  # the first slider: the beam size
    beam.fill("8")
    beam.press("Enter")
    page.locator("#compare-button").click()
    picture(page, "#compare-tree")
    box = page.locator("#compare-tree img").first.bounding_box()
    assert box["width"] <= page.viewport_size["width"]  # drawn at the page's width, not wider
    page.locator("#compare-tree").screenshot(path=str(SHOTS / "beam-tree-beam8.png"))
    assert not page.errors, page.errors
