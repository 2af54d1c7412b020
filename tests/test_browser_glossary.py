"""The translate tab's glossary box in a real browser (Playwright + Debian's Chromium, as tests/test_browser.py):
entries typed into the box reach the translation, the note names the entry applied, and the word view's legend
shows the glossary label; a malformed glossary shows the parser's message.  Every wait is on a page condition."""
from __future__ import annotations

import re

import pytest

from helpers.browser import SHOTS, browser_page, choose, fill, screenshot_on_failure, wait_for_inner_text  # noqa: F401
from helpers.space_fixtures import tiny_app

pytestmark = pytest.mark.slow  # a server and a browser: seconds per test


@pytest.fixture(scope="module")
def app(request):
    yield from tiny_app(request)


@pytest.fixture(scope="module")
def page(app):
    yield from browser_page(app.url)


def test_a_glossary_typed_in_the_box_puts_its_term_in_the_translation(page, app):
    choose(page, "#translate-model", app.model)
    choose(page, "#translate-source-lang", "English")
    page.locator("#translate-glossary-box").get_by_text("Glossary").first.click()  # open the accordion
    fill(page, "#translate-glossary", "dog\tWasserball\n")
    fill(page, "#translate-input", "A dog runs in the park.")
    page.locator("#translate-button").click()
    page.wait_for_function("() => document.querySelector('#translate-output textarea').value.includes('Wasserball')")
    wait_for_inner_text(page, "#translate-engine-note", "Glossary applied: “dog” → “Wasserball”")
    page.wait_for_function("() => [...document.querySelectorAll('#translate-tokens span.token')]"
                           ".some(s => s.textContent.includes('Wasserball'))")
    wait_for_inner_text(page, "#translate-tokens", "glossary term")  # the legend entry of the marked words
    page.screenshot(path=str(SHOTS / "translate-glossary.png"), full_page=True)


def test_a_tab_typed_in_the_glossary_box_is_a_tab_and_reaches_the_translation(page, app):
    box = page.locator("#translate-glossary textarea")
    fill(page, "#translate-glossary", "")
    box.click()
    page.keyboard.type("dog")
    page.keyboard.press("Tab")  # a browser moves the focus on; the page's handler types a tab instead
    page.keyboard.type("Seehund")
    assert box.input_value() == "dog\tSeehund"
    assert page.evaluate("() => document.activeElement === document.querySelector('#translate-glossary textarea')")
    page.keyboard.press("Shift+Tab")  # Shift+Tab still leaves the box (keyboard users are not trapped)
    assert box.input_value() == "dog\tSeehund"
    assert not page.evaluate("() => document.activeElement === document.querySelector('#translate-glossary textarea')")
    fill(page, "#translate-input", "A dog runs in the park.")
    page.locator("#translate-button").click()  # the value Gradio holds has the tab: the entry applies
    wait_for_inner_text(page, "#translate-engine-note", "Glossary applied: “dog” → “Seehund”")
    assert not page.errors, page.errors


def test_a_malformed_glossary_shows_the_parsers_message(page, app):
    fill(page, "#translate-glossary", "dog\tHund\tRüde\n")
    page.locator("#translate-button").click()
    toast = page.get_by_text(re.compile("Invalid request: glossary line 1")).first
    toast.wait_for(state="visible")
    # the whole message, as the REST API words it (the error is shown as HTML: "<TAB>" must stay text)
    assert "glossary line 1: expected source<TAB>target, got 3 fields" in toast.inner_text()
    page.screenshot(path=str(SHOTS / "translate-glossary-error.png"))
    assert not page.errors, page.errors
