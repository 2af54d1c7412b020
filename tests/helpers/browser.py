"""A real browser for the Space's tests: Playwright (from PyPI) driving Debian's Chromium, headless.  Never runs
``playwright install``: without ``/usr/bin/chromium`` (``apt-get install chromium``) the importing module is skipped."""
from __future__ import annotations

import collections
import os
import tempfile
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing: install Debian's Chromium (apt-get install -y chromium) to run browser tests",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip install playwright) is not installed")

# outside the checkout, never committed: $SCREENSHOT_DIR (CI sets it and keeps the folder), else the temporary folder
SHOTS = Path(os.environ.get("SCREENSHOT_DIR") or Path(tempfile.gettempdir()) / "transformer_hub-screens") / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage"]
TIMEOUT_MS = 60_000
# every toast the page shows, kept in window.toastsSeen: a failed wait's report names an error that has faded
RECORD_TOASTS = """window.toastsSeen = [];
new MutationObserver(() => document.querySelectorAll('.toast-body').forEach(t => {
    const text = t.innerText.trim(); if (text && !window.toastsSeen.includes(text)) window.toastsSeen.push(text); }))
  .observe(document, {subtree: true, childList: true, characterData: true});"""


SHIPPED_MODELS = Path(__file__).resolve().parents[2] / "space" / "models"


@pytest.fixture(scope="module")
def app_url():
    """The Space on the shipped models, on a free local port, for one test module (skipped without them)."""
    from .space_fixtures import launch_local

    if not (SHIPPED_MODELS / "multilingual" / "model.safetensors").is_file():
        pytest.skip("the shipped models under space/models are missing")
    url, demo = launch_local([], models_dir=SHIPPED_MODELS)
    try:
        yield url
    finally:
        demo.close()
        demo.space_context.close()


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a test module."""
    with sync_api.sync_playwright() as pw:
        try:
            chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        except Exception as exc:  # noqa: BLE001 - a broken browser install is an environment problem
            pytest.skip(f"cannot start {CHROMIUM}: {exc}")
        yield chromium
        chromium.close()


def open_page(browser, url: str, width: int, height: int):
    """A page of ``browser`` on ``url`` in a new context of that viewport, once the Space has rendered;
    ``page.errors`` collects its JavaScript errors (close it with ``page.context.close()``)."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#translate-button").wait_for(state="visible")
    return page


def browser_page(url: str):
    """A Chromium page on ``url`` once the Space has rendered (a generator: the page, then the browser closes);
    ``page.errors`` collects the page's JavaScript errors."""
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
        context.add_init_script(RECORD_TOASTS)
        page.events = collections.deque(maxlen=60)  # what a failed test prints: the page's last requests
        page.on("request", lambda r: page.events.append(f"{time.monotonic():.2f} {r.method} {r.url}"))
        page.on("response", lambda r: page.events.append(f"{time.monotonic():.2f} {r.status} {r.url}"))
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#translate-button").wait_for(state="visible")
        page.errors = errors
        yield page
        context.close()
        browser.close()


@pytest.fixture(autouse=True)
def screenshot_on_failure(request):
    """A failed test leaves ``failed-<test>.png``: what the page showed when the wait gave up."""
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed > failed and "page" in request.fixturenames:
        page = request.getfixturevalue("page")
        page.screenshot(path=str(SHOTS / f"failed-{request.node.name}.png"), full_page=True)
        print("toasts the page showed:", page.evaluate("window.toastsSeen || []"))
        print("the page's last requests:", *getattr(page, "events", ()), sep="\n  ")


def open_tab(page, title: str) -> None:
    page.get_by_role("tab", name=title).click()


def textarea_value(page, selector: str) -> str:
    return page.locator(f"{selector} textarea").input_value()


def wait_for_text(page, selector: str) -> str:
    page.wait_for_function(
        "sel => { const t = document.querySelector(sel + ' textarea'); return t && t.value.trim().length > 0; }",
        arg=selector, timeout=TIMEOUT_MS)
    return textarea_value(page, selector)


def choose(page, selector: str, option: str) -> None:
    """Pick ``option`` in the Gradio dropdown ``selector``."""
    page.locator(f"{selector} input").click()
    page.locator(selector).get_by_role("option", name=option, exact=True).click()
    page.wait_for_function("([s, o]) => document.querySelector(s + ' input').value === o", arg=[selector, option])


def fill(page, selector: str, text: str) -> None:
    """Type ``text`` into the textarea of ``selector`` and wait until the page keeps it: a component mounted a
    moment ago (in an accordion just opened) can still reset its value to its initial one, so a value the page
    drops within a second is typed again."""
    box, deadline = page.locator(f"{selector} textarea"), time.monotonic() + TIMEOUT_MS / 1000
    while True:
        box.fill(text)
        try:
            page.wait_for_function("([s, t]) => document.querySelector(s + ' textarea').value !== t",
                                   arg=[selector, text], timeout=1000)
        except sync_api.TimeoutError:
            return  # kept for a second
        if time.monotonic() > deadline:
            raise AssertionError(f"{selector} keeps dropping the text typed into it")


def wait_for_inner_text(page, selector: str, text: str) -> None:
    page.wait_for_function("([sel, t]) => { const e = document.querySelector(sel);"
                           " return e && e.innerText.includes(t); }", arg=[selector, text], timeout=TIMEOUT_MS)
