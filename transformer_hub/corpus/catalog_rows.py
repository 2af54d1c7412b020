"""A package's message catalogs into aligned rows: what is kept, what is dropped, and what is cleaned.

Every catalog language of a package is read (``mo.read_mo``); an entry is keyed by (catalog, msgctxt, msgid) and
aligned across languages through it, so a row holds the English msgid and each language's translation, or ""
where a language lacks it.  A plural entry gives two rows: the singular (msgid, first form) and the plural
(msgid_plural, the form for n = 2, the second in German's, French's and Czech's rules).

Cleaning, per row: whitespace runs become one space; an accelerator mark (``_`` as GTK writes it, ``&`` as Qt)
is removed where the English has exactly one outside its placeholders, and from each translation that has exactly
one too (the originals stay in the row's ``raw``); placeholders (``%s``, ``%(name)s``, ``{0}``, ``<b>``,
``&amp;``) stay verbatim.  A row goes when its English is only markup, placeholders and numbers, an identifier
(``app.menu.open``), or clearly another language; a translation goes when it is empty, the English itself,
wordless, of an absurd length beside the English (``rows.rejection``'s rule), or clearly another language
(``text.detection``, on texts long enough to tell).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ..text.detection import detect_language
from ..text.segmentation import has_words, letter_count
from .mo import Catalog
from .rows import absurd_length

# printf (%s, %5.2f, %1$s, %(name)s, %%), braces ({0}, {name}), shell ($HOME, ${x}), markup (<b>) and entities
PLACEHOLDER = re.compile(r"%(?:\([^()\s]*\))?[-+ #0']*(?:\d+\$)?(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|ll|[hlLqjzt])?"
                         r"[diouxXeEfFgGaAcCsSpn%@]|\{[^{}\s]*\}|\$\{[^{}]*\}|\$\w+|<[^<>\n]*>"
                         r"|&(?:#\d+|#x[0-9a-fA-F]+|\w+);")
MARKERS = {"_": re.compile(r"(?<!_)_(?=[^\W_])"), "&": re.compile(r"(?<!&)&(?=[^\W_])")}
IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[._:-][A-Za-z0-9]+)*[._:][A-Za-z0-9]+(?:[._:-][A-Za-z0-9]+)*")
DETECT_LETTERS = 20  # fewer letters: too short to drop on its detected language (and the detector costs ~1 ms a text)
DETECT_CONFIDENCE = 0.9  # the other language's probability among en, de, fr, cs needed to drop a text


@dataclass(frozen=True)
class Entry:
    """One aligned row of a package: where it is from, its cleaned ``texts`` (English first, "" absent) and the
    ``raw`` msgid and msgstrs they were cleaned from (None absent)."""

    package: str
    catalog: str
    context: Optional[str]
    form: str  # "singular" or "plural"
    texts: Tuple[str, ...]
    raw: Tuple[Optional[str], ...]


def catalog_texts(catalog: Catalog) -> Iterable[Tuple[Optional[str], str, str, str]]:
    """``(context, form, english, translation)`` of each translatable text of a catalog, plural forms apart."""
    for message in catalog.messages:
        yield message.context, "singular", message.msgid, message.msgstr[0]
        if message.msgid_plural is not None and len(message.msgstr) > 1:
            yield message.context, "plural", message.msgid_plural, message.msgstr[1]


def _markers(text: str, kind: str) -> List[int]:
    """Positions of accelerator marks ``kind`` in ``text`` outside its placeholders."""
    protected = [m.span() for m in PLACEHOLDER.finditer(text)]
    return [m.start() for m in MARKERS[kind].finditer(text) if not any(a <= m.start() < b for a, b in protected)]


def accelerator_kind(english: str) -> Optional[str]:
    """``_`` or ``&`` when the English has exactly one such mark outside its placeholders, else None."""
    return next((kind for kind in MARKERS if len(_markers(english, kind)) == 1), None)


def without_accelerator(text: str, kind: Optional[str]) -> str:
    """``text`` less its accelerator mark of ``kind`` when it has exactly one (``&&``, Qt's literal &, becomes &)."""
    if kind is None:
        return text
    found = _markers(text, kind)
    if len(found) != 1:
        return text
    text = text[:found[0]] + text[found[0] + 1:]
    return text.replace("&&", "&") if kind == "&" else text


def bare(text: str) -> str:
    """``text`` without its placeholders and markup (what is left to translate)."""
    return PLACEHOLDER.sub(" ", text)


def _clean(text: str, kind: Optional[str]) -> str:
    return " ".join(without_accelerator(text, kind).split())


def detections(texts: Iterable[str], langs: Sequence[str]) -> Dict[str, Optional[Tuple[str, float]]]:
    """Each distinct text's detected language among ``langs`` and its confidence (one detector call for all:
    the detector costs about a millisecond a text), or None when it is too short to tell (``DETECT_LETTERS``)."""
    unique = sorted({bare(text) for text in texts if text})
    long_enough = [text for text in unique if letter_count(text) >= DETECT_LETTERS]
    found = dict(zip(long_enough, detect_language(long_enough, list(langs)))) if long_enough else {}
    return {text: (found[text].code, found[text].confidence) if text in found else None for text in unique}


def _other_language(text: str, lang: str, detected: Dict[str, Optional[Tuple[str, float]]]) -> bool:
    """True when ``text`` is clearly another language than ``lang`` (``detected``: from ``detections``)."""
    found = detected.get(bare(text))
    return found is not None and found[0] != lang and found[1] >= DETECT_CONFIDENCE


def english_rejection(english: str, lang: str, detected: Dict[str, Optional[Tuple[str, float]]]) -> Optional[str]:
    """Why a cleaned English text makes no row, or None."""
    if not has_words(bare(english)):
        return "English: markup, placeholders or numbers only"
    if IDENTIFIER.fullmatch(english):
        return "English: an identifier"
    if _other_language(english, lang, detected):
        return "English: another language"
    return None


def target_rejection(english: str, text: str, lang: str,
                     detected: Dict[str, Optional[Tuple[str, float]]]) -> Optional[str]:
    """Why a cleaned translation is dropped from its row, or None."""
    if not text:
        return "untranslated or empty"
    if text == english:
        return "the English itself"
    if not has_words(bare(text)):
        return "markup, placeholders or numbers only"
    if absurd_length(len(english), len(text)):
        return "length ratio"
    if _other_language(text, lang, detected):
        return "another language"
    return None


def cleaned_texts(english: str, translations: Dict[str, str], langs: Sequence[str]) -> Dict[str, str]:
    """The entry's texts by language, whitespace and accelerator marks removed (English's decides the mark)."""
    kind = accelerator_kind(english)
    return {lang: _clean(text, kind) for lang, text in ((langs[0], english), *translations.items())}


def clean_entry(texts: Dict[str, str], langs: Sequence[str], detected: Dict[str, Optional[Tuple[str, float]]],
                dropped: Counter) -> Optional[Tuple[str, ...]]:
    """The row of one entry's ``cleaned_texts`` (``langs[0]`` is English; "" where a translation is missing or
    dropped), or None when nothing is left; reasons are counted in ``dropped``."""
    english = texts[langs[0]]
    reason = english_rejection(english, langs[0], detected)
    if reason is not None:
        dropped[f"entry: {reason}"] += 1
        return None
    row = [english]
    for lang in langs[1:]:
        reason = target_rejection(english, texts[lang], lang, detected) if lang in texts else "missing"
        if reason is not None and lang in texts:
            dropped[f"{lang}: {reason}"] += 1
        row.append("" if reason else texts[lang])
    if not any(row[1:]):
        dropped["entry: no translation left"] += 1
        return None
    return tuple(row)


def package_entries(package: str, catalogs: Dict[str, Dict[str, Catalog]], langs: Sequence[str],
                    dropped: Counter) -> List[Entry]:
    """The rows of one package from its ``catalogs`` ({language: {catalog name: catalog}}), in key order."""
    aligned: Dict[Tuple[str, str, str, str], Dict[str, str]] = {}
    for lang in langs[1:]:
        for name, catalog in sorted(catalogs.get(lang, {}).items()):
            for context, form, english, translation in catalog_texts(catalog):
                aligned.setdefault((name, context or "", form, english), {}).setdefault(lang, translation)
    keys = sorted(aligned)
    cleaned = [cleaned_texts(key[3], aligned[key], langs) for key in keys]
    detected = detections((text for texts in cleaned for text in texts.values()), langs)
    entries = []
    for (name, context, form, english), texts in zip(keys, cleaned):
        translations = aligned[(name, context, form, english)]
        texts = clean_entry(texts, langs, detected, dropped)
        if texts is not None:
            entries.append(Entry(package, name, context or None, form, texts,
                                 (english, *(translations.get(lang) for lang in langs[1:]))))
    return entries
