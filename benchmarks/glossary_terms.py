"""The glossaries ``benchmarks/glossary.py`` measures: reference phrases, FreeDict dictionaries, and which words
an output keeps.

* :func:`reference_phrases`: per reference, seeded phrases of 1-3 words (Post & Vilar's protocol);
* :func:`read_freedict`: FreeDict's ``/usr/share/dictd/freedict-eng-*.index`` and ``*.dict.dz``, read with the
  standard library, as English term -> its translations;
* :func:`dictionary_terms`: per sentence, the dictionary entries whose term is in the source and one of whose
  translations is in the reference (Dinu et al.'s protocol);
* :func:`usual_words` and :func:`keeps_usual`: the translation of a term the plain output wrote instead of the
  target, and whether an output still writes it beside the target.  A word counts as the term's translation only
  in excess of what the source's other words explain: "le" is the article of "the face" as well as a translation
  of "him", and "tandis que" translates the sentence's other "while" as well as "during"; so an output's "le" is
  the term's only when it writes more of them than the source's other words that FreeDict translates as "le".
"""
from __future__ import annotations

import gzip
import random
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_MARKUP = re.compile(r"<[^>]*>|\[[^\]]*\]|\([^)]*\)|\{[^}]*\}")
EDGE = ".,;:!?\"'()"
MAX_WORDS = 3  # the longest term or translation taken from a dictionary


def reference_phrases(references: Sequence[str], count: int, seed: int) -> List[List[str]]:
    """Per reference, ``count`` phrases of 1-3 consecutive words (edge punctuation stripped), not overlapping."""
    rng = random.Random(seed)
    out = []
    for ref in references:
        words = [w.strip(EDGE) for w in ref.split()]
        taken: set = set()
        phrases: List[str] = []
        for _ in range(20 * count):
            if len(phrases) == count:
                break
            n = rng.randint(1, 3)
            start = rng.randrange(max(1, len(words) - n + 1))
            span = set(range(start, min(start + n, len(words))))
            phrase = " ".join(w for w in words[start:start + n] if w)
            if phrase and not span & taken and phrase not in phrases:
                taken |= span
                phrases.append(phrase)
        out.append(phrases)
    return out


def _number(text: str) -> int:
    value = 0
    for ch in text:
        value = value * 64 + _B64[ch]
    return value


def read_freedict(folder: Path, code: str) -> Optional[Dict[str, List[str]]]:
    """English term (lower case, 1-3 words) -> its translations (1-3 words each), or None without the files."""
    index, data = folder / f"freedict-eng-{code}.index", folder / f"freedict-eng-{code}.dict.dz"
    if not (index.is_file() and data.is_file()):
        return None
    body = gzip.open(data, "rb").read()  # dictzip is gzip with an index: the standard library reads it whole
    terms: Dict[str, List[str]] = {}
    for line in index.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or not parts[0] or parts[0].startswith("00-") or len(parts[0].split()) > MAX_WORDS:
            continue
        offset, length = _number(parts[1]), _number(parts[2])
        entry = body[offset:offset + length].decode("utf-8", errors="replace").split("\n")[1:]
        found = terms.setdefault(parts[0].lower(), [])
        for text in entry:
            if not text or text[0].isspace():  # notes, examples, synonyms are indented
                continue
            for candidate in re.split(r"[,;]", _MARKUP.sub(" ", re.sub(r"^\d+\.\s*", "", text))):
                candidate = " ".join(candidate.split()).strip(EDGE)
                if candidate and len(candidate.split()) <= MAX_WORDS and candidate not in found:
                    found.append(candidate)
    return {term: found for term, found in terms.items() if found}


def _pattern(term: str) -> "re.Pattern":
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, term.split())) + r"(?!\w)", re.IGNORECASE)


def occurrence(term: str, text: str) -> Optional[re.Match]:
    """The first occurrence of ``term`` in ``text`` as whole words, case-insensitively (None: not there)."""
    return _pattern(term).search(text)


def occurrences(term: str, text: str) -> int:
    """How many times ``term`` occurs in ``text`` as whole words, case-insensitively."""
    return len(_pattern(term).findall(text))


def source_words(source: str) -> List[str]:
    """A source sentence's words as the dictionary spells its terms: lower case, edge punctuation stripped."""
    return [w.strip(EDGE).lower() for w in source.split()]


def dictionary_terms(sources: Sequence[str], references: Sequence[str], dictionary: Dict[str, List[str]],
                     frequent: set, seed: int, per_sentence: int = 2) -> List[List[Tuple[str, str]]]:
    """Per sentence up to ``per_sentence`` (English term, target term as in the reference) pairs, not overlapping."""
    rng = random.Random(seed)
    out = []
    for src, ref in zip(sources, references):
        words = source_words(src)
        found = []
        for n in range(MAX_WORDS, 0, -1):
            for i in range(len(words) - n + 1):
                term = " ".join(words[i:i + n])
                if term not in dictionary or all(w in frequent for w in words[i:i + n]):
                    continue
                for translation in dictionary[term]:
                    hit = occurrence(translation, ref)
                    if hit and occurrence(term, src):
                        found.append((set(range(i, i + n)), term, hit.group(0)))
                        break
        rng.shuffle(found)
        chosen, taken = [], set()
        for span, term, target in found:
            if len(chosen) < per_sentence and not span & taken and target not in [t for _, t in chosen]:
                taken |= span
                chosen.append((term, target))
        out.append(chosen)
    return out


def explained(word: str, term: str, source: str, dictionary: Dict[str, List[str]]) -> int:
    """How many of ``source``'s other words (1-3 word entries, longest first, outside every occurrence of
    ``term``, not overlapping) have ``word`` among their dictionary translations: the times an output may write
    ``word`` for something else than ``term``."""
    words, size = source_words(source), len(term.split())
    inside = {i + j for i in range(len(words) - size + 1) if " ".join(words[i:i + size]) == term for j in range(size)}
    wanted, count, i = word.lower(), 0, 0
    while i < len(words):
        for n in range(MAX_WORDS, 0, -1):
            span = range(i, i + n)
            if i + n <= len(words) and not inside & set(span) and wanted in (
                    t.lower() for t in dictionary.get(" ".join(words[i:i + n]), ())):
                count, i = count + 1, i + n
                break
        else:
            i += 1
    return count


def usual_words(pairs: Sequence[Tuple[str, str]], plain: str, dictionary: Dict[str, List[str]],
                source: str = "") -> List[Optional[str]]:
    """Per (term, target) pair: the term's translation the plain output wrote instead of the target (another of
    the dictionary's translations of the term, found in ``plain`` as a word, not inside the target, and more
    often than ``source``'s other words explain), else None (the plain output already holds the target, or none
    of the term's translations)."""
    out: List[Optional[str]] = []
    for term, target in pairs:
        found = None
        if not occurrence(target, plain):
            for other in dictionary.get(term, []):
                if (other.lower() != target.lower() and not occurrence(other, target)
                        and occurrences(other, plain) > explained(other, term, source, dictionary)):
                    found = other
                    break
        out.append(found)
    return out


def keeps_usual(texts: Sequence[str], terms, usual, sources: Optional[Sequence[str]] = None,
                dictionary: Optional[Dict[str, List[str]]] = None) -> Tuple[int, float]:
    """Over the terms whose plain translation differs (``usual``: per sentence, per term, that word or None):
    how many there are, and the share of outputs holding the target term AND still the plain translation, more
    often than the other words of the sentence's source (``sources``) explain (``explained``)."""
    sources = sources if sources is not None else [""] * len(texts)
    pairs = [(text, src, term, target, word) for text, src, ts, ws in zip(texts, sources, terms, usual)
             for (term, target), word in zip(ts, ws) if word is not None]
    kept = sum(bool(occurrence(target, text))
               and occurrences(word, text) > explained(word, term, src, dictionary or {})
               for text, src, term, target, word in pairs)
    return len(pairs), (round(kept / len(pairs), 4) if pairs else float("nan"))
