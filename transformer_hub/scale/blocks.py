"""A corpus job on disk: the input read into items, cut into blocks of K lines, each finished block written as a
numbered part file, a manifest saying which input and options the parts belong to, and the parts joined.

    OUTPUT.parts/manifest.json        input's sha256, line count, block size, format, options
    OUTPUT.parts/part-00000.jsonl     one JSON object per line of block 0: id, text, src_lang, model (or error)
    OUTPUT                            the parts joined in input order, written once every block is done

A part file appears whole or not at all (written beside, then renamed), so a job cut at any moment and started
again with the same input, options and OUTPUT translates only the blocks without a part file.  Once OUTPUT is
written the parts folder is removed.  Nothing here needs Ray.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from ..errors import UserError
from ..training.data import read_lines

MANIFEST = "manifest.json"
_LINE_BREAKS = re.compile(r"[\r\n\t\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


class CorpusError(UserError):
    """A user's mistake with a corpus job (its input, its output folder): one line."""


@dataclass
class Item:
    """One input line: the text to translate, or why it cannot be read (``error``; ``text`` is then "")."""

    text: str
    error: Optional[str] = None


def is_jsonl(path: os.PathLike) -> bool:
    """JSON lines in (and out): a ``.jsonl`` or ``.jsonl.gz`` name."""
    return str(path).endswith((".jsonl", ".jsonl.gz"))


def read_items(path: os.PathLike, field: str = "text") -> List[Item]:
    """Every line of ``path`` (plain text or JSON lines, gzip or not) as an ``Item``; a JSON line that is not an
    object with a string ``field`` is an item with an ``error``, never the end of the job."""
    lines = read_lines(path, errors="replace", allow_empty=True)
    if not is_jsonl(path):
        return [Item(line) for line in lines]
    items = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError as exc:
            items.append(Item("", f"not a JSON line ({exc.msg})"))
            continue
        value = record.get(field) if isinstance(record, dict) else None
        items.append(Item(value) if isinstance(value, str) else Item("", f"no string field {field!r} in this line"))
    return items


def fingerprint(path: os.PathLike) -> str:
    """The sha256 of the input's bytes (a changed input makes old parts useless)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class PartsFolder:
    """``OUTPUT.parts/``: the manifest and one part file per finished block."""

    def __init__(self, output: os.PathLike) -> None:
        self.output = Path(output)
        self.folder = self.output.with_name(self.output.name + ".parts")

    def part(self, block: int) -> Path:
        return self.folder / f"part-{block:05d}.jsonl"

    def open(self, manifest: Dict[str, Any]) -> None:
        """Start the job, or resume it when the folder's manifest is ``manifest``; another job's parts: an error."""
        path = self.folder / MANIFEST
        if path.is_file():
            try:
                found = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                found = None
            if found != manifest:
                raise CorpusError(f"{self.folder} holds the parts of another job (other input, options or block "
                                  "size): delete it, or write to another OUTPUT")
            return
        if self.folder.exists() and any(self.folder.iterdir()):
            raise CorpusError(f"{self.folder} exists and has no {MANIFEST}: delete it, or write to another OUTPUT")
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")

    def done(self, blocks: int) -> List[int]:
        """The blocks (of ``blocks``) that have their part file."""
        return [b for b in range(blocks) if self.part(b).is_file()]

    def write(self, block: int, rows: List[Dict[str, Any]]) -> None:
        """Block ``block``'s rows as its part file, whole or not at all."""
        _write_atomic(self.part(block), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))

    def rows(self, blocks: int) -> Iterator[Dict[str, Any]]:
        """Every row of every part, in input order."""
        for block in range(blocks):
            with open(self.part(block), encoding="utf-8") as fh:
                for line in fh:
                    yield json.loads(line)

    def join(self, blocks: int, jsonl: bool) -> List[Dict[str, Any]]:
        """Write OUTPUT from the parts (text: one translation per line, a bad line empty; JSON lines: each row),
        remove the parts folder, and return the rows that carry an error."""
        bad: List[Dict[str, Any]] = []
        tmp = self.output.with_name(self.output.name + ".tmp")
        opener = gzip.open if self.output.name.endswith(".gz") else open
        with opener(tmp, "wt", encoding="utf-8", newline="\n") as out:
            for row in self.rows(blocks):
                if row.get("error"):
                    bad.append(row)
                out.write(json.dumps(row, ensure_ascii=False) + "\n" if jsonl else _LINE_BREAKS.sub(" ", row["text"])
                          + "\n")
        os.replace(tmp, self.output)
        shutil.rmtree(self.folder)
        return bad


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a reader (or a resumed job) sees the whole file or none


def blocks_of(items: List[Item], size: int) -> List[List[Item]]:
    """``items`` cut into blocks of ``size`` (the last one shorter)."""
    if size < 1:
        raise CorpusError(f"--block-lines must be >= 1, got {size}")
    return [items[start:start + size] for start in range(0, len(items), size)]
