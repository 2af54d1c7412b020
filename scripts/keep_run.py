"""A long training run kept between sessions as one resumable checkpoint in a tracked folder of main.

    python -m scripts.keep_run save runs/v4       # the run's newest checkpoint into resume/v4, to commit
    python -m scripts.keep_run restore runs/v4    # resume/v4 back into runs/v4, to `train --resume` from

``save`` replaces ``resume/<run name>`` (``--into``) with what ``train --resume`` needs: the newest
``checkpoints/step_N``, the ``tokenizer`` folder, ``metrics.jsonl`` and the run's other small top-level files (not a stage's ``.log``).
Commit that folder before a session ends: a fresh clone of main is all a later session gets, so a checkpoint
kept anywhere else (another branch, the machine's disk) is lost. Each commit of it adds one checkpoint to the
repository's history (~65 MB for v4), so save at the end of a session, not after every stage.  ``restore``
writes the files back where they were.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import List, Optional, Tuple

SMALL = 2 * 1024 * 1024  # top-level files up to this size travel with the checkpoint (metrics, plots, records)


def resumable_files(run: Path) -> Tuple[str, List[Path]]:
    """The newest checkpoint's name; its files, the tokenizer's and the run's small top-level files."""
    steps = sorted((run / "checkpoints").glob("step_*"))
    if not steps:
        raise SystemExit(f"{run} has no checkpoints/step_*: nothing to save (train with --save-every)")
    files = [f for f in steps[-1].iterdir() if f.is_file()]
    files += [f for f in (run / "tokenizer").glob("*") if f.is_file()]
    files += [f for f in run.iterdir() if f.is_file() and f.stat().st_size <= SMALL and f.suffix != ".log"]
    return steps[-1].name, sorted(files)


def copy_tree(files: List[Path], source: Path, destination: Path) -> None:
    for file in files:
        target = destination / file.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, target)


def save(run: Path, kept: Path) -> None:
    """Replace ``kept`` with the run's resumable files."""
    step, files = resumable_files(run)
    if kept.exists():
        shutil.rmtree(kept)
    copy_tree(files, run, kept)
    print(f"{kept}: {run} at {step} ({len(files)} files); commit it: git add {kept} && git commit")


def restore(run: Path, kept: Path) -> None:
    """The files ``save`` kept, written back into ``run``."""
    files = sorted(f for f in kept.rglob("*") if f.is_file())
    if not any(f.parent.parent.name == "checkpoints" for f in files):
        raise SystemExit(f"{kept} holds no checkpoint to restore (python -m scripts.keep_run save {run} first)")
    copy_tree(files, kept, run)
    print(f"{run}: restored from {kept} ({len(files)} files)")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["save", "restore"])
    parser.add_argument("run", type=Path, help="the run folder")
    parser.add_argument("--kept", type=Path, default=None, help="the tracked folder (default: resume/<run name>)")
    args = parser.parse_args(argv)
    kept = args.kept or Path("resume") / args.run.name
    (save if args.what == "save" else restore)(args.run, kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
