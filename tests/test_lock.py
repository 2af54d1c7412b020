"""The locks (requirements.txt for the Space, requirements-dev.txt for the tests) agree with pyproject.toml's
ranges, with each other and with the Space's card, and pin every package exactly."""
import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from scripts.lock import DEV_EXTRAS, HELD, SPACE_EXTRAS, differences, main, pins

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SPACE, DEV = pins(ROOT / "requirements.txt"), pins(ROOT / "requirements-dev.txt")


def promised(extras) -> list:
    requirements = [Requirement(r) for r in PROJECT["dependencies"]]
    return requirements + [Requirement(r) for e in extras for r in PROJECT["optional-dependencies"][e]]


@pytest.mark.parametrize("name, lock, extras", [("requirements.txt", SPACE, SPACE_EXTRAS),
                                                ("requirements-dev.txt", DEV, DEV_EXTRAS)])
def test_every_top_level_requirement_is_locked_within_its_range(name, lock, extras):
    for requirement in promised(extras):
        version = lock.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} is missing from {name}"
        assert requirement.specifier.contains(version, prereleases=True), f"{name}: {requirement} vs {version}"


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-dev.txt"])
def test_a_lock_pins_every_line_exactly_and_names_its_command(name):
    text = (ROOT / name).read_text()
    assert "python -m scripts.lock" in text.splitlines()[1]
    requirement_lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert requirement_lines and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[^\s+]+", line) for line in requirement_lines)
    assert not any(name.startswith("nvidia-") for name in pins(ROOT / name))  # torch's CPU build: no CUDA packages


def test_the_test_lock_holds_the_space_lock_and_torch_where_the_constraint_says():
    assert {name: DEV.get(name) for name in SPACE} == SPACE
    assert set(DEV) - set(SPACE) >= {"pytest", "transformers", "uv"}
    (held,) = [Requirement(l) for l in (ROOT / HELD).read_text().splitlines() if l and not l.startswith("#")]
    assert held.name == "torch" and SPACE["torch"] in held.specifier


def test_the_space_card_names_the_locked_gradio():
    card = (ROOT / "space" / "README.md").read_text()
    assert re.search(r"^sdk_version: (\S+)$", card, re.M)[1] == SPACE["gradio"]


def test_compare_lists_what_differs(tmp_path, capsys):
    assert differences({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "1"}) == ["b: 2 -> 3", "c: - -> 1"]
    newer = tmp_path / "newest.txt"
    newer.write_text((ROOT / "requirements-dev.txt").read_text().replace(f"torch=={DEV['torch']}", "torch==9.9.9"))
    assert main(["--compare", str(newer)]) == 0
    assert capsys.readouterr().out.strip() == f"torch: {DEV['torch']} -> 9.9.9"
    assert main(["--compare", str(tmp_path / "missing.txt")]) == 2
    assert "make it with --newest FILE" in capsys.readouterr().err
