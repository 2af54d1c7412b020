"""Tables read off README.md, for the tests that check its figures against the results files."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_rows(start: str = "### `space/models/multilingual`", width: int = 9) -> dict:
    """A table of README.md's multilingual section (from ``start``): (split, direction) -> its cells, for rows of
    ``width`` cells."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(start):text.index("### `space/models/en-de`")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == width and re.fullmatch(r"test_\w+", cells[0]):
            rows[cells[0], cells[1]] = cells[2:]
    return rows
