"""The Playground tab in a real browser: a preset trains A and B live, Stop, a second visitor waits, the budget holds;
Stop during B says so at once.

Every wait is on a page condition.  Screenshots (mid-run, after A/B, Stop during B) land in ``$SCREENSHOT_DIR/screenshots/`` (else the
temporary folder's ``transformer_hub-screens/``; never committed).
"""
from __future__ import annotations

import tempfile
import time

import pytest

from helpers.browser import (SHOTS, browser_page, choose, open_tab, screenshot_on_failure,  # noqa: F401
                             wait_for_inner_text)  # skips without Chromium
from helpers.space_fixtures import launch_local
from space.hosting.limits import Limits
from transformer_hub.playground import LESSONS

pytestmark = pytest.mark.slow  # a server, a browser and real training runs
BUDGET = 8
STOP_BUDGET = 600  # the Stop test's runs end by Stop alone, however slow the machine is
AB_BUDGET = 20  # Stop during B: A ends by its budget, B is stopped long before its own ends


@pytest.fixture(scope="module")
def app(request):
    with tempfile.TemporaryDirectory() as empty:
        budget = getattr(request, "param", BUDGET)  # a test may ask for its own server: another budget
        url, demo = launch_local(models_dir=empty, limits=Limits(playground_seconds=budget))
        try:
            yield url, demo.space_context.playground
        finally:
            demo.close()
            demo.space_context.close()


@pytest.fixture(scope="module")
def page(app):
    for page in browser_page(app[0]):
        open_tab(page, "Playground")
        page.locator("#playground-train").wait_for(state="visible")
        yield page


def image_source(page, selector: str) -> str:
    return page.evaluate("s => { const i = document.querySelector(s + ' img'); return i ? i.src : ''; }", selector)


def wait_for_new_image(page, selector: str, before: str) -> str:
    page.wait_for_function("([s, b]) => { const i = document.querySelector(s + ' img');"
                           " return i && i.src && i.src !== b; }", arg=[selector, before])
    return image_source(page, selector)


def test_a_preset_trains_a_and_b_live_and_the_model_answers(page, app):
    choose(page, "#playground-lesson", LESSONS["positions"].short)
    page.wait_for_function("() => document.querySelector('#playground-ab input').checked")
    assert page.locator("#playground-b-positions input[value='none']").is_checked()
    page.locator("#playground-train").click()
    wait_for_inner_text(page, "#playground-status", "training, step")
    first = wait_for_new_image(page, "#playground-curves", "")
    wait_for_new_image(page, "#playground-curves", first)  # the curve moves while it trains
    page.locator("#playground-attention img").wait_for()
    labels = "#playground-curves [data-testid=block-label], #playground-attention [data-testid=block-label]"
    shown = page.evaluate("s => [...document.querySelectorAll(s)].filter(e => e.offsetParent !== null"
                          " && e.getBoundingClientRect().height > 0).length", labels)
    assert shown == 0  # no panel label over the left subplot's title: the picture has its own
    page.screenshot(path=str(SHOTS / "playground-mid-run.png"), full_page=True)
    wait_for_inner_text(page, "#playground-status", "Finished")
    status = page.locator("#playground-status").inner_text()
    assert status.count("done (budget)") == 2, status  # A and B each ran out their budget
    page.screenshot(path=str(SHOTS / "playground-after-ab.png"), full_page=True)
    page.locator("#playground-input textarea, #playground-input input").first.fill("3141")
    page.locator("#playground-try").click()
    wait_for_inner_text(page, "#playground-output", "B (positions=none)")
    assert "A (positions=sinusoidal)" in page.locator("#playground-output").inner_text()
    page.locator("#playground-own-attention img").wait_for()
    assert app[1].in_line() == 0


@pytest.mark.parametrize("app", [STOP_BUDGET], indirect=True)
def test_a_second_visitor_waits_in_line_and_stop_ends_a_run(page, app):
    page.locator("#playground-train").click()
    wait_for_inner_text(page, "#playground-status", "training, step")
    visitor = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})  # another session
    other = visitor.new_page()
    other.goto(app[0], wait_until="domcontentloaded")
    open_tab(other, "Playground")
    other.locator("#playground-train").click()
    wait_for_inner_text(other, "#playground-status", "Waiting in line: 1 run ahead of yours")
    other.screenshot(path=str(SHOTS / "playground-waiting.png"), full_page=True)
    page.locator("#playground-stop").click()
    wait_for_inner_text(page, "#playground-status", "done (stopped)")
    wait_for_inner_text(other, "#playground-status", "training, step")  # the line moved on
    other.locator("#playground-stop").click()
    wait_for_inner_text(other, "#playground-status", "done (stopped)")
    visitor.close()
    deadline = time.monotonic() + 30  # the runner closes the stopped run's process after its last event
    while app[1].in_line() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not page.errors and app[1].in_line() == 0


@pytest.mark.parametrize("app", [AB_BUDGET], indirect=True)
def test_stop_during_b_says_stopped_at_once_and_b_ends_stopped(page, app):
    """Before: 6 s after Stop the status still read "B (positions=none): training, step 160"."""
    choose(page, "#playground-lesson", LESSONS["positions"].short)
    page.wait_for_function("() => document.querySelector('#playground-ab input').checked")
    page.locator("#playground-train").click()
    wait_for_inner_text(page, "#playground-status", "B (positions=none): training, step")
    page.locator("#playground-stop").click()
    page.wait_for_function("() => /B \\(positions=none\\): (stopped at step|done \\(stopped\\))/"
                           ".test(document.querySelector('#playground-status').innerText)", timeout=2000)
    wait_for_inner_text(page, "#playground-status", "B (positions=none): done (stopped)")
    wait_for_inner_text(page, "#playground-status", "Stopped.")  # the job's end
    status = page.locator("#playground-status").inner_text()
    assert status.startswith("Stopped.") and "Finished" not in status, status
    assert "A (positions=sinusoidal): done (budget)" in status, status
    page.screenshot(path=str(SHOTS / "playground-stopped-during-b.png"), full_page=True)
    assert not page.errors
