"""Ship a trained model folder into the Space: ``python -m scripts.ship_model runs/NAME/final space/models/NAME``.

The folder is loaded by the library's strict loader (so a folder that does not load is never shipped) and saved
again with its weights in ``--dtype`` (default float16: half the bytes, still loaded as float32); every other file
of the folder (metrics.jsonl, plots, rerank.json, ...) is copied beside them, and the card is written again from
the folder's own card, saying how the weights are stored.  The destination is assembled in a temporary folder
beside it and moved into place, so an interrupted run leaves no half-shipped model; an existing destination is
replaced only with ``--force``.  Each file is printed with its size (the weights: before -> after).
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from transformer_hub import Transformer
from transformer_hub.errors import Parser, UserError
from transformer_hub.hub import CONFIG_JSON, WEIGHTS_DTYPES, WEIGHTS_FILE, CheckpointError


def human(size: int) -> str:
    """Bytes as B, kB or MB (powers of 1000, one decimal)."""
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    return f"{size / 1000:.1f} kB" if size >= 1000 else f"{size} B"


def check_paths(source: Path, dest: Path, force: bool) -> None:
    """Refuse a source that is no model folder, and a destination that exists (without ``force``) or holds it."""
    if not source.is_dir():
        raise UserError(f"{source}: no such folder (give a save_pretrained folder, e.g. a run's final/)")
    missing = [name for name in (CONFIG_JSON, WEIGHTS_FILE) if not (source / name).is_file()]
    if missing:
        raise UserError(f"{source} is not a model folder: it has no {' and '.join(missing)} "
                        "(give a save_pretrained folder, e.g. a run's final/)")
    if source.resolve() == dest.resolve() or source.resolve().is_relative_to(dest.resolve()):
        raise UserError(f"{dest} holds the source folder {source}: ship it somewhere else")
    if dest.exists() and not force:
        raise UserError(f"{dest} exists: pass --force to replace it")


def ship(source: Path, dest: Path, dtype: str, force: bool = False) -> List[str]:
    """Write ``dest`` from model folder ``source``, weights in ``dtype``; one line per file shipped."""
    check_paths(source, dest, force)
    model = Transformer.from_pretrained(source)
    tmp = dest.with_name(f".tmp_{dest.name}_{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        for path in sorted(source.iterdir()):  # first, so that the card written next sees the plot
            if path.is_file() and path.name != WEIGHTS_FILE:
                shutil.copy2(path, tmp / path.name)
        model.save_pretrained(tmp, weights_dtype=dtype)  # weights, config, tokenizer, domains, card
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        elif dest.exists() or dest.is_symlink():
            dest.unlink()
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    before = (source / WEIGHTS_FILE).stat().st_size
    lines = [f"{WEIGHTS_FILE}: {human(before)} -> {human((dest / WEIGHTS_FILE).stat().st_size)} ({dtype})"]
    lines += [f"{p.name}: {human(p.stat().st_size)}" for p in sorted(dest.iterdir()) if p.name != WEIGHTS_FILE]
    total = sum(p.stat().st_size for p in dest.iterdir())
    return lines + [f"{dest}: {len(lines)} files, {human(total)}"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = Parser(prog="python -m scripts.ship_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a save_pretrained folder, e.g. runs/NAME/final")
    parser.add_argument("dest", type=Path, help="the model folder to write, e.g. space/models/NAME")
    parser.add_argument("--dtype", choices=list(WEIGHTS_DTYPES), default="float16",
                        help="how the weights are stored (they load as float32 either way; default: float16)")
    parser.add_argument("--force", action="store_true", help="replace the destination if it exists")
    try:
        args = parser.parse_args(argv)
        lines = ship(args.source, args.dest, args.dtype, args.force)
    except (UserError, CheckpointError, OSError, ValueError) as exc:
        print(f"error: {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
