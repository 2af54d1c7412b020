"""A long training run kept between sessions on a git branch of its own, not in main's history.

    python -m scripts.run_branch save runs/v4 [--branch v4-run]      # the run's newest checkpoint, committed
    python -m scripts.run_branch restore runs/v4 [--branch v4-run]   # the same files back, to --resume from

``save`` commits what ``train --resume`` needs (the newest ``checkpoints/step_N``, the ``tokenizer`` folder,
``metrics.jsonl`` and the run's other small top-level files) as the only commit of ``--branch``, replacing the
previous one: the repository keeps one checkpoint of the run (~65 MB for v4) however many stages it takes, and
main's working tree and index are not touched.  ``restore`` writes them back where they were.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Tuple

SMALL = 2 * 1024 * 1024  # top-level files up to this size travel with the checkpoint (metrics, plots, records)


def git(*args: str, env: dict = None) -> str:
    done = subprocess.run(["git", *args], check=True, capture_output=True, env=env)
    return done.stdout.decode().strip()


def resumable_files(run: Path) -> Tuple[str, List[Path]]:
    """The newest checkpoint's name; its files, the tokenizer's and the run's small top-level files."""
    steps = sorted((run / "checkpoints").glob("step_*"))
    if not steps:
        raise SystemExit(f"{run} has no checkpoints/step_*: nothing to save (train with --save-every)")
    files = [f for f in steps[-1].iterdir() if f.is_file()]
    files += [f for f in (run / "tokenizer").glob("*") if f.is_file()]
    files += [f for f in run.iterdir() if f.is_file() and f.stat().st_size <= SMALL]
    return steps[-1].name, sorted(files)


def save(run: Path, branch: str) -> str:
    """Commit the run's resumable files as the only commit of ``branch``; its id."""
    step, files = resumable_files(run)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git("add", "--force", "--", *map(str, files), env=env)
        tree = git("write-tree", env=env)
    commit = git("commit-tree", tree, "-m", f"{run}: {step}, to resume from (python -m scripts.run_branch restore)")
    git("update-ref", f"refs/heads/{branch}", commit)
    print(f"{branch}: {commit[:12]} holds {run} at {step} ({len(files)} files)")
    return commit


def restore(run: Path, branch: str) -> None:
    """The files ``save`` committed, written back under the repository root."""
    listed = git("ls-tree", "-r", "--name-only", branch).splitlines()
    if not any(name.startswith(f"{run.as_posix()}/") for name in listed):
        raise SystemExit(f"branch {branch} holds no files of {run}")
    archive = subprocess.run(["git", "archive", branch], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-f", "-"], input=archive, check=True)
    print(f"{run}: restored from {branch} ({len(listed)} files)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["save", "restore"])
    parser.add_argument("run", type=Path, help="the run folder, relative to the repository root")
    parser.add_argument("--branch", default="v4-run")
    args = parser.parse_args(argv)
    os.chdir(git("rev-parse", "--show-toplevel"))
    (save if args.what == "save" else restore)(args.run, args.branch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
