"""The locks: exact versions of everything the Space and the tests install, resolved by ``uv pip compile`` from
the ranges in ``pyproject.toml``.

    python -m scripts.lock                 # rewrite requirements.txt (the Space) and requirements-dev.txt (tests)
    python -m scripts.lock --newest FILE   # the newest releases the ranges allow, for the newest-releases lane
    python -m scripts.lock --compare FILE  # which of FILE's versions differ from requirements-dev.txt's

``requirements-dev.txt`` locks everything the tests need: the extras ``space``, ``documents`` and ``fast`` (what
``python app.py`` imports), ``dev``, ``export`` and ``scale`` (Ray); ``requirements.txt`` then locks the first three
under it as a constraint, so the two agree on every package they share (the other way round, the smaller lock
could take a release that the larger set cannot have, and the test lock would not resolve at all). All three hold torch where ``scripts/lock_constraints.txt`` says: CI's machines carry
its CPU build on disk (found through pip's own ``find-links`` setting), and every newer release on the package
index is a CUDA build of several GB. The lock names it without its ``+cpu`` label, so that a machine without that
file takes the same release from the index.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
HELD = Path("scripts/lock_constraints.txt")  # relative: the locks' comments name it
PYTHON = "3.11"  # the Space's python_version (space/README.md) and CI's
SPACE_EXTRAS = ("space", "documents", "fast")
DEV_EXTRAS = SPACE_EXTRAS + ("dev", "export", "scale")
COMMAND = "python -m scripts.lock"


def _find_links() -> List[str]:
    """pip's configured ``find-links`` (where a machine keeps wheels such as torch's CPU build)."""
    found = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    links = []
    for line in found.splitlines():
        key, _, value = line.partition("=")
        if key.endswith("find-links"):
            links += value.strip().strip("'\"").split()
    return list(dict.fromkeys(links))


def compile_lock(out: Path, extras: tuple, constraints: Optional[Path] = None, upgrade: bool = False) -> None:
    """``uv pip compile`` of pyproject.toml's ``extras`` into ``out``, with ``HELD`` (and ``constraints``)."""
    command = ["uv", "pip", "compile", "pyproject.toml", "--quiet", "--output-file", str(out),
               "--python-version", PYTHON, "--python-platform", "x86_64-manylinux_2_28",
               "--custom-compile-command", COMMAND, "--constraint", str(HELD)]
    command += [a for extra in extras for a in ("--extra", extra)]
    command += [a for link in _find_links() for a in ("--find-links", link)]
    if constraints is not None:
        command += ["--constraint", str(constraints.relative_to(ROOT))]
    if upgrade:
        command.append("--upgrade")
    subprocess.run(command, cwd=ROOT, check=True)
    out.write_text(re.sub(r"^(torch==[^+\s]+)\+\w+$", r"\1", out.read_text(), flags=re.M))


def pins(path: Path) -> Dict[str, str]:
    """A lock's ``name==version`` lines as {normalised name: version}."""
    found = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line)
        if match:
            found[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[2]
    return found


def differences(locked: Dict[str, str], other: Dict[str, str]) -> List[str]:
    """One line per package whose version differs, or that only one side has."""
    return [f"{name}: {locked.get(name, '-')} -> {other.get(name, '-')}"
            for name in sorted(set(locked) | set(other)) if locked.get(name) != other.get(name)]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--newest", type=Path, metavar="FILE",
                        help="resolve the newest releases pyproject.toml allows into FILE (the locks stay)")
    parser.add_argument("--compare", type=Path, metavar="FILE",
                        help="list the packages whose version in FILE differs from requirements-dev.txt's")
    args = parser.parse_args(argv)
    if args.compare is not None:
        if not args.compare.is_file():
            print(f"lock: {args.compare} is not a file; make it with --newest FILE", file=sys.stderr)
            return 2
        print("\n".join(differences(pins(ROOT / "requirements-dev.txt"), pins(args.compare))) or "(none)")
        return 0
    try:
        if args.newest is not None:
            compile_lock(args.newest.resolve(), DEV_EXTRAS, upgrade=True)
            return 0
        compile_lock(ROOT / "requirements-dev.txt", DEV_EXTRAS, upgrade=True)
        compile_lock(ROOT / "requirements.txt", SPACE_EXTRAS, constraints=ROOT / "requirements-dev.txt", upgrade=True)
    except FileNotFoundError:
        print("lock: uv is not installed; `pip install uv` (requirements-dev.txt has it)", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print(f"lock: uv pip compile failed (exit {exc.returncode}); its message is above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
