"""What the tests of a shipped model read beside it: the stored dtypes, the test files its results were scored on,
and the validation table its page quotes from the run's log."""
from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Iterable, List


def safetensors_header(path: Path) -> dict:
    """A safetensors file's tensors (name -> dtype, shape, offsets), read from its header without the weights."""
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    return {k: v for k, v in header.items() if k != "__metadata__"}


def stored_dtypes(path: Path) -> set:
    """The dtypes of a safetensors file's tensors."""
    return {v["dtype"] for v in safetensors_header(path).values()}


def same_data(saved, folder: Path, corpus: str, split: str, langs: Iterable[str]) -> bool:
    """Whether ``folder`` holds the ``split`` files (per language) that the results file ``saved`` was scored on."""
    recorded = saved.settings["test_files"]
    return all(recorded.get(f"{corpus}/{split}.{lang}.gz") ==
               hashlib.sha256((folder / f"{split}.{lang}.gz").read_bytes()).hexdigest() for lang in langs)


def val_table_lines(metrics: Path) -> List[str]:
    """One markdown row per validation of the run's log: the update, the mean val loss over each domain's 12
    directions, and over all 24."""
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    lines = []
    for row in (r for r in rows if r.get("kind") == "val"):
        tracks = {d: [v for k, v in row.items() if k.startswith("val_loss/") and k.endswith(f"@{d}")]
                  for d in ("captions", "software")}
        every = tracks["captions"] + tracks["software"]
        lines.append(f"| {row['step']:,} | {sum(tracks['captions']) / 12:.3f} | {sum(tracks['software']) / 12:.3f} "
                     f"| {sum(every) / 24:.3f} |")
    return lines
