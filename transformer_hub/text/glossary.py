"""Glossaries: source term -> target term entries that translations must follow.

The formats are DeepL's ``entries_format``: ``tsv`` (``source<TAB>target`` per line) and ``csv``
(``source,target`` or ``source,target,source_lang,target_lang`` per row, RFC 4180 quoting); in Python a
dict ``{source: target}``.  A term matches in a source sentence case-insensitively on word boundaries
(a multi-word term's words separated by any whitespace; punctuation next to a term does not stop it):
the longest matches are taken first, and a match never overlaps another.  Each matched entry's target
term becomes a constraint of that sentence (``translate_texts(..., glossary=...)``), and the result lists the
entries that applied.

    glossary = Glossary.parse("bicycle\\tFahrrad\\nred car\\tRotwagen\\n")
    glossary.match("A red car and a Bicycle.")   # -> [Match(red car -> Rotwagen, 2..9), Match(...)]
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

MAX_ENTRIES = 5000  # per glossary
MAX_TERM_CHARS = 200  # per term, source or target
MAX_BYTES = 1_000_000  # the whole text of a glossary
FORMATS = ("tsv", "csv")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class Entry:
    """One glossary entry; ``source_lang`` / ``target_lang`` None: any direction."""

    source: str
    target: str
    source_lang: Optional[str] = None
    target_lang: Optional[str] = None

    def to_dict(self) -> Dict[str, str]:
        return {"source": self.source, "target": self.target}


@dataclass(frozen=True)
class Match:
    """An entry found in a sentence at characters ``start``..``end``."""

    entry: Entry
    start: int
    end: int


def _term(text: object, where: str, side: str) -> str:
    if not isinstance(text, str):
        raise ValueError(f"glossary {where}: the {side} term must be text, got {type(text).__name__}")
    term = " ".join(text.split())
    if not term:
        raise ValueError(f"glossary {where}: the {side} term is empty")
    if len(term) > MAX_TERM_CHARS:
        raise ValueError(f"glossary {where}: the {side} term is {len(term)} characters, more than the "
                         f"{MAX_TERM_CHARS} a term may have")
    if _CONTROL.search(term):
        raise ValueError(f"glossary {where}: the {side} term holds a control character")
    return term


class Glossary:
    """Validated entries (at most ``MAX_ENTRIES``, one per source term and direction, case-insensitively)."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        self.entries: Tuple[Entry, ...] = tuple(entries)
        if len(self.entries) > MAX_ENTRIES:
            raise ValueError(f"the glossary has {len(self.entries)} entries, more than the {MAX_ENTRIES} allowed")
        seen: Dict[tuple, int] = {}
        for i, e in enumerate(self.entries, 1):
            key = (e.source.lower(), e.source_lang, e.target_lang)
            if key in seen:
                raise ValueError(f"glossary entry {i}: the source term {e.source!r} is already entry {seen[key]}")
            seen[key] = i

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"Glossary({len(self.entries)} entries)"

    @classmethod
    def from_dict(cls, entries: Mapping[str, str]) -> "Glossary":
        if not isinstance(entries, Mapping):
            raise ValueError(f"a glossary dict maps source terms to target terms, got {type(entries).__name__}")
        if len(entries) > MAX_ENTRIES:
            raise ValueError(f"the glossary has {len(entries)} entries, more than the {MAX_ENTRIES} allowed")
        return cls(Entry(_term(s, f"entry {s!r}", "source"), _term(t, f"entry {s!r}", "target"))
                   for s, t in entries.items())

    @classmethod
    def parse(cls, text: str, entries_format: str = "tsv") -> "Glossary":
        """A glossary from DeepL-style ``tsv`` or ``csv`` text; ``ValueError`` naming the line at fault."""
        if entries_format not in FORMATS:
            raise ValueError(f"entries_format must be one of {', '.join(FORMATS)}, got {entries_format!r}")
        if not isinstance(text, str):
            raise ValueError(f"a glossary is text, got {type(text).__name__}")
        if len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
            raise ValueError(f"the glossary is larger than {MAX_BYTES:,} bytes")
        lines = text.splitlines()
        if len(lines) > 2 * MAX_ENTRIES:  # blank lines allowed, but not without bound
            raise ValueError(f"the glossary has {len(lines)} lines, more than the {MAX_ENTRIES} entries allowed")
        rows = _csv_rows(text) if entries_format == "csv" else ((n, line.split("\t")) for n, line in
                                                                 enumerate(lines, 1))
        entries = []
        for n, cells in rows:
            if not any(c.strip() for c in cells):
                continue
            entries.append(_entry(n, cells, entries_format))
            if len(entries) > MAX_ENTRIES:
                raise ValueError(f"the glossary has more than the {MAX_ENTRIES} entries allowed")
        if not entries:
            raise ValueError("the glossary has no entries")
        return cls(entries)

    @classmethod
    def load(cls, path: Union[str, Path]) -> "Glossary":
        """A ``.tsv`` or ``.csv`` file (the suffix says which; anything else is read as TSV)."""
        path = Path(path)
        if path.is_file() and path.stat().st_size > MAX_BYTES:
            raise ValueError(f"the glossary {path} is larger than {MAX_BYTES:,} bytes")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read the glossary {path}: {exc}") from exc
        return cls.parse(text, "csv" if path.suffix.lower() == ".csv" else "tsv")

    @classmethod
    def coerce(cls, glossary: Union["Glossary", Mapping[str, str], str]) -> "Glossary":
        """A Glossary as given, from a dict, or from TSV text."""
        if isinstance(glossary, Glossary):
            return glossary
        if isinstance(glossary, str):
            return cls.parse(glossary)
        return cls.from_dict(glossary)

    def for_pair(self, src_lang: Optional[str], tgt_lang: Optional[str]) -> "Glossary":
        """The entries that apply from ``src_lang`` to ``tgt_lang`` (entries without languages always do)."""
        return Glossary(e for e in self.entries if (e.source_lang in (None, src_lang) or src_lang is None)
                        and (e.target_lang in (None, tgt_lang) or tgt_lang is None))

    @cached_property
    def _pattern(self) -> Optional["re.Pattern"]:
        terms = sorted({e.source.lower() for e in self.entries}, key=len, reverse=True)
        if not terms:
            return None
        alternatives = "|".join(r"\s+".join(map(re.escape, t.split())) for t in terms)
        # a lookahead finds the longest term starting at every position, overlapping ones included
        return re.compile(rf"(?<!\w)(?=({alternatives})(?!\w))", re.IGNORECASE)

    @cached_property
    def _by_term(self) -> Dict[str, Entry]:
        return {" ".join(e.source.lower().split()): e for e in self.entries}

    def match(self, sentence: str) -> List[Match]:
        """The entries whose source term occurs in ``sentence``: longest first, no overlaps, in text order."""
        if self._pattern is None:
            return []
        found = [(m.start(), m.start() + len(m.group(1)), m.group(1)) for m in self._pattern.finditer(sentence)]
        taken: List[Match] = []
        for start, end, text in sorted(found, key=lambda f: (f[0] - f[1], f[0])):
            if all(end <= t.start or start >= t.end for t in taken):
                taken.append(Match(self._by_term[" ".join(text.lower().split())], start, end))
        return sorted(taken, key=lambda t: t.start)

    def constraints(self, sentences: Sequence[str]) -> Tuple[List[List[str]], List[List[Entry]]]:
        """Per sentence: the target terms it must contain, and the entries that put them there."""
        applied = [list(dict.fromkeys(m.entry for m in self.match(s))) for s in sentences]
        return [list(dict.fromkeys(e.target for e in entries)) for entries in applied], applied


def _csv_rows(text: str):
    reader = csv.reader(io.StringIO(text), strict=True)
    try:
        for cells in reader:
            yield reader.line_num, cells
    except csv.Error as exc:
        raise ValueError(f"glossary line {reader.line_num}: not valid CSV ({exc})") from exc


def _entry(n: int, cells: List[str], entries_format: str) -> Entry:
    where = f"line {n}"
    allowed = (2,) if entries_format == "tsv" else (2, 4)
    if len(cells) not in allowed:
        shape = "source<TAB>target" if entries_format == "tsv" else "source,target[,source_lang,target_lang]"
        raise ValueError(f"glossary {where}: expected {shape}, got {len(cells)} field{'s' * (len(cells) != 1)}")
    langs = [c.strip() or None for c in cells[2:4]] or [None, None]
    return Entry(_term(cells[0], where, "source"), _term(cells[1], where, "target"), *langs)
