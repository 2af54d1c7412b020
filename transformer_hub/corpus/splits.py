"""Rows into train, val and test by page, and the Multi30k layout on disk.

A page belongs to one split.  The pages are ordered by a hash of (seed, page); test takes pages from the front of
that order until it holds ``test_paragraphs`` paragraphs, then val until it holds ``val_paragraphs``, and train
has the rest.  A text that several pages share (the help embeds snippets, and repeats headings such as
"Example") goes where train sees it first: a row any of whose texts is on a train page is a train row, one on a
val page (and no train page) a val row, and test keeps only rows found on test pages alone, so no val or test
text, in any language, is in train.  Within a split a row repeated is kept once (val and test: a text repeated
in any language is kept once, so no sentence is scored twice).  An empty text is a language the row lacks: it
is no text and joins nothing.
"""
from __future__ import annotations

import gzip
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set

from ..errors import UserError
from .rows import Row

SPLITS = ("train", "val", "test")


class SplitError(UserError):
    """The corpus is too small for the splits asked for."""


@dataclass
class Splits:
    """The rows of each split, in page order, and the pages of each split."""

    rows: Dict[str, List[Row]]
    pages: Dict[str, List[str]]


def page_order(pages: Iterable[str], seed: int) -> List[str]:
    """``pages`` in an order fixed by ``seed`` alone (a hash per page: another page does not move the others)."""
    return sorted(set(pages), key=lambda page: (hashlib.sha256(f"{seed}:{page}".encode()).hexdigest(), page))


def _row_pages(rows: Sequence[Row]) -> Dict[int, FrozenSet[str]]:
    """Each row (by position) -> every page on which one of its texts is found, in the same language."""
    where: Dict[tuple, Set[str]] = {}
    for row in rows:
        for lang, text in enumerate(row.texts):
            if text:
                where.setdefault((lang, text), set()).add(row.page)
    return {i: frozenset().union(*(where[(lang, text)] for lang, text in enumerate(row.texts) if text))
            for i, row in enumerate(rows)}


def _kept(candidates: Iterable[int], rows: Sequence[Row], strict: bool) -> List[int]:
    """``candidates`` less repeats: the same texts (``strict``: any one text in the same language) seen before."""
    seen: Set[tuple] = set()
    kept = []
    for i in candidates:
        texts = rows[i].texts
        keys = [(lang, text) for lang, text in enumerate(texts) if text] if strict else [texts]
        if any(key in seen for key in keys):
            continue
        seen.update(keys)
        kept.append(i)
    return kept


def paragraph_count(rows: Sequence[Row]) -> int:
    """How many paragraphs ``rows`` come from (a split's size for ``split_by_page``)."""
    return len({row.paragraph for row in rows})


def split_by_page(rows: Sequence[Row], seed: int, val_paragraphs: int, test_paragraphs: int,
                  size: Callable[[Sequence[Row]], int] = paragraph_count) -> Splits:
    """Train, val and test by page (module docstring); ``rows`` are in page order.  Val and test grow until
    ``size`` of their rows reaches ``val_paragraphs`` and ``test_paragraphs``."""
    pages_of = _row_pages(rows)
    by_page: Dict[str, List[int]] = {}
    for i, row in enumerate(rows):
        by_page.setdefault(row.page, []).append(i)
    order = page_order(by_page, seed)
    chosen: Dict[str, Set[str]] = {"test": set(), "val": set()}

    def members(split: str) -> List[int]:
        allowed = chosen["test"] | chosen["val"] if split == "val" else chosen["test"]
        candidates = [i for page in sorted(chosen[split]) for i in by_page[page]
                      if pages_of[i] <= allowed and not (split == "val" and pages_of[i] <= chosen["test"])]
        return _kept(candidates, rows, strict=True)

    rest = iter(order)
    for split, wanted in (("test", test_paragraphs), ("val", val_paragraphs)):
        while size([rows[i] for i in members(split)]) < wanted:
            page = next(rest, None)
            if page is None or len(chosen["test"]) + len(chosen["val"]) + 2 > len(order):
                raise SplitError(f"the corpus has too few pages for {test_paragraphs} test and {val_paragraphs} "
                                 f"val paragraphs ({len(order)} pages): ask for fewer")
            chosen[split].add(page)
    train_pages = set(order) - chosen["test"] - chosen["val"]
    train = _kept((i for page in sorted(train_pages) for i in by_page[page]), rows, strict=False)
    picked = {"train": train, "val": members("val"), "test": members("test")}
    return Splits({split: [rows[i] for i in picked[split]] for split in SPLITS},
                  {"train": sorted(train_pages), "val": sorted(chosen["val"]), "test": sorted(chosen["test"])})


def gzip_lines(lines: Iterable[str]) -> bytes:
    """The lines, one a line, as gzip without a name or a time in its header (the same text, the same bytes)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as fh:
        for line in lines:
            fh.write(line.encode("utf-8") + b"\n")
    return buffer.getvalue()


def row_id(row: Row) -> str:
    return f"{row.page}#{row.key}"


def write_layout(out: Path, splits: Splits, langs: Sequence[str],
                 sides: Optional[Dict[str, Callable[[Row], str]]] = None) -> Dict[str, str]:
    """``{split}.{lang}.gz`` (one row a line) and a side file per entry of ``sides`` (default: ``{split}.ids.gz``,
    each row's ``page#key``), ``{split}.{name}.gz`` with ``sides[name](row)`` on each line, into ``out``; returns
    each file's sha256."""
    out.mkdir(parents=True, exist_ok=True)
    digests = {}
    for split, rows in splits.rows.items():
        columns = {lang: [row.texts[k] for row in rows] for k, lang in enumerate(langs)}
        for name, line in (sides or {"ids": row_id}).items():
            columns[name] = [line(row) for row in rows]
        for name, lines in columns.items():
            payload = gzip_lines(lines)
            (out / f"{split}.{name}.gz").write_bytes(payload)
            digests[f"{split}.{name}.gz"] = hashlib.sha256(payload).hexdigest()
    return digests
