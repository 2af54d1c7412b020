"""The page's layout on the shipped models at phone (390x844) and desktop (1280x900) size.

Phone: the source box and the Translate button lie within the first 1.5 screens; no element reaches past the
screen's right edge unless a frame that scrolls sideways holds it (tables, pictures), on Translate, Beam vs
greedy (after a comparison: the n-best table) and Architecture variants; every number in the variants table
fits its column on one line.  Desktop: the Translate button is on the first screen.  After a failed request
the previous translation is gone and a note says the request failed.
On every tab at both sizes no dropdown's selected label, nor any of its choices, is cut.
Screenshots go to ``$SCREENSHOT_DIR`` (else ``transformer_hub-screens/layout`` in the temporary folder: outside
the repository, never committed).  Browser and skips as in ``test_browser.py``.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

import pytest

from helpers.browser import TIMEOUT_MS, app_url, browser, open_page, screenshot_on_failure  # noqa: F401  (skips without a browser)
from space.page.tabs._common import FAILED_NOTE
from space.page.tabs.inside import NO_REFERENCE

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "space" / "models"
SHOTS = Path(os.environ.get("SCREENSHOT_DIR") or Path(tempfile.gettempdir()) / "transformer_hub-screens") / "layout"
PHONE, DESKTOP = (390, 844), (1280, 900)
pytestmark = pytest.mark.slow  # a server with the shipped models and a browser

# Elements past the right edge of the screen that no ancestor frame clips (one that scrolls or hides its overflow
# and itself ends within the screen): what a visitor would have to scroll the whole page sideways to see.
TOO_WIDE_JS = """() => { const W = document.documentElement.clientWidth, out = [];
  const held = e => { for (let a = e.parentElement; a; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible' && a.getBoundingClientRect().right <= W + 1) return true; }
    return false; };
  for (const e of document.querySelectorAll('body *')) { const r = e.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && r.right > W + 1 && !held(e))
      out.push(`${e.tagName}#${e.id}.${String(e.className).slice(0, 40)} right=${Math.round(r.right)}`); }
  return {page: document.documentElement.scrollWidth, screen: W, wide: out.slice(0, 10)}; }"""

# Each cell of a table: its longest word (or number) against the room the cell gives it on one line.
WORDS_FIT_JS = """s => [...document.querySelectorAll(s + ' .virtual-row > *')].map(c => {
    const word = c.innerText.trim().split(/\\s+/).sort((a, b) => b.length - a.length)[0] || '';
    if (!word) return null;
    const probe = document.createElement('span'), font = getComputedStyle(c.querySelector('span') || c).font;
    probe.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap;font:' + font;
    probe.textContent = word; document.body.appendChild(probe);
    const need = probe.getBoundingClientRect().width; probe.remove();
    const style = getComputedStyle(c);
    const room = c.getBoundingClientRect().width - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return {word: word, room: room, need: need}; }).filter(x => x)"""

# Every dropdown shown: its selected label must fit its box (scrollWidth <= clientWidth), and so must each of its
# choices, measured in the box's font against the room its padding leaves (a choice picked later must fit too).
CUT_DROPDOWNS_JS = """() => { const cut = [], ctx = document.createElement('canvas').getContext('2d');
  let shown = 0;
  for (const c of window.gradio_config.components) {
    if (c.type !== 'dropdown') continue;
    const block = document.getElementById(c.props.elem_id || ('component-' + c.id));
    const input = block && block.querySelector('input');
    if (!input || !input.offsetParent) continue;
    shown += 1;
    const style = getComputedStyle(input); ctx.font = style.font;
    const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const name = `${c.props.label || ''}#${block.id}`;
    if (input.scrollWidth > input.clientWidth)
      cut.push(`${name}: selected "${input.value}" ${input.scrollWidth} > ${input.clientWidth} px`);
    for (const [label] of c.props.choices || []) { const need = ctx.measureText(String(label)).width;
      if (need > room + 0.5) cut.push(`${name}: choice "${label}" needs ${Math.round(need)} of ${Math.round(room)} px`); }
  }
  return {cut: cut, shown: shown}; }"""


def open_sized(browser, url: str, size):
    SHOTS.mkdir(parents=True, exist_ok=True)
    return open_page(browser, url, *size)


@pytest.fixture(scope="module")
def phone(browser, app_url):
    page = open_sized(browser, app_url, PHONE)
    yield page
    page.context.close()


@pytest.fixture(scope="module")
def desktop(browser, app_url):
    page = open_sized(browser, app_url, DESKTOP)
    yield page
    page.context.close()


def shoot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def bottom(page, selector: str) -> float:
    box = page.locator(selector).bounding_box()
    return box["y"] + box["height"]


def nothing_too_wide(page, where: str) -> None:
    found = page.evaluate(TOO_WIDE_JS)
    assert found["page"] <= found["screen"] and not found["wide"], (where, found)


def test_phone_source_box_and_button_within_one_and_a_half_screens(phone):
    limit = 1.5 * PHONE[1]
    assert bottom(phone, "#translate-input") <= limit, bottom(phone, "#translate-input")
    assert bottom(phone, "#translate-button") <= limit, bottom(phone, "#translate-button")
    nothing_too_wide(phone, "Translate")
    shoot(phone, "phone-translate")


def test_phone_variants_table_numbers_fit_their_columns(phone):
    phone.get_by_role("tab", name="Architecture variants", exact=True).click()
    phone.locator("#variants-table .virtual-row").first.wait_for()
    cells = [c for c in phone.evaluate(WORDS_FIT_JS, "#variants-table")
             if re.match(r"^[-+]?[0-9][0-9.,]*$", c["word"])]  # the numbers
    assert len(cells) >= 10, cells  # the study's models: parameters, BLEU, chrF, times
    narrow = [c for c in cells if c["room"] + 0.5 < c["need"]]
    assert not narrow, narrow
    nothing_too_wide(phone, "Architecture variants")
    shoot(phone, "phone-variants")


def test_phone_beam_vs_greedy_fits_the_screen(phone):
    phone.get_by_role("tab", name="Beam vs greedy", exact=True).click()
    phone.locator("#compare-button").click()
    phone.locator("#compare-tree img").wait_for(timeout=TIMEOUT_MS)
    nothing_too_wide(phone, "Beam vs greedy")
    size = phone.evaluate("() => { const i = document.querySelector('#compare-tree img');"
                          " return [i.naturalWidth, i.getBoundingClientRect().width]; }")
    assert size[1] >= 0.95 * size[0], size  # drawn at its own size (labels of 7.5-10 pt), scrolled, not shrunk
    shoot(phone, "phone-beam-vs-greedy")
    assert not phone.errors, phone.errors


def test_desktop_translate_button_on_the_first_screen(desktop):
    assert bottom(desktop, "#translate-button") <= DESKTOP[1], bottom(desktop, "#translate-button")
    nothing_too_wide(desktop, "Translate")
    shoot(desktop, "desktop-translate")


def test_after_an_error_the_previous_translation_is_cleared(desktop):
    desktop.get_by_role("tab", name="Translate", exact=True).click()
    desktop.locator("#translate-input textarea").fill("A dog is running in the snow.")
    desktop.locator("#translate-button").click()
    desktop.wait_for_function("() => document.querySelector('#translate-output textarea').value.trim() &&"
                              " document.querySelectorAll('#translate-tokens span.token').length > 2")
    desktop.locator("#translate-input textarea").fill("   ")  # empty: the server answers with an error
    desktop.locator("#translate-button").click()
    desktop.get_by_text("input is empty").first.wait_for(state="visible")
    desktop.wait_for_function("() => document.querySelector('#translate-output textarea').value === '' &&"
                              " document.querySelector('#translate-engine-note').innerText.includes('No result')")
    assert desktop.locator("#translate-tokens span.token").count() == 0
    shoot(desktop, "desktop-error-cleared")
    assert not desktop.errors, desktop.errors


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_no_dropdown_label_is_cut_on_any_tab(request, size):
    """Before: "average of all l" (phone), "Positions: attention has no sense of orde" (desktop), "reverse: the
    dig" (phone): each choice is a short name; what it means is in the dropdown's info text."""
    page = request.getfixturevalue(size)
    def visible_tabs():
        return [t.inner_text().strip() for t in page.get_by_role("tab").all() if t.is_visible()]

    def measure(title: str) -> None:
        nonlocal shown
        page.get_by_role("tab", name=title, exact=True).click()
        page.wait_for_function("t => [...document.querySelectorAll('[role=tab]')].some(b => b.innerText.trim() === t"
                               " && b.getAttribute('aria-selected') === 'true')", arg=title)
        found = page.evaluate(CUT_DROPDOWNS_JS)
        cut.extend(f"{title}: {line}" for line in found["cut"])
        shown += found["shown"]

    page.get_by_role("tab", name="Translate", exact=True).click()
    tabs = visible_tabs()  # the page's tabs; a tab's own tabs (Inside's views) are visited when it is open
    assert "Playground" in tabs and "Attention" in tabs, tabs
    cut, shown = [], 0
    for title in tabs:
        measure(title)
        for inner in [t for t in visible_tabs() if t not in tabs]:
            measure(inner)
    assert shown >= 10, shown  # the model, language, layer, head, lesson and task pickers were measured
    assert not cut, "\n".join(cut)
    page.get_by_role("tab", name="Playground", exact=True).click()
    shoot(page, f"{size}-playground")
    page.get_by_role("tab", name="Translate", exact=True).click()


# The innermost element holding ``text``, and whether its text's last character can be seen: not past a frame that
# clips it, not past the screen, not under another element (the file box's clear button covered the label's end).
SHOWN_IN_FULL_JS = """t => { const all = [...document.querySelectorAll('body *')].filter(e => e.offsetParent &&
    e.innerText && e.innerText.includes(t));
  const e = all.find(x => ![...x.children].some(c => c.innerText && c.innerText.includes(t)));
  if (!e) return null;
  const range = document.createRange(); range.selectNodeContents(e);
  const rects = [...range.getClientRects()].filter(r => r.width > 0), last = rects[rects.length - 1];
  const x = last.right - 2, y = last.top + last.height / 2, hit = document.elementFromPoint(x, y);
  let clipped = last.right > document.documentElement.clientWidth + 1 ? 'screen' : '';
  for (let a = e; a && !clipped; a = a.parentElement)
    if (getComputedStyle(a).overflowX !== 'visible' && last.right > a.getBoundingClientRect().right + 1)
      clipped = a.tagName + '.' + a.className;
  return {text: e.innerText, clipped: clipped, covered: hit && !e.contains(hit) ? hit.tagName + '.' + hit.className : ''};
}"""


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_the_upload_limits_are_readable_in_full(request, size, tmp_path):
    """Before: the limits were cut at "(at most 100,000 bytes, 1,000 sentence", the file box's clear
    button over the end of its one-line label once a file is chosen."""
    page = request.getfixturevalue(size)
    page.get_by_role("tab", name="Translate", exact=True).click()
    limits = "(at most 100,000 bytes, 1,000 sentences)"
    if not page.get_by_text(limits).is_visible():
        page.locator("#translate-document > button").first.click()
    page.get_by_text(limits).wait_for(state="visible")
    document = tmp_path / "two.txt"
    document.write_text("A dog runs.\nA cat sleeps.\n", encoding="utf-8")
    for chosen in (False, True):
        if chosen:
            page.locator("#translate-file input[type=file]").set_input_files(str(document))
            page.locator("#translate-file a[data-testid=download-link]").wait_for()
        shown = page.evaluate(SHOWN_IN_FULL_JS, limits)
        assert shown is not None and not shown["clipped"] and not shown["covered"], (chosen, shown)
    shoot(page, f"{size}-document-upload")
    page.locator("#translate-file button[aria-label='Clear']").first.click()


# A picture wider than its block must sit in a frame that scrolls sideways (and does: more to scroll than shown);
# one that fits is fine. Before: the beam tree's 995 px in a 326 px block whose overflow hid the rest.
PICTURES_FIT_JS = """s => [...document.querySelectorAll(s + ' img')].filter(i => i.offsetParent).map(i => {
  const block = document.querySelector(s), room = block.getBoundingClientRect().width;
  const width = i.getBoundingClientRect().width;
  let scrolls = false;
  for (let a = i.parentElement; a && !scrolls; a = a === block ? null : a.parentElement) {
    const o = getComputedStyle(a).overflowX;
    scrolls = (o === 'auto' || o === 'scroll') && a.scrollWidth > a.clientWidth; }
  return {width: Math.round(width), room: Math.round(room), scrolls: scrolls}; })"""
# The WCAG contrast ratio of an element's text against the first opaque background behind it.
CONTRAST_JS = """e => { const rgb = c => c.match(/[0-9.]+/g).map(Number);
  const lum = c => { const v = rgb(c).slice(0, 3).map(x => { x /= 255;
      return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  let a = e, back = 'rgb(255, 255, 255)';
  for (; a; a = a.parentElement) { const b = getComputedStyle(a).backgroundColor, parts = rgb(b);
    if (parts.length < 4 || parts[3] > 0.99) { back = b; break; } }
  const [hi, lo] = [lum(getComputedStyle(e).color), lum(back)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05); }"""


def test_phone_the_translation_is_in_view_after_translate(phone):
    """Before: the result lay 1,822 px below the button (2.2 screens) and the page did not move."""
    phone.get_by_role("tab", name="Translate", exact=True).click()
    phone.evaluate("window.scrollTo(0, 0)")
    phone.locator("#translate-input textarea").fill("A little girl climbs into a wooden playhouse.")
    phone.locator("#translate-button").click()
    phone.wait_for_function("() => document.querySelector('#translate-output textarea').value.trim()")
    phone.wait_for_function("() => { const r = document.querySelector('#translate-output').getBoundingClientRect();"
                            " return r.top >= 0 && r.top < window.innerHeight - 80; }")
    shoot(phone, "phone-after-translate")


def test_phone_no_picture_is_wider_than_its_box(phone):
    def fits(selector: str) -> None:
        pictures = phone.evaluate(PICTURES_FIT_JS, selector)
        assert pictures and all(p["width"] <= p["room"] + 1 or p["scrolls"] for p in pictures), (selector, pictures)

    phone.get_by_role("tab", name="Beam vs greedy", exact=True).click()
    phone.locator("#compare-button").click()
    phone.locator("#compare-tree img").wait_for(timeout=TIMEOUT_MS)
    fits("#compare-tree")
    phone.get_by_role("tab", name="Inside the Transformer", exact=True).click()
    phone.get_by_role("tab", name="Step by step", exact=True).click()
    phone.locator("#inside-steps-button").click()
    phone.locator("#inside-step-plot img").wait_for(timeout=TIMEOUT_MS)
    fits("#inside-step-plot")
    shoot(phone, "phone-inside-steps")


def test_phone_variants_results_break_no_word_or_number(phone):
    """Before: "pyt/orc/h" and "-1./540/2" in the side-by-side table, its headers cut."""
    phone.get_by_role("tab", name="Architecture variants", exact=True).click()
    phone.locator("#variants-button").click()
    phone.locator("#variants-results .virtual-row").first.wait_for(timeout=TIMEOUT_MS)
    phone.wait_for_function("() => document.querySelector('#variants-results .virtual-row').innerText.trim()")
    cells = phone.evaluate(WORDS_FIT_JS, "#variants-results")
    assert len(cells) >= 4, cells
    narrow = [c for c in cells if c["room"] + 0.5 < c["need"]]
    assert not narrow, narrow
    nothing_too_wide(phone, "Architecture variants, side by side")
    shoot(phone, "phone-variants-results")


def test_help_texts_meet_wcag_aa_contrast(desktop):
    """Before: the Domain and Best quality help texts were #9ca3af on white, 2.5:1 (AA asks 4.5:1)."""
    desktop.get_by_role("tab", name="Translate", exact=True).click()
    for block in ("#translate-domain", "#translate-quality"):
        info = desktop.locator(f"{block} .info-text").first
        for _ in range(50):  # the page's own CSS is applied a moment after the page shows
            ratio = info.evaluate(CONTRAST_JS)
            if ratio >= 4.5:
                break
            time.sleep(0.2)
        assert ratio >= 4.5, (block, ratio, info.evaluate("e => getComputedStyle(e).color"))


def test_a_failed_document_clears_the_last_documents_note(desktop, tmp_path):
    desktop.get_by_role("tab", name="Translate", exact=True).click()
    if not desktop.locator("#translate-file-button").is_visible():
        desktop.locator("#translate-document > button").first.click()
    good, bad = tmp_path / "good.txt", tmp_path / "bad.docx"
    good.write_text("A dog runs in the park.\n", encoding="utf-8")
    bad.write_bytes(b"PK not really a document")
    desktop.locator("#translate-file input[type=file]").set_input_files(str(good))
    desktop.locator("#translate-file a[data-testid=download-link]").wait_for()
    desktop.locator("#translate-file-button").click()
    desktop.wait_for_function("() => document.querySelector('#translate-file-note').innerText.includes('translated')",
                              timeout=TIMEOUT_MS)
    desktop.locator("#translate-file button[aria-label='Clear']").first.click()
    desktop.locator("#translate-file input[type=file]").set_input_files(str(bad))
    desktop.locator("#translate-file a[data-testid=download-link]").wait_for()
    desktop.locator("#translate-file-button").click()
    desktop.wait_for_function("n => document.querySelector('#translate-file-note').innerText.includes(n)",
                              arg=FAILED_NOTE.split("**")[1], timeout=TIMEOUT_MS)
    assert "translated" not in desktop.locator("#translate-file-note").inner_text()
    desktop.locator("#translate-file button[aria-label='Clear']").first.click()


def test_step_by_step_on_a_typed_sentence_draws_its_steps_and_says_why_no_forcing(desktop):
    """Before: a typed sentence (no reference) left the teacher-forcing picture an empty frame."""
    desktop.get_by_role("tab", name="Inside the Transformer", exact=True).click()
    desktop.locator("#inside-input textarea").fill("The old man sells fresh bread at the market.")
    desktop.get_by_role("tab", name="Step by step", exact=True).click()
    desktop.locator("#inside-steps-button").click()
    desktop.get_by_text(NO_REFERENCE[:60]).wait_for(state="visible", timeout=TIMEOUT_MS)
    desktop.locator("#inside-step-plot img").wait_for(timeout=TIMEOUT_MS)
    assert desktop.locator("#inside-step-plot img").bounding_box()["width"] > 300
    assert not desktop.locator("#inside-forcing-plot").is_visible()
    shoot(desktop, "desktop-step-by-step-typed")
