"""Text around the model: sentences out of a text and back with its layout, and its language detected.

The stable API (the Space and the LibreTranslate routes call these by name):

    seg = split_sentences("Dr. M. Weber kommt. Er lacht.\\n\\nEin Hund.", lang="de")
    seg.segments            # ('Dr. M. Weber kommt.', 'Er lacht.', 'Ein Hund.'): what the model translates
    seg.separators          # ('', ' ', '\\n\\n', ''): the text between them, one more than segments
    seg.paragraph_sizes     # (2, 1): segments per paragraph (paragraphs are separated by a blank line)
    seg.join(["Dr. M. Weber comes.", "He laughs.", "A dog."])   # the translations, with the text's layout
    split_sentences("😀 12:45").segments   # (): text without words is never a segment, it comes back as it is
    detect_language(["Ein Hund rennt über die Wiese."], ["en", "de", "fr", "cs"])   # [Detected(code='de', confidence=0.99..)]
    unserved_language(["El perro corre por el parque."], ["en", "de", "fr", "cs"])  # ['es']

Sentences are found by ``sentencex`` (language-aware abbreviation lists, Czech included), inside each line:
a line break always ends a segment, so line and paragraph breaks come back exactly where they were.
Languages are identified by ``py3langid`` (a naive Bayes model over byte n-grams, shipped inside the package
as a compressed numpy archive: nothing is downloaded or unpickled at run time).  See docs/design.md for the
choices.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

from .placeholders import Piece, find_pieces

# A text is in a language the caller does not serve when the languages other than the candidates (over all
# ~97 that py3langid knows, added up: Chinese splits its mass between zh, wuu and yue) have at least
# UNSERVED_THRESHOLD of the probability AND the most likely of them is UNSERVED_RATIO times as likely as the
# most likely candidate.  The ratio spares short texts, where every language is unlikely ("A dog.": 0.93
# elsewhere, but Croatian only 1.8 times English); on Multi30k's val split the largest ratio among captions
# above the threshold was 2.4 (a Czech caption taken for Slovak), so none of the 4 x 1,014 is refused
# (tests/test_text.py checks it), while Spanish, Italian, Dutch, Russian and Chinese sentences score 100 to 10^13.
UNSERVED_THRESHOLD = 0.7
UNSERVED_RATIO = 10.0
LANGUAGE_NAMES = {"en": "English", "de": "German", "fr": "French", "cs": "Czech"}
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_LINE = re.compile(r"[^\n]+")
# A piece of text without words (emoji, symbols, punctuation, numbers, times, URLs, e-mail addresses) is not
# translated: a model trained on sentences invents words for it ("12:45" -> "1245.", "..." -> "Ein Mann.").
# Linear in the text, as every scan of a visitor's text must be: a scheme is at most 32 characters, and an address
# is tried only where a run without "@" or space starts, its first part possessive (``++``): the plain
# ``[^\s@]+@`` tried again at each of a long word's characters, each time running to its end (quadratic: 60,000
# characters without a space took 19 s).
_LINK = re.compile(r"(?:[a-z][a-z0-9+.-]{0,31}+://|www\.)\S+|(?<![^\s@])[^\s@]++@[^\s@]+\.\w+", re.IGNORECASE)
# Titles that sentencex's lists lack, so it ends a sentence after them ("M. Dupont arrive." became "M." and
# "Dupont arrive."): a segment ending in one is joined to the next segment of its line.
_TITLES = {"fr": {"M.", "MM.", "Mme.", "Mmes.", "Mlle.", "Mlles.", "Dr.", "Pr.", "Me.", "St.", "Ste.", "Cie."},
           "cs": {"pí.", "sl."}}


def language_name(code: str) -> str:
    """The English name of a served language code, else the code itself."""
    return LANGUAGE_NAMES.get(code, code)


@dataclass(frozen=True)
class Segmented:
    """A text cut into segments; ``separators[i]`` is the text before ``segments[i]`` (the last one: after all).

    ``join(segments)`` gives back the original text exactly; ``join(translations)`` puts translations in its
    layout.  Segments never start or end with whitespace and never hold a line break.
    """

    segments: Tuple[str, ...]
    separators: Tuple[str, ...]

    def join(self, parts: Sequence[str]) -> str:
        """``parts`` (one per segment) between the separators."""
        if len(parts) != len(self.segments):
            raise ValueError(f"{len(parts)} translations for {len(self.segments)} segments")
        out = [self.separators[0]]
        for part, sep in zip(parts, self.separators[1:]):
            out += [part, sep]
        return "".join(out)

    @property
    def paragraph_sizes(self) -> Tuple[int, ...]:
        """Segments per paragraph, a paragraph ending at a blank line (text without segments: ())."""
        sizes: List[int] = []
        for i in range(len(self.segments)):
            if i == 0 or _BLANK_LINE.search(self.separators[i]):
                sizes.append(0)
            sizes[-1] += 1
        return tuple(sizes)


def has_words(text: str) -> bool:
    """True when ``text`` has a letter outside its URLs and e-mail addresses (something a model translates)."""
    return any(ch.isalpha() for ch in _LINK.sub(" ", text))


def letter_count(text: str) -> int:
    """The letters of ``text`` outside its URLs and e-mail addresses."""
    return sum(ch.isalpha() for ch in _LINK.sub(" ", text))


def _worded(text: str, start: int, end: int) -> Optional[Tuple[int, int]]:
    """The span ``text[start:end]`` less its leading and trailing wordless tokens; None when none has words."""
    tokens = [m.span() for m in re.finditer(r"\S+", text[start:end]) if has_words(m.group())]
    return (start + tokens[0][0], start + tokens[-1][1]) if tokens else None


def _sentencex_lang(lang: Optional[str]) -> str:
    return lang if lang else "en"


def split_sentences(text: str, lang: Optional[str] = None) -> Segmented:
    """Cut ``text`` into sentences (``lang``'s abbreviations; None: English's), keeping everything between them.

    Pieces without words (``has_words``) are never segments: a wordless sentence, and wordless tokens at the
    start or end of a sentence, stay in the separators, so they come back exactly as they were.  No cut goes
    through a protected piece (``placeholders.find_pieces``: a DOCTYPE, a tag, ``{ white-space: pre; }``), which
    the model sees as one mark; a piece over several lines (a style sheet, a comment) is no sentence's, it stays
    in the separators."""
    from sentencex import segment  # imported on first use: the package loads its language data

    if not isinstance(text, str):
        raise TypeError(f"expected a string to split, got {type(text).__name__}")
    pieces = find_pieces(text)
    spans: List[Tuple[int, int]] = []
    for line in _lines(text, [p for p in pieces if "\n" in p.text]):
        start = line.start()
        for sentence in _join_after_titles(segment(_sentencex_lang(lang), line.group()), lang):
            core = sentence.strip()
            if not core:
                continue
            found = text.find(core, start, line.end())
            if found < 0:  # the segmenter changed the text (it should not): keep the rest of the line whole
                rest = text[start:line.end()]
                found, core = start + len(rest) - len(rest.lstrip()), rest.strip()
                if core:
                    spans.append((found, found + len(core)))
                break
            start = found + len(core)
            if spans and spans[-1][1] == found and _joined_name(text, found):
                found = spans.pop()[0]  # "ScriptForge.Basic", "svc.Resize()": a name, not two sentences
            spans.append((found, start))
    worded = [w for w in (_worded(text, *span) for span in spans) if w is not None]
    return _from_spans(text, _whole_pieces(worded, pieces))


def _lines(text: str, blocks: Sequence[Piece]) -> Iterator["re.Match[str]"]:
    """The lines of ``text`` (runs without a line break) outside ``blocks``."""
    at = 0
    for block in [*blocks, None]:
        end = block.start if block is not None else len(text)
        yield from _LINE.finditer(text, at, end)
        at = block.end if block is not None else at


def _whole_pieces(spans: List[Tuple[int, int]], pieces: Sequence[Piece]) -> List[Tuple[int, int]]:
    """``spans`` (in order) widened so that none starts or ends inside a piece of one line (a piece over lines is
    in no span), merged where that makes two of them overlap."""
    inline = [p for p in pieces if "\n" not in p.text]
    starts = [p.start for p in inline]

    def around(offset: int) -> Optional[Piece]:
        i = bisect.bisect_right(starts, offset - 1) - 1  # the last piece starting before offset
        return inline[i] if i >= 0 and inline[i].start < offset < inline[i].end else None

    out: List[Tuple[int, int]] = []
    for start, end in spans:
        first, last = around(start), around(end)
        start, end = first.start if first else start, last.end if last else end
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def _joined_name(text: str, boundary: int) -> bool:
    """True when a full stop right before ``boundary`` is followed by a letter or digit without a space (a dotted
    name, a method call, a version number): sentencex cuts there, no sentence ends there."""
    return 0 < boundary < len(text) and text[boundary - 1] == "." and text[boundary].isalnum()


def _join_after_titles(sentences: Sequence[str], lang: Optional[str]) -> List[str]:
    """``sentences`` with each one that ends in one of ``lang``'s titles joined to the one after it."""
    titles, joined = _TITLES.get(lang or "", set()), []
    for sentence in sentences:
        words = joined[-1].split() if joined else []
        if words and words[-1] in titles:
            joined[-1] += sentence
        else:
            joined.append(sentence)
    return joined


def _from_spans(text: str, spans: List[Tuple[int, int]]) -> Segmented:
    separators, previous = [], 0
    for start, end in spans:
        separators.append(text[previous:start])
        previous = end
    separators.append(text[previous:])
    return Segmented(tuple(text[s:e] for s, e in spans), tuple(separators))
