"""Aligned texts into training rows: what is dropped, and where a paragraph becomes sentences.

A row holds one text per language, English first.  A paragraph is dropped when a language lacks it or has it
empty, when English has no words, when every language has the English text (code, names: nothing to
translate), when a language has the English text of four words or more (left untranslated; shorter identical
texts such as "Position" or "Ctrl+A" are translations), or when a language's text is absurdly longer or shorter
than the English one (a paragraph that says more, or less: misaligned).  A kept paragraph is cut into sentences
only where every language cuts it into the same number; otherwise it stays one row.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..text.segmentation import has_words, split_sentences

UNTRANSLATED_WORDS = 4  # an English text of this many words or more, found unchanged in a language: untranslated
LENGTH_RATIO = 2.5  # a text longer than LENGTH_RATIO times the other plus LENGTH_SLACK characters: misaligned
LENGTH_SLACK = 10  # (short labels vary the most: "Enter" is "Eingabetaste")


@dataclass(frozen=True)
class Row:
    """One training line per language, and where it came from (``page``, ``key``: the paragraph's id, with
    ``:N`` for its N-th sentence when it was cut)."""

    page: str
    key: str
    texts: Tuple[str, ...]

    @property
    def paragraph(self) -> Tuple[str, str]:
        return self.page, self.key.split(":", 1)[0]


def rejection(texts: Sequence[Optional[str]]) -> Optional[str]:
    """Why the aligned ``texts`` (English first; None: missing) make no row, or None when they do."""
    if any(text is None for text in texts):
        return "missing in a language"
    if not all(texts):
        return "empty in a language"
    english, others = texts[0], texts[1:]
    if not has_words(english):
        return "no words"
    if all(text == english for text in others):
        return "the same in every language"
    if len(english.split()) >= UNTRANSLATED_WORDS and english in others:
        return "untranslated"
    if any(absurd_length(len(english), len(text)) for text in others):
        return "length ratio"
    return None


def absurd_length(a: int, b: int) -> bool:
    """True when one text's length (``a``, ``b``: characters) is absurd beside the other's: misaligned."""
    return max(a, b) > LENGTH_RATIO * min(a, b) + LENGTH_SLACK


def paragraph_rows(page: str, key: str, texts: Sequence[str], langs: Sequence[str],
                   dropped: Counter) -> List[Row]:
    """The rows of one kept paragraph: its sentences where every language has as many, else itself; sentences
    that make no row (``rejection``) are left out and counted in ``dropped``."""
    cuts = [split_sentences(text, lang).segments for text, lang in zip(texts, langs)]
    if len({len(cut) for cut in cuts}) != 1 or len(cuts[0]) < 2:
        return [Row(page, key, tuple(texts))]
    rows = []
    for number, sentences in enumerate(zip(*cuts), start=1):
        reason = rejection(sentences)
        if reason is None:
            rows.append(Row(page, f"{key}:{number}", tuple(sentences)))
        else:
            dropped[f"sentence: {reason}"] += 1
    return rows
