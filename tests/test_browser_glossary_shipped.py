"""The glossary example (bicycle, street) in a real browser, on the shipped en-de model: bicycle→Velo and street→Gasse typed
into the page's Glossary box with the Tab key turn "A man rides a bicycle down the street." into a sentence that
holds both terms where "Fahrrad" and "Straße" stood (tests/test_glossary_anchoring.py checks the same through the
library and REST).  Every wait is on a page condition."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.browser import SHOTS, browser_page, choose, fill, screenshot_on_failure, wait_for_inner_text  # noqa: F401
from helpers.space_fixtures import LIMITS, running_app

pytestmark = pytest.mark.slow  # a server, the shipped model and a browser

EN_DE = Path(__file__).resolve().parents[1] / "space" / "models" / "en-de"
SENTENCE = "A man rides a bicycle down the street."


@pytest.fixture(scope="module")
def app():
    if not (EN_DE / "config.json").is_file():
        pytest.skip("the shipped en-de model is not in space/models")
    with running_app(EN_DE, LIMITS) as running:
        yield running


@pytest.fixture(scope="module")
def page(app):
    yield from browser_page(app.url)


def test_the_glossary_typed_with_tabs_replaces_the_words_it_translates(page, app):
    choose(page, "#translate-model", app.model)
    choose(page, "#translate-source-lang", "English")
    page.locator("#translate-glossary-box").get_by_text("Glossary").first.click()  # open the accordion
    fill(page, "#translate-glossary", "")
    page.locator("#translate-glossary textarea").click()
    for key in ("bicycle", "Tab", "Velo", "Enter", "street", "Tab", "Gasse"):
        page.keyboard.press(key) if key in ("Tab", "Enter") else page.keyboard.type(key)
    assert page.locator("#translate-glossary textarea").input_value() == "bicycle\tVelo\nstreet\tGasse"
    fill(page, "#translate-input", SENTENCE)
    page.locator("#translate-button").click()
    wait_for_inner_text(page, "#translate-engine-note", "Glossary applied: “bicycle” → “Velo”, “street” → “Gasse”")
    text = page.locator("#translate-output textarea").input_value()
    assert "Velo" in text and "Gasse" in text, text
    assert "Fahrrad" not in text and "Straße" not in text, text  # the terms replaced these, not joined them
    assert not text.startswith(("Velo", "Gasse")), text
    page.screenshot(path=str(SHOTS / "translate-glossary-shipped.png"), full_page=True)
    assert not page.errors, page.errors
