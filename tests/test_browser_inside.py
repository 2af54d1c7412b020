"""The "Inside the Transformer" tab in a real browser, on the shipped multilingual model (and the paper variant).

Opens the tab, picks an example sentence (it has a Multi30k reference), shows every view, switches the kind,
layer and head of the attention and moves the step slider, and checks each time that the picture changed.
Screenshots of every view land in ``artifacts/screenshots/inside-*.png`` (git-ignored); also the beam tree of
a long sentence at beam 8.  Browser and skips as in ``test_browser.py``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.browser import (SHOTS, TIMEOUT_MS, browser_page, choose, open_tab,  # noqa: F401
                             screenshot_on_failure, wait_for_text)
from helpers.space_fixtures import running_app
from space.examples import EXAMPLES
from space.limits import Limits

MODELS = Path(__file__).resolve().parent.parent / "space" / "models"
pytestmark = pytest.mark.slow  # a server and a browser
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


def picture(page, selector: str) -> str:
    """The picture's data URL, once there is one."""
    page.locator(f"{selector} img").first.wait_for()
    return page.locator(f"{selector} img").first.get_attribute("src")


def changed(page, selector: str, before: str) -> str:
    page.wait_for_function("([s, b]) => { const i = document.querySelector(s + ' img'); return i && i.src !== b; }",
                           arg=[selector, before], timeout=TIMEOUT_MS)
    return picture(page, selector)


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
    page.locator("#compare-input textarea").fill(LONG)
    beam = page.locator("#tab-compare input[type=number]").first  # the first slider: the beam size
    beam.fill("8")
    beam.press("Enter")
    page.locator("#compare-button").click()
    picture(page, "#compare-tree")
    box = page.locator("#compare-tree img").first.bounding_box()
    assert box["width"] <= page.viewport_size["width"]  # drawn at the page's width, not wider
    page.locator("#compare-tree").screenshot(path=str(SHOTS / "beam-tree-beam8.png"))
    assert not page.errors, page.errors
