"""The Space in a real browser: Playwright (from PyPI) driving Debian's Chromium, headless.

Opens the page, translates a sentence, then opens the beam-vs-greedy, variants and attention tabs and waits for
their outputs.  Screenshots land in ``artifacts/screenshots/`` (git-ignored).  Never runs ``playwright install``:
the browser is ``/usr/bin/chromium`` (``apt-get install chromium``); without it the module is skipped.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing: install Debian's Chromium (apt-get install -y chromium) to run browser tests",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip install playwright) is not installed")

from conftest import MULTI30K, synthetic_pairs  # noqa: E402
from space_fixtures import LEXICON, languages_of, model_for_tests, multilingual_for_tests, running_app  # noqa: E402
from space.examples import EXAMPLES  # noqa: E402
from space.limits import Limits  # noqa: E402

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage"]
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def app(request):
    cache = request.config.cache.mkdir("space") if request.config.cache else None
    data = None if MULTI30K.is_dir() else synthetic_pairs(2000)  # conftest's, when the corpus is absent
    with running_app(model_for_tests(cache, data=data), Limits(max_output_tokens=60),
                     extra=[multilingual_for_tests(cache)]) as running:
        yield running


@pytest.fixture(scope="module")
def page(app):
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        except Exception as exc:  # noqa: BLE001 - a broken browser install is an environment problem
            pytest.skip(f"cannot start {CHROMIUM}: {exc}")
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(app.url, wait_until="domcontentloaded")
        page.locator("#translate-button").wait_for(state="visible")
        page.errors = errors
        yield page
        context.close()
        browser.close()


def open_tab(page, title: str) -> None:
    page.get_by_role("tab", name=title).click()


def textarea_value(page, selector: str) -> str:
    return page.locator(f"{selector} textarea").input_value()


def wait_for_text(page, selector: str) -> str:
    page.wait_for_function(
        "sel => { const t = document.querySelector(sel + ' textarea'); return t && t.value.trim().length > 0; }",
        arg=selector, timeout=TIMEOUT_MS)
    return textarea_value(page, selector)


def test_translate_tab_is_open_and_translates(page, app):
    assert page.get_by_role("tab", name="Translate").get_attribute("aria-selected") == "true"
    box = page.locator("#translate-input textarea")
    box.fill("A man is riding a bicycle in the park.")
    page.locator("#translate-button").click()
    out = wait_for_text(page, "#translate-output")
    assert out.strip()
    page.wait_for_function("() => { const i = document.querySelector('#translate-time input');"
                           " return i && parseFloat(i.value) > 0; }")
    page.screenshot(path=str(SHOTS / "translate.png"), full_page=True)


def choose(page, selector: str, option: str) -> None:
    """Pick ``option`` in the Gradio dropdown ``selector``."""
    page.locator(f"{selector} input").click()
    page.locator(selector).get_by_role("option", name=option, exact=True).click()
    page.wait_for_function("([s, o]) => document.querySelector(s + ' input').value === o", arg=[selector, option])


def test_german_to_french_on_the_multilingual_model(page, app):
    choose(page, "#translate-model", "multilingual")
    choose(page, "#translate-source-lang", "German")
    choose(page, "#translate-target-lang", "French")
    page.locator("#translate-input textarea").fill(" ".join(LEXICON["de"][:5]))
    page.locator("#translate-button").click()
    page.wait_for_function("() => { const t = document.querySelector('#translate-output textarea');"
                           " return t && t.value.trim().split(/\\s+/).every(w => w.startsWith('fr')); }")
    out = textarea_value(page, "#translate-output")
    assert languages_of(out) == {"fr"}, out  # German in, French out: the languages reached the model
    page.screenshot(path=str(SHOTS / "translate-de-fr.png"), full_page=True)
    page.locator("#translate-swap").click()  # the swap button turns the pair around
    page.wait_for_function("() => document.querySelector('#translate-source-lang input').value === 'French' &&"
                           " document.querySelector('#translate-target-lang input').value === 'German'")


def test_examples_follow_the_source_language(page):
    choose(page, "#translate-source-lang", "Czech")
    example = EXAMPLES["cs"][1]
    page.locator("#translate-examples").get_by_text(example, exact=True).click()
    page.wait_for_function("t => document.querySelector('#translate-input textarea').value === t", arg=example)


def test_a_bilingual_model_narrows_the_pickers(page, app):
    choose(page, "#translate-model", app.model)
    page.wait_for_function("() => document.querySelector('#translate-source-lang input').value === 'English' &&"
                           " document.querySelector('#translate-target-lang input').value === 'German'")
    # (the choices themselves: tests/test_app.py::test_language_pickers_follow_the_model)


def test_click_a_word_shows_its_alternatives(page, app):
    open_tab(page, "Translate")
    choose(page, "#translate-model", app.model)
    page.locator("#translate-input textarea").fill("A man is riding a bicycle in the park.")
    page.locator("#translate-button").click()
    words = page.locator("#translate-tokens span.token")
    words.first.wait_for()
    assert page.locator("#translate-tokens .legend-item").count() == 4  # the legend of the colours
    page.screenshot(path=str(SHOTS / "tokens-coloured.png"), full_page=True)
    words.first.click()
    page.locator("#translate-alternatives label").nth(1).wait_for()
    assert "%" in page.locator("#translate-alternatives label").nth(1).inner_text()  # with probabilities
    page.screenshot(path=str(SHOTS / "tokens-alternatives.png"), full_page=True)
    # (picking an alternative and the undo: /continue is tested through gradio_client in test_app.py)


def test_beam_vs_greedy_tab(page):
    open_tab(page, "Beam vs greedy")
    page.locator("#compare-input textarea").fill(" ".join(LEXICON["en"][:4]))
    page.locator("#compare-button").click()
    greedy = wait_for_text(page, "#compare-greedy")
    beam = wait_for_text(page, "#compare-beam")
    assert greedy.strip() and beam.strip()
    verdict = page.locator("#compare-verdict")
    verdict.get_by_text(re.compile("They (differ|agree)")).wait_for()
    page.locator("#compare-tree img").first.wait_for()
    page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)
    page.locator("#compare-tree").screenshot(path=str(SHOTS / "beam-tree.png"))


def wait_for_inner_text(page, selector: str, text: str) -> None:
    page.wait_for_function("([sel, t]) => { const e = document.querySelector(sel); return e && e.innerText.includes(t); }",
                           arg=[selector, text], timeout=TIMEOUT_MS)


def test_variants_tab(page, app):
    open_tab(page, "Architecture variants")
    wait_for_inner_text(page, "#variants-table", "encoder-decoder")
    wait_for_inner_text(page, "#variants-table", app.model)
    page.locator("#variants-button").click()
    wait_for_inner_text(page, "#variants-results", app.model)
    page.locator("#variants-diagram img, #variants-diagram canvas, #variants-diagram svg").first.wait_for()
    page.screenshot(path=str(SHOTS / "variants.png"), full_page=True)


def test_attention_tab(page):
    open_tab(page, "Attention")
    page.locator("#attention-input textarea").fill(" ".join(LEXICON["en"][2:6]))
    page.locator("#attention-button").click()
    assert wait_for_text(page, "#attention-translation").strip()
    page.locator("#attention-plot img").first.wait_for()
    page.screenshot(path=str(SHOTS / "attention.png"), full_page=True)


def test_bad_input_shows_a_message_in_the_page(page):
    open_tab(page, "Translate")
    page.locator("#translate-input textarea").fill("   ")
    page.locator("#translate-button").click()
    toast = page.get_by_text(re.compile("input is empty")).first
    toast.wait_for(state="visible")
    page.wait_for_function("e => { const r = e.getBoundingClientRect(); return r.left >= 0 && "
                           "r.right <= window.innerWidth; }", arg=toast.element_handle())  # slid in fully
    page.screenshot(path=str(SHOTS / "error.png"))
    before = page.locator("#translate-time input").input_value()
    page.locator("#translate-input textarea").fill("A cat sleeps on the sofa.")
    page.locator("#translate-button").click()
    page.wait_for_function("b => document.querySelector('#translate-time input').value !== b", arg=before)
    assert textarea_value(page, "#translate-output").strip()
    assert not page.errors, page.errors
