"""Every relative link of README.md and docs/*.md leads somewhere: the file (or folder) exists inside the checkout,
and a ``#anchor`` names a heading of the page it points to (GitHub's slugs).  Links in code are not links."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Set

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def pages(root: Path) -> List[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def prose_lines(text: str) -> List[str]:
    """The lines outside fenced code blocks, with inline code spans blanked (what they hold is not markdown)."""
    lines, fence = [], None
    for line in text.splitlines():
        marker = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if marker and (fence is None or marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence)):
            fence = None if fence else marker.group(1)
            lines.append("")
            continue
        lines.append("" if fence else re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text, lowercased, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> Set[str]:
    """The anchors of a markdown page's headings; a repeated one gets ``-1``, ``-2`` ... as on GitHub."""
    seen: Dict[str, int] = {}
    found = set()
    text = path.read_text(encoding="utf-8")
    for raw, prose in zip(text.splitlines(), prose_lines(text)):
        match = HEADING.match(raw) if prose else None  # a '#' line inside a fence is code, not a heading
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(root: Path) -> List[str]:
    """``page:line: target (why)`` for each relative link of README.md and docs/*.md that leads nowhere."""
    broken = []
    for page in pages(root):
        for number, line in enumerate(prose_lines(page.read_text(encoding="utf-8")), 1):
            for target in LINK.findall(line):
                if re.match(r"[a-zA-Z][\w+.-]*:", target):  # https:, mailto: ...: not this checkout's
                    continue
                why = problem(page, target, root)
                if why:
                    broken.append(f"{page.relative_to(root)}:{number}: {target} ({why})")
    return broken


def problem(page: Path, target: str, root: Path) -> str:
    """Why ``target``, linked from ``page``, leads nowhere; empty when it resolves."""
    path, _, anchor = target.partition("#")
    goal = (page.parent / path).resolve() if path else page
    if root.resolve() not in (goal, *goal.parents):
        return "outside the checkout"
    if not goal.exists():
        return "no such file"
    if anchor:
        if goal.suffix != ".md":
            return "an anchor into a file that is not a markdown page"
        if anchor not in anchors(goal):
            return f"no heading of {goal.relative_to(root.resolve())} has this anchor"
    return ""


def test_every_link_of_the_readme_and_the_docs_resolves():
    assert broken_links(ROOT) == []


def test_the_pages_do_link_to_each_other():
    """The check has something to check: the README reaches every page of docs/, and uses anchors."""
    readme = "\n".join(prose_lines((ROOT / "README.md").read_text(encoding="utf-8")))
    targets = LINK.findall(readme)
    assert {f"docs/{p.name}" for p in pages(ROOT)[1:]} <= {t.partition("#")[0] for t in targets}
    assert any("#" in t for t in targets)


def test_a_broken_file_or_anchor_is_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "src.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text(
        "# Top\n\nSee [the guide](docs/guide.md#the-second-part-step-2), [gone](docs/gone.md),\n"
        "[a bad anchor](docs/guide.md#no-such-part), ![a picture](docs/missing.png), [code](src.py#L1),\n"
        "[up](../elsewhere.md), [the web](https://example.org/x.md) and [here](#top).\n\n"
        "```\n[in a fence](docs/nowhere.md)\n```\n\nAnd `[in code](docs/nowhere.md)`.\n")
    (tmp_path / "docs" / "guide.md").write_text(
        "# Guide\n\n## The `second` part: step 2\n\n## Again\n\n## Again\n\n"
        "Back [home](../README.md#top), [twice](#again-1), [thrice](#again-2).\n")
    assert broken_links(tmp_path) == [
        "README.md:3: docs/gone.md (no such file)",
        "README.md:4: docs/guide.md#no-such-part (no heading of docs/guide.md has this anchor)",
        "README.md:4: docs/missing.png (no such file)",
        "README.md:4: src.py#L1 (an anchor into a file that is not a markdown page)",
        "README.md:5: ../elsewhere.md (outside the checkout)",
        "docs/guide.md:9: #again-2 (no heading of docs/guide.md has this anchor)",
    ]


@pytest.mark.parametrize("heading, anchor", [
    ("The quality mode: reranking the 5-best", "the-quality-mode-reranking-the-5-best"),
    ("`space/models/en-de`: the bilingual reference", "spacemodelsen-de-the-bilingual-reference"),
    ("Real text: sentences, the source language, documents, confidence",
     "real-text-sentences-the-source-language-documents-confidence"),
    ("The Space (`app.py`, `space/`)", "the-space-apppy-space"),
    ("MCP: the translator as [tools](x.md) for *AI* agents", "mcp-the-translator-as-tools-for-ai-agents"),
])
def test_anchors_are_githubs_slugs(heading, anchor):
    assert slug(heading) == anchor
