"""The picture of the Space in README.md: ``python app.py`` (the shipped models) on a free loopback port, the page
opened in headless Chromium, one paragraph translated on the Translate tab, the window saved as a PNG.

    python -m scripts.space_screenshot --out docs/space.png

The browser is Debian's (``apt-get install -y chromium``), driven by Playwright from PyPI (``playwright install`` is
never needed); it runs with a new profile and without any of its background traffic.  The PNG is re-encoded with a
palette (Pillow) when that makes it smaller, so the picture stays light in the repository.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

from benchmarks.app import app_process

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TEXT = "A man rides a bike down the street. A dog runs after him.\n\nTwo children play in the snow."
TIMEOUT_MS = 120_000  # the first translation loads a model and warms the decoding worker


def capture(url: str, out: Path, text: str, width: int, height: int, chromium: str) -> None:
    """Open ``url``, translate ``text`` into German, and save the window (``width`` x ``height``) at ``out``."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=chromium, headless=True, args=FLAGS,
            viewport={"width": width, "height": height})
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url, wait_until="domcontentloaded")
            page.locator("#translate-button").wait_for(state="visible")
            page.locator("#translate-input textarea").fill(text)
            # the note under the translation ends with the engine's time once the answer is in (while the call
            # runs it keeps the last one, beside a progress timer)
            took = "(document.querySelector('#translate-engine-note').innerText.match(/([\\d.]+) ms/) || [])[1] || ''"
            for _ in range(2):  # the first answer warms the model up: the picture shows the second one's time
                before = page.evaluate(f"() => {took}")
                page.locator("#translate-button").click()
                page.wait_for_function(f"b => {{ const t = {took}; return t !== '' && t !== b; }}", arg=before)
            page.evaluate("() => window.scrollTo(0, 0)")  # the click scrolled the button into view
            page.mouse.move(0, 0)  # no hover tooltip in the picture
            out.write_bytes(smaller_png(page.screenshot(type="png")))
        finally:
            context.close()


def smaller_png(data: bytes) -> bytes:
    """``data`` as a 256-colour palette PNG when that is smaller (a page of flat colours loses nothing visible)."""
    from PIL import Image

    image = Image.open(io.BytesIO(data)).convert("RGB")
    buffer = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buffer, format="PNG", optimize=True)
    return min(data, buffer.getvalue(), key=len)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/space.png"), help="the PNG to write")
    parser.add_argument("--text", default=TEXT, help="what the Translate tab translates before the picture")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--chromium", default=CHROMIUM, help="the Chromium binary (default: %(default)s)")
    args = parser.parse_args(argv)
    if not os.path.exists(args.chromium):
        print(f"space_screenshot: {args.chromium} is missing: install Chromium (apt-get install -y chromium) "
              "or pass --chromium PATH", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with app_process(None) as (url, _):
        capture(url, args.out, args.text, args.width, args.height, args.chromium)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KB, {args.width}x{args.height})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
