"""What ships names no tracker item and no machine's path: every tracked text file is read for both."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT = (".md", ".py", ".json", ".jsonl", ".txt", ".toml", ".cfg", ".yaml", ".yml", ".html", ".js", ".css", ".sh")
TRACKER = re.compile(r"\b[Ii]ssues? ?#?\d+\b|\bstop \d+\b")  # our tracker's items; a reader has no tracker
MACHINE = re.compile(r"(?<![\w.])/(?:work|root|Users|home/[a-z]\w*)/|/tmp/pytest-of-")
ALLOWED = {("tests/test_variant_study.py", "/home/me/runs/paper")}  # the schema test refuses this path on purpose


def tracked_text_files() -> list:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the shipped files are the tracked ones")
    return [name for name in listed.splitlines() if name.endswith(TEXT) and name != "tests/test_shipped_words.py"]


def findings(pattern: re.Pattern) -> list:
    found = []
    for name in tracked_text_files():
        text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for match in pattern.finditer(line):
                if not any(name == where and allowed in line for where, allowed in ALLOWED):
                    found.append(f"{name}:{number}: {match.group(0)!r}")
    return found


def test_no_tracker_words_ship():
    assert findings(TRACKER) == []


def test_no_machine_paths_ship():
    assert findings(MACHINE) == []


def test_the_patterns_catch_what_they_are_for():
    assert TRACKER.search("fixed in issue 22") and TRACKER.search("see issue #7") and TRACKER.search("stop 37")
    assert not TRACKER.search("issues of the day") and not TRACKER.search("stop the run")
    assert MACHINE.search("/work/main/space") and MACHINE.search("/home/alice/x") and MACHINE.search("/root/.cache")
    assert not MACHINE.search("space/work/notes") and not MACHINE.search("/tmp/out")
