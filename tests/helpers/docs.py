"""The documentation pages that tests read figures from (README.md and docs/*.md), and the tables of
docs/results.md, for the tests that check its figures against the results files."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def page(name: str) -> str:
    """The text of ``README.md``, or of ``docs/<name>``."""
    path = ROOT / name if name == "README.md" else ROOT / "docs" / name
    return path.read_text(encoding="utf-8")


def results_rows(start: str = "## `space/models/multilingual`", width: int = 9) -> dict:
    """A table of docs/results.md's multilingual section (from ``start``): (split, direction) -> its cells, for rows
    of ``width`` cells."""
    text = page("results.md")
    section = text[text.index(start):text.index("## `space/models/en-de`")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == width and re.fullmatch(r"test_\w+", cells[0]):
            rows[cells[0], cells[1]] = cells[2:]
    return rows
