"""The Space as a first-time visitor sees it, on the shipped models, at desktop (1280x900) and phone (390x844) width.

Every tab is reached without a hidden menu and run once; every Inside view is shown for every model it
offers; a clicked word's alternatives are whole words of the model's language and picking one translates the
rest of the sentence again; no SentencePiece markup ("▁", "</s>", "<2de>") is visible; no table needs a
horizontal scroll at 1280 px; no error toast appears.  Screenshots of each tab at both widths land in
``artifacts/screens/<width>/`` (git-ignored; CI keeps them as artifacts).  Browser and skips as in
``test_browser.py``.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from helpers.browser import (TIMEOUT_MS, app_url, browser, open_page, screenshot_on_failure,  # noqa: F401  (skips without a browser)
                             sync_api)
from helpers.corpus import MULTI30K, MULTI30K_MISSING
from space.serving.choice import AUTO_LABEL, ModelChooser
from space.serving.model_store import ModelStore

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "space" / "models"
SCREENS = ROOT / "artifacts" / "screens"
SIZES = {"desktop": (1280, 900), "phone": (390, 844)}
MARKUP = re.compile(r"\u2581|</s>|<2[a-z]{2}>")
TEXT = ("A young woman is walking her dog in the park. The sun is shining and two children are playing football on "
        "the grass. Later, she meets a friend for coffee near the river.")
pytestmark = pytest.mark.slow  # a server with the shipped models and a browser: a minute or more


@pytest.fixture(scope="module", params=list(SIZES))
def page(request, browser, app_url):
    page = open_page(browser, app_url, *SIZES[request.param])
    page.size = request.param
    (SCREENS / request.param).mkdir(parents=True, exist_ok=True)
    yield page
    page.context.close()


def shoot(page, name: str) -> None:
    page.screenshot(path=str(SCREENS / page.size / f"{name}.png"), full_page=True)


def no_trouble(page) -> None:
    """No error toast, no JavaScript error, no SentencePiece markup in the visible text."""
    toasts = page.locator(".toast-body").all_inner_texts()
    assert not [t for t in toasts if "rror" in t], toasts
    assert not page.errors, page.errors
    found = MARKUP.findall(page.locator("body").inner_text())
    assert not found, found


def open_tab(page, title: str) -> None:
    """Click the tab's own button: it must be in sight, not behind the "More tabs" menu."""
    assert page.locator("button[aria-label='More tabs']:visible").count() == 0
    button = page.get_by_role("tab", name=title, exact=True)
    assert button.is_visible(), f"the {title!r} tab is not in sight at {page.size} width"
    button.click()


def wait_until_idle(page) -> None:
    """Every pending event done: no progress bar or spinner left on the page."""
    page.wait_for_function("() => !document.querySelector('.progress-text, .eta-bar, .wrap.default .meta-text')",
                           timeout=TIMEOUT_MS)


def run_and_wait(page, button: str, done: str) -> None:
    page.locator(button).click()
    page.wait_for_function(done, timeout=TIMEOUT_MS)
    wait_until_idle(page)


def test_every_tab_is_in_sight_runs_and_is_photographed(page):
    open_tab(page, "Translate")
    page.locator("#translate-input textarea").fill(TEXT)
    run_and_wait(page, "#translate-button", "() => document.querySelectorAll('#translate-tokens span.token').length > 20")
    assert page.locator("#translate-time").count() == 0 or not page.locator("#translate-time").is_visible()
    no_trouble(page)
    shoot(page, "1-translate")
    open_tab(page, "Beam vs greedy")
    run_and_wait(page, "#compare-button", "() => document.querySelector('#compare-beam textarea').value.trim()")
    no_trouble(page)
    shoot(page, "2-beam-vs-greedy")
    open_tab(page, "Architecture variants")
    run_and_wait(page, "#variants-button", "() => document.querySelector('#variants-results').innerText.includes('pytorch')")
    no_trouble(page)
    if page.size == "desktop":
        for table in ("#variants-table", "#variants-results"):  # every column in sight
            overflow = page.locator(f"{table} .table-wrap").first.evaluate("e => e.scrollWidth - e.clientWidth")
            assert overflow <= 1, (table, overflow)
    shoot(page, "3-variants")
    open_tab(page, "Attention")
    run_and_wait(page, "#attention-button", "() => document.querySelector('#attention-plot .js-plotly-plot .main-svg')")
    no_trouble(page)
    shoot(page, "4-attention")
    open_tab(page, "Inside the Transformer")
    page.locator("#inside-attention-button").click()
    page.locator("#inside-model-view .js-plotly-plot .main-svg").first.wait_for()
    wait_until_idle(page)
    no_trouble(page)
    shoot(page, "5-inside")
    if page.get_by_role("tab", name="Playground", exact=True).count():  # opened only: it trains a model live
        open_tab(page, "Playground")
        no_trouble(page)
        shoot(page, "8-playground")


VIEWS = {"Attention, all three kinds": ("#inside-attention-button", "#inside-model-view"),
         "Positional encoding": ("#inside-positions-button", "#inside-positions-plot"),
         "Step by step": ("#inside-steps-button", "#inside-step-plot"),
         "Training recipe": ("#inside-recipe-button", "#inside-recipe-plot")}


def models_offered(page) -> list:
    page.locator("#inside-model input").click()
    names = page.locator("#inside-model").get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    page.locator("#inside-model input").blur()  # so that the next click opens the list again
    names = [n.strip().splitlines()[-1].strip() for n in names if n.strip()]  # the chosen one has a tick line
    return [n for n in names if n != AUTO_LABEL]


def pick(page, selector: str, option: str) -> None:
    """Choose ``option`` in a dropdown by typing it (the list's opening animation makes a click flaky)."""
    box = page.locator(f"{selector} input")
    box.click()
    box.fill(option)
    listed = page.locator(selector).get_by_role("option", name=option, exact=True)
    try:
        listed.wait_for(timeout=5000)
    except sync_api.TimeoutError:  # the box kept focus after Escape closed its list: a key opens it again
        box.press("ArrowDown")
        listed.wait_for()
    box.press("Enter")
    page.wait_for_function("([s, o]) => document.querySelector(s + ' input').value === o", arg=[selector, option])


def test_inside_opens_on_best_for_the_direction_and_every_view_shows_every_model_it_offers(page):
    """The tab opens on "Best for the direction", as every tab; the line under its picker names the model that is
    for en->de (the best-scored by the cards, not the weakest).  A view either draws the model or says in one
    sentence why it cannot (its button then off): never an error.  Desktop: Best and every model; phone: Best (the
    views are the same code)."""
    open_tab(page, "Inside the Transformer")
    best = ModelChooser(ModelStore(MODELS)).best("en", "de")
    assert best != "variants/paper" and page.locator("#inside-model input").input_value() == AUTO_LABEL
    assert f"Best for English → German: {best}" in page.locator("#inside-model").inner_text()
    models = [AUTO_LABEL, *models_offered(page)] if page.size == "desktop" else [AUTO_LABEL]
    assert len(models) >= (8 if page.size == "desktop" else 1)
    store = ModelStore(MODELS)
    for name in models:
        pick(page, "#inside-model", name)  # Best first: the pickers are on en->de, where it is ``best``
        # the buttons follow the picked model in an event of their own: wait for the attention view's to have
        # (it alone is off for a model without an encoder)
        off = store.config(best if name == AUTO_LABEL else name).layout != "encoder-decoder"
        page.wait_for_function("off => document.querySelector('#inside-attention-button').disabled === off", arg=off,
                               timeout=TIMEOUT_MS)
        for view, (button, plot) in VIEWS.items():
            page.get_by_role("tab", name=view, exact=True).click()
            if page.locator(button).is_disabled():
                assert page.locator(f"{button.replace('-button', '-why-not')}").inner_text().strip()
                continue
            page.locator(button).click()
            try:  # the view's progress shows while it runs (two models may draw the same picture)
                page.locator(f"{plot} .eta-bar, {plot} .progress-text").first.wait_for(state="attached", timeout=5000)
            except sync_api.TimeoutError:
                pass  # already done
            wait_until_idle(page)
            page.locator(f"{plot} img, {plot} .js-plotly-plot .main-svg").first.wait_for()  # a PNG or a plotly figure
            no_trouble(page)
            if name == AUTO_LABEL:
                shoot(page, f"6-inside-{view.split(',')[0].lower().replace(' ', '-')}")


def _words_of(lang: str) -> set:
    path = MULTI30K / f"train.{lang}.gz"
    if not path.is_file():
        pytest.skip(f"{MULTI30K_MISSING} (the vocabulary of words comes from its training text)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return {w for line in f for w in re.findall(r"\w+", line)}


@pytest.mark.data
def test_a_clicked_words_alternatives_are_whole_words_and_picking_one_translates_again(page):
    if page.size != "desktop":
        pytest.skip("the word view's logic does not depend on the width; its phone layout is photographed above")
    vocabulary = _words_of("de")
    open_tab(page, "Translate")
    page.locator("#translate-input textarea").fill("A man in a blue shirt is riding a bicycle down the street.")
    page.locator("#tab-translate").get_by_label("greedy", exact=True).check()
    before = page.locator("#translate-output textarea").input_value()
    run_and_wait(page, "#translate-button",
                 f"() => document.querySelector('#translate-output textarea').value !== {before!r}")
    page.wait_for_function("""() => {
        const out = document.querySelector('#translate-output textarea').value.trim();
        const words = [...document.querySelectorAll('#translate-tokens span.token')]
            .map(s => (s.querySelector('.text') || s).textContent).filter(t => t !== ' ⚠').join('').trim();
        return out.length > 0 && words === out; }""")
    first = page.locator("#translate-output textarea").input_value()
    words = page.locator("#translate-tokens span.token")
    raw = words.evaluate_all("spans => spans.map(s => (s.querySelector('.text') || s).textContent)")
    texts = [t.strip() for t in raw]
    for index in range(1, len(texts)):  # the first word whose alternatives hold another word
        if not texts[index].isalpha():
            continue
        words.nth(index).click()
        labels = page.locator("#translate-alternatives label")
        labels.first.wait_for()
        wait_until_idle(page)
        if labels.count() > 1:
            break
    else:
        pytest.fail(f"no word of {first!r} has an alternative")
    assert page.locator("#translate-tokens .legend-item", has_text="the word you clicked").count() == 1
    options = [t.strip() for t in labels.all_inner_texts()]
    current = [o for o in options if o.endswith("(current)")]
    assert len(current) == 1 and current[0].split()[0] == texts[index]  # the word shown, marked
    shoot(page, "7-word-alternatives")
    choices = [o.split()[0] for o in options]
    assert len(set(choices)) == len(choices) and all(c in vocabulary for c in choices), choices
    other = next(i for i, o in enumerate(options) if not o.endswith("(current)"))
    labels.nth(other).click()
    page.locator("#translate-alternatives").wait_for(state="hidden")
    wait_until_idle(page)
    second = page.locator("#translate-output textarea").input_value()
    kept = "".join(raw[:index]).strip() + (" " if raw[index].startswith(" ") else "") + choices[other]
    assert second.startswith(kept) and second != first, (kept, second, first)
    no_trouble(page)
    page.locator("#translate-undo").click()
    page.wait_for_function("t => document.querySelector('#translate-output textarea').value === t", arg=first)
