"""A project's own translations as sentence pairs: gettext catalogs, TMX 1.4, TSV, Moses-style parallel files and
the export of the server's suggestions, for ``python -m transformer_hub adapt``.

Each reader returns a ``UserFile``: its pairs and the direction the file itself states (a catalog's ``Language``
header with English sources, a TMX's ``srclang`` and ``xml:lang``s, two files' language suffixes, an export
folder's ``src-tgt`` name) or ``None`` where it states none; ``read_directions`` settles each file's direction
(the command line's ``--src-lang``/``--tgt-lang`` first) and groups the files by it (``de.po``, ``fr.po``: two
directions), and refuses in one line what it cannot read.  ``hold_out_directions`` sets aside a seeded share of the
source sentences, the same in every direction, so that no held-out source is trained on in any.
"""
from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from lxml import etree

from ..formats.gettext import parse_catalog
from ..formats.layout import DocumentError
from ..text.placeholders import accelerator_marker, strip_accelerator
from .data import DataError, read_lines, read_parallel

Pair = Tuple[str, str]
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_LANGUAGE = re.compile(r"^([A-Za-z]{2,3})(?:[-_@.].*)?$")
_INLINE_CODES = {"bpt", "ept", "ph", "it", "ut", "sub"}  # TMX inline elements whose content is native markup


@dataclass(frozen=True)
class UserFile:
    """One file's pairs, the direction it states (``None`` where it states none) and how it was read."""

    path: str
    kind: str
    pairs: List[Pair]
    src_lang: Optional[str] = None
    tgt_lang: Optional[str] = None

    def describe(self) -> Dict[str, object]:
        return {"file": Path(self.path).name, "format": self.kind, "pairs": len(self.pairs)}


@dataclass(frozen=True)
class UserData:
    """Every file's pairs in one direction."""

    files: List[UserFile]
    src_lang: str
    tgt_lang: str

    @property
    def pairs(self) -> List[Pair]:
        return [pair for f in self.files for pair in f.pairs]

    @property
    def name(self) -> str:
        """``en-de``."""
        return f"{self.src_lang}-{self.tgt_lang}"


def language_code(value: Optional[str]) -> Optional[str]:
    """``de_DE``, ``de-DE``, ``DE`` -> ``de``; None for an empty or unreadable code."""
    found = _LANGUAGE.match((value or "").strip())
    return found.group(1).lower() if found else None


def read_po(path: str, src_lang: Optional[str], tgt_lang: Optional[str]) -> UserFile:
    """A catalog's translated entries (fuzzy, obsolete and untranslated ones skipped; a plural entry gives its
    singular and plural pairs), without their menu accelerators (``_File``: what the model is given when it
    translates a catalog, ``formats.gettext``); the target language from the header's ``Language``, the source
    English."""
    try:
        catalog = parse_catalog(Path(path).read_bytes())
    except DocumentError as exc:
        raise DataError(f"{path}: {exc}") from None
    entries = catalog.translated_entries()
    marker = accelerator_marker([e.msgid for e in entries])  # taken off as the catalog's translation takes it off

    def bare(text: str) -> str:
        return strip_accelerator(text, marker)[0] if marker else text

    pairs: List[Pair] = []
    for entry in entries:
        if entry.msgid_plural:
            forms = [entry.msgstr_plural.get(k, "") for k in sorted(entry.msgstr_plural)]
            pairs += [(bare(s), bare(t)) for s, t in zip((entry.msgid, entry.msgid_plural), forms)
                      if s.strip() and t.strip()]
        elif entry.msgid.strip() and entry.msgstr.strip():
            pairs.append((bare(entry.msgid), bare(entry.msgstr)))
    return UserFile(path, "po", pairs, "en", language_code(catalog.metadata.get("Language")))


def _segment_text(seg) -> str:
    """A TMX ``<seg>``'s text: its own text and that of ``<hi>``, without the native codes of inline elements."""
    parts = [seg.text or ""]
    for child in seg:  # an unresolved entity (never expanded) is no element: only the text after it counts
        if _element_name(child) not in _INLINE_CODES and _element_name(child) is not None:
            parts.append(_segment_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _element_name(node) -> Optional[str]:
    return etree.QName(node).localname if isinstance(node.tag, str) else None


def read_tmx(path: str, src_lang: Optional[str], tgt_lang: Optional[str]) -> UserFile:
    """The ``<tu>``s of a TMX file holding both languages (other languages ignored); the source language from
    the header's ``srclang``, the target the one other language when there is only one. Entities are never
    resolved, and no DTD or network is read."""
    units: List[Dict[str, str]] = []
    header_src = None
    try:
        for _, element in etree.iterparse(path, events=("end",), resolve_entities=False, no_network=True,
                                          load_dtd=False, huge_tree=False, remove_comments=True, remove_pis=True):
            name = _element_name(element)
            if name == "header":
                header_src = language_code(element.get("srclang"))
            elif name == "tu":
                unit = {}
                for tuv in element:
                    lang = language_code(tuv.get(XML_LANG) or tuv.get("lang"))
                    seg = next((c for c in tuv if _element_name(c) == "seg"), None)
                    if lang and seg is not None and lang not in unit:
                        unit[lang] = " ".join(_segment_text(seg).split())
                units.append(unit)
                element.clear(keep_tail=False)
    except (etree.XMLSyntaxError, OSError) as exc:
        raise DataError(f"{path}: not a readable TMX file ({str(exc).splitlines()[0] if str(exc) else exc})") from None
    source = src_lang or header_src
    if source is None:
        raise DataError(f"{path}: the TMX header names no srclang: give --src-lang")
    target = tgt_lang or _only_other(path, units, source)
    pairs = [(u[source], u[target]) for u in units if u.get(source, "").strip() and u.get(target, "").strip()]
    return UserFile(path, "tmx", pairs, source, target)


def _only_other(path: str, units: List[Dict[str, str]], source: str) -> str:
    others = sorted({lang for unit in units for lang in unit} - {source})
    if len(others) != 1:
        raise DataError(f"{path}: the TMX holds the languages {', '.join(others) or 'none'} besides {source}: "
                        "choose the target with --tgt-lang")
    return others[0]


def read_tsv(path: str, src_lang: Optional[str], tgt_lang: Optional[str]) -> UserFile:
    """``source<TAB>target`` lines (empty lines skipped); a line without exactly one tab is refused by number."""
    pairs = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            raise DataError(f"{path}:{number}: expected source<TAB>target, found {len(fields)} field(s)"
                            + (" with an empty side" if len(fields) == 2 else ""))
        pairs.append((fields[0], fields[1]))
    return UserFile(path, "tsv", pairs)


def read_moses(path: str, src_lang: Optional[str], tgt_lang: Optional[str]) -> UserFile:
    """``SOURCE_FILE,TARGET_FILE``: two aligned files (one sentence a line, the same count); the languages from
    their suffixes (``corpus.en``, ``corpus.de.gz``) when they have them."""
    src_path, tgt_path = path.split(",", 1)
    return UserFile(path, "parallel", read_parallel(src_path, tgt_path), _suffix(src_path), _suffix(tgt_path))


def _suffix(path: str) -> Optional[str]:
    name = Path(path).name.removesuffix(".gz")
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return suffix if re.fullmatch(r"[a-z]{2,3}", suffix) else None


def read_suggestions(path: str, src_lang: Optional[str], tgt_lang: Optional[str]) -> UserFile:
    """The folder ``python -m transformer_hub suggestions export`` writes: ``src-tgt/train.src`` and
    ``train.tgt`` per direction (the folder itself or one of its direction folders; the direction asked for,
    or the only one there is)."""
    folder = Path(path)
    found = {tuple(d.name.split("-")): d for d in sorted(folder.iterdir()) if d.is_dir()
             and re.fullmatch(r"[a-z]{2,3}-[a-z]{2,3}", d.name)}
    if re.fullmatch(r"[a-z]{2,3}-[a-z]{2,3}", folder.name):
        found = {tuple(folder.name.split("-")): folder}
    wanted = [pair for pair in found if (src_lang in (None, pair[0])) and (tgt_lang in (None, pair[1]))]
    if len(wanted) != 1:
        said = ", ".join("-".join(p) for p in found) or "none"
        raise DataError(f"{path}: not one suggestions export for the direction (it holds {said}): give "
                        "--src-lang/--tgt-lang, or the export's direction folder")
    source, target = wanted[0]
    directory = found[wanted[0]]
    pairs = read_parallel(directory / f"train.{source}", directory / f"train.{target}")
    return UserFile(path, "suggestions", pairs, source, target)


Reader = Callable[[str, Optional[str], Optional[str]], UserFile]
READERS: Dict[str, Reader] = {".po": read_po, ".tmx": read_tmx, ".tsv": read_tsv, ".txt": read_tsv}


def reader_for(path: str) -> Reader:
    """The reader of ``path`` by its form: a folder (a suggestions export), two files joined by a comma, or a
    file's suffix; a refusal naming what is read."""
    if "," in path and not Path(path).exists():
        return read_moses
    if Path(path).is_dir():
        return read_suggestions
    if not Path(path).is_file():
        raise DataError(f"cannot read {path}: no such file")
    reader = READERS.get(Path(path).suffix.lower())
    if reader is None:
        raise DataError(f"{path}: not a format adapt reads: give .po, .tmx, .tsv, two aligned files as "
                        "SOURCE,TARGET, or a folder written by `suggestions export`")
    return reader


def read_user_data(paths: Sequence[str], src_lang: Optional[str] = None,
                   tgt_lang: Optional[str] = None) -> UserData:
    """Every file's pairs in one direction (``read_directions``, which must find one)."""
    found = read_directions(paths, src_lang, tgt_lang)
    if len(found) > 1:
        raise DataError(f"the files are in several directions ({', '.join(d.name for d in found)}): this reads "
                        "one direction at a time")
    return found[0]


def read_directions(paths: Sequence[str], src_lang: Optional[str] = None,
                    tgt_lang: Optional[str] = None) -> List[UserData]:
    """Every file's pairs, by direction (in the order the files come): each file's direction is what it states,
    where ``src_lang``/``tgt_lang`` are given what they say (a file that states another is refused), else for a
    file that states nothing the one language every other file states (refused when they state several)."""
    files = [reader_for(path)(path, src_lang, tgt_lang) for path in paths]
    sides = []
    for side, given in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
        stated = {getattr(f, side): f.path for f in files if getattr(f, side)}
        option, what = f"--{side.replace('_', '-')}", "source" if side == "src_lang" else "target"
        if given is not None and set(stated) - {given}:
            other = next(lang for lang in stated if lang != given)
            raise DataError(f"{stated[other]} is in {other}, but {option} says {given}")
        if not (given or stated):
            raise DataError(f"no file says its {what} language: give {option}")
        silent = next((f.path for f in files if not getattr(f, side)), None)
        if given is None and len(stated) > 1 and silent is not None:
            raise DataError(f"{silent} does not say its {what} language and the other files are in several "
                            f"({', '.join(sorted(stated))}): adapt it in a run of its own, with {option}")
        sides.append([getattr(f, side) or given or next(iter(stated)) for f in files])
    for f in files:
        if not f.pairs:
            raise DataError(f"{f.path}: no translated pairs to learn from")
    directions: Dict[Tuple[str, str], List[UserFile]] = {}
    for f, src, tgt in zip(files, *sides):
        directions.setdefault((src, tgt), []).append(f)
    return [UserData(group, src, tgt) for (src, tgt), group in directions.items()]


def hold_out_directions(directions: Sequence[Sequence[Pair]], share: float, seed: int,
                        names: Sequence[str] = ()) -> List[Tuple[List[Pair], List[Pair]]]:
    """Per direction (train, held out): the distinct source sentences of every direction shuffled once
    (seeded), the first ``share`` of them held out in each direction that has them, so a source held out in one
    direction is trained on in none (with one direction: ``hold_out``).  ``names`` name the directions in a
    refusal."""
    distinct = [list(dict.fromkeys(pairs)) for pairs in directions]
    sources = list(dict.fromkeys(s for pairs in distinct for s, _ in pairs))
    random.Random(seed).shuffle(sources)
    held = set(sources[:math.ceil(share * len(sources))])
    split = []
    for k, pairs in enumerate(distinct):
        train, kept = [p for p in pairs if p[0] not in held], [p for p in pairs if p[0] in held]
        if not train or not kept:
            where = f"{names[k] if k < len(names) else f'direction {k + 1}'}: " if len(distinct) > 1 else ""
            among = f" (of {len(sources)} in {len(distinct)} directions)" if len(distinct) > 1 else ""
            raise DataError(f"{where}{len({s for s, _ in pairs})} distinct source sentence(s){among}: too few to "
                            f"hold out {share:.0%} and train on the rest")
        split.append((train, kept))
    return split


def hold_out(pairs: Sequence[Pair], share: float, seed: int) -> Tuple[List[Pair], List[Pair]]:
    """(train, held out): the distinct pairs, a seeded ``share`` of their source sentences held out (every
    translation of a held-out source goes with it, so none is trained on)."""
    return hold_out_directions([pairs], share, seed)[0]
