"""gettext catalogs (``.po``, ``.pot``): every entry without a translation translated, nothing else touched.

The catalog is parsed by ``polib``. Each entry to translate gives its ``msgid`` (and ``msgid_plural``) as texts;
the translations go to ``msgstr`` (or to every ``msgstr[i]`` of the target's plural forms: Czech has three, the
singular's translation in form 0 and the plural's in the others) and the entry is flagged ``fuzzy``, gettext's
"needs review", so no machine output reaches users unread. Its menu accelerator (``_File``) is taken off before
translation and put back on a letter of the translation. An entry whose translation lost a placeholder, or moved
a variable (``%s``, ``%1``, ``%1$s``, ``$(VAR)``) or a tag out of the source's order, stays untranslated:
translators run pofilter on catalogs, and it reads any such move as an error. Entries already translated are kept (unless
``overwrite``), and so are the header's other fields, comments, references, flags, contexts and obsolete entries;
the header gets the target's ``Language`` and ``Plural-Forms``, ``X-Generator`` and the revision date.

A catalog is refused with one line when it is not UTF-8 or the charset its header names, holds more than
``MAX_ENTRIES`` entries, or does not parse.
"""
from __future__ import annotations

import codecs
import re
import time
from dataclasses import dataclass
from typing import List, Optional, Tuple

import polib

from ..text.placeholders import accelerator_marker, place_accelerator, same_pieces, strip_accelerator
from .layout import Document, DocumentError, Translated, register_format

MAX_ENTRIES = 20_000
GENERATOR = "transformer_hub"
PLURAL_FORMS = {"en": "nplurals=2; plural=(n != 1);", "de": "nplurals=2; plural=(n != 1);",
                "fr": "nplurals=2; plural=(n > 1);",
                "cs": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;"}
_CHARSET = re.compile(rb"charset=([\w.:-]{1,40})")
_NPLURALS = re.compile(r"nplurals\s*=\s*(\d+)")


@dataclass
class _Unit:
    """One entry to translate: its texts (msgid, and msgid_plural when it has one) without the accelerator."""

    entry: polib.POEntry
    texts: Tuple[str, ...]
    letter: Optional[str]


def parse_catalog(data: bytes) -> polib.POFile:
    """The catalog in ``data``, decoded by the charset its header names (UTF-8 when it names none)."""
    found = _CHARSET.search(data[:4096])
    charset = found.group(1).decode("ascii") if found else "utf-8"
    if charset.upper() == "CHARSET":  # a fresh .pot's placeholder
        charset = "utf-8"
    try:
        codecs.lookup(charset)
        text = data.decode(charset)
    except LookupError:
        raise DocumentError(f"The catalog's header names the charset {charset!r}, which is not one Python knows: "
                            "convert it to UTF-8 (msgconv --to-code=UTF-8) and send it again.") from None
    except UnicodeDecodeError as exc:
        raise DocumentError(f"The catalog is not valid {charset} (byte 0x{data[exc.start]:02x} at position "
                            f"{exc.start}): fix its charset and send it again.") from None
    if text.count("msgid ") > MAX_ENTRIES + 1:  # the header is an entry too
        raise DocumentError(f"The catalog holds more than {MAX_ENTRIES:,} entries: split it and send the parts.")
    try:
        # The trailing newline keeps polib from taking a one-line upload for a path on the server and reading it.
        catalog = polib.pofile(text.lstrip("\ufeff") + "\n", encoding="utf-8")
    except (IOError, ValueError, UnicodeError) as exc:
        raise DocumentError(f"The catalog does not parse: {str(exc).splitlines()[0] if str(exc) else exc}.") from None
    if len(catalog) > MAX_ENTRIES:
        raise DocumentError(f"The catalog holds {len(catalog):,} entries, the limit is {MAX_ENTRIES:,}: split it.")
    keys = set()
    for entry in catalog:  # msgfmt refuses a catalog that defines a message twice; so does this
        key = (entry.msgctxt, entry.msgid, entry.obsolete)
        if key in keys:
            raise DocumentError(f"The catalog defines the message {entry.msgid[:60]!r} twice (line {entry.linenum}): "
                                "merge the two entries (msguniq) and send it again.")
        keys.add(key)
    return catalog


def read(data: bytes, tgt_lang: Optional[str] = None, overwrite: bool = False) -> Document:
    """The catalog's entries to translate (for ``tgt_lang``'s plural forms), and how to write it back."""
    catalog = parse_catalog(data)
    entries = [e for e in catalog if not e.obsolete and e.msgid and (overwrite or not _has_translation(e))]
    marker = accelerator_marker([e.msgid for e in entries])
    units = []
    for entry in entries:
        if marker is not None and _marks(entry.msgid, marker) > 1:
            continue  # "use _1 or _2": which is the accelerator? a translator decides; pofilter would count both
        texts, letter = _strip(entry.msgid, marker)
        if entry.msgid_plural:
            texts = (texts[0], _strip(entry.msgid_plural, marker)[0][0])
        units.append(_Unit(entry, texts, letter))

    def write(done: List[Translated]) -> bytes:
        forms = _plural_count(catalog, tgt_lang)
        outputs = iter(done)
        for unit in units:
            translations = [next(outputs).target for _ in unit.texts]
            _fill(unit, translations, marker, forms)
        _update_header(catalog, tgt_lang)
        return str(catalog).encode("utf-8")

    return Document([text for unit in units for text in unit.texts], write)


def _has_translation(entry: polib.POEntry) -> bool:
    """Whether a translator wrote something, reviewed (``translated()``) or not (a fuzzy one)."""
    return bool(entry.msgstr) or any(entry.msgstr_plural.values())


def _marks(text: str, marker: str) -> int:
    """How many accelerator marks ``text`` holds (``_unmarked`` takes them all off)."""
    count = 0
    while True:
        text, letter = strip_accelerator(text, marker)
        if letter is None:
            return count
        count += 1


def _strip(text: str, marker: Optional[str]) -> Tuple[Tuple[str], Optional[str]]:
    if marker is None:
        return (text,), None
    stripped, letter = strip_accelerator(text, marker)
    return (stripped,), letter


def _fill(unit: _Unit, translations: List[str], marker: Optional[str], forms: int) -> None:
    """The entry's msgstr from its texts' translations; left as it was when one lost a placeholder."""
    entry = unit.entry
    sources = [entry.msgid] + ([entry.msgid_plural] if entry.msgid_plural else [])
    if marker is not None:
        translations = [place_accelerator(_unmarked(t, marker), marker, unit.letter) for t in translations]
        if unit.letter is not None and not all(strip_accelerator(t, marker)[1] for t in translations):
            return  # no letter to carry the accelerator: the entry waits for a translator
    if not all(t.strip() and t != s and same_pieces(s, t, keep_order=True) for s, t in zip(sources, translations)):
        return  # a broken format string would crash the program, one with its variables or tags moved fails the
        # catalog's checks (pofilter), the source is no translation: nothing is better
    if entry.msgid_plural:
        entry.msgstr_plural = {i: translations[0] if i == 0 else translations[1] for i in range(forms)}
    else:
        entry.msgstr = translations[0]
    if "fuzzy" not in entry.flags:
        entry.flags.insert(0, "fuzzy")


def _unmarked(text: str, marker: str) -> str:
    """``text`` without accelerator marks (a model's output may hold stray ones: one entry has one accelerator)."""
    for _ in range(_marks(text, marker)):
        text = strip_accelerator(text, marker)[0]
    return text


def _plural_count(catalog: polib.POFile, tgt_lang: Optional[str]) -> int:
    forms = PLURAL_FORMS.get(tgt_lang or "") or catalog.metadata.get("Plural-Forms", "")
    found = _NPLURALS.search(forms)
    return int(found.group(1)) if found else 2


def _update_header(catalog: polib.POFile, tgt_lang: Optional[str]) -> None:
    meta = catalog.metadata
    if tgt_lang:
        meta["Language"] = tgt_lang
        if tgt_lang in PLURAL_FORMS:
            meta["Plural-Forms"] = PLURAL_FORMS[tgt_lang]
    meta["X-Generator"] = GENERATOR
    meta["PO-Revision-Date"] = time.strftime("%Y-%m-%d %H:%M%z")
    meta.setdefault("Content-Type", "text/plain; charset=UTF-8")
    meta["Content-Type"] = re.sub(r"charset=[\w.:-]+", "charset=UTF-8", meta["Content-Type"])
    meta.setdefault("Content-Transfer-Encoding", "8bit")


FORMAT = register_format("gettext", "gettext catalog", (".po", ".pot"), read, order=80,
                         options=("tgt_lang", "overwrite"))
