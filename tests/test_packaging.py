"""What each install carries: the Space's requirements stay light; pyproject promises the torch CI tests."""
import sys
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def requirements(name: str) -> dict:
    lines = [line.split("#")[0].strip() for line in (ROOT / name).read_text().splitlines()]
    return {Requirement(line).name: Requirement(line) for line in lines if line and not line.startswith("-r")}


def test_the_space_install_leaves_the_marian_export_to_the_dev_and_export_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "transformers" not in requirements("requirements.txt")
    assert "transformers" in requirements("requirements-dev.txt")
    assert any(Requirement(r).name == "transformers" for r in project["optional-dependencies"]["export"])
    assert not any(Requirement(r).name == "transformers" for r in project["dependencies"])


def test_the_promised_torch_range_starts_at_the_version_ci_installs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    promised = next(Requirement(r) for r in project["dependencies"] if Requirement(r).name == "torch")
    pinned = requirements("requirements.txt")["torch"]
    (version,) = [s.version for s in pinned.specifier if s.operator == "=="]
    floor = [s.version for s in promised.specifier if s.operator == ">="]
    assert version in promised.specifier and floor and tuple(map(int, floor[0].split("."))) >= \
        tuple(map(int, version.split(".")[:len(floor[0].split("."))]))


def test_the_distribution_is_the_library_and_the_space_runs_from_the_checkout():
    """``pip install`` ships ``transformer_hub`` only: the Space's ``space`` would be a top-level package of a name
    any other project may take (it runs from the repository's root, as app.py and ``python -m space.scale`` do)."""
    from setuptools import find_packages

    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    shipped = find_packages(str(ROOT), include=find["include"], exclude=find.get("exclude", ()))
    assert "transformer_hub" in shipped and "transformer_hub.formats" in shipped
    assert {name.split(".")[0] for name in shipped} == {"transformer_hub"}, shipped
    assert (ROOT / "space" / "__init__.py").is_file()  # the Space is there, only not shipped
