"""Which language a text is in: the most likely of the languages a caller serves (``detect_language``), and
whether it is clearly in none of them (``unserved_language``).

Languages are identified by ``py3langid`` (a naive Bayes model over byte n-grams, shipped inside the package
as a compressed numpy archive: nothing is downloaded or unpickled at run time).
"""
from __future__ import annotations

import threading
from typing import List, NamedTuple, Optional, Sequence

from .segmentation import UNSERVED_RATIO, UNSERVED_THRESHOLD, letter_count

# A text is too short to detect when it has fewer than SHORT_LETTERS letters AND its detection is below
# SHORT_CONFIDENCE among the candidates: then the guess is not worth acting on ("Merci" is 0.32 Czech, "Pes."
# 0.28 German, "Hi!" 0.25: nothing to go on).  Short texts the detector is sure of are kept ("Yes" 0.72
# English, "A dog." 0.51, "Haus" 0.57).  On Multi30k's val split the shortest caption has 11 letters, so no
# caption of the 4 x 1,014 is affected (tests/test_text.py checks it).
SHORT_LETTERS = 6
SHORT_CONFIDENCE = 0.5


class Detected(NamedTuple):
    """A detected language: its code (one of the candidates) and the probability among the candidates."""

    code: str
    confidence: float


_IDENTIFIER = None
_IDENTIFIER_LOCK = threading.Lock()


def _identifier():
    """py3langid's identifier over all its languages, loaded once (about a second) and never restricted in place
    (``set_languages`` mutates it, which threads sharing it could not afford)."""
    global _IDENTIFIER
    with _IDENTIFIER_LOCK:
        if _IDENTIFIER is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _IDENTIFIER = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _IDENTIFIER


def _distribution(text: str) -> dict:
    """{language: probability} over every language py3langid knows, for ``text``."""
    return dict(_identifier().rank(text))


def _check(candidates: Sequence[str]) -> List[str]:
    if isinstance(candidates, str) or not candidates:
        raise ValueError("candidates must be a non-empty list of language codes")
    known = set(_identifier().labels)
    unknown = [c for c in candidates if c not in known]
    if unknown:
        raise ValueError(f"cannot detect {', '.join(map(repr, unknown))}: not a language the detector knows")
    return list(candidates)


def _texts(texts: Sequence[str]) -> List[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings; wrap a single text in a list")
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"expected strings, got {type(text).__name__}")
    return list(texts)


def too_short_to_detect(text: str, detected: Detected) -> bool:
    """True when ``text`` is too short for ``detected`` (its detection) to be trusted; see SHORT_LETTERS."""
    return letter_count(text) < SHORT_LETTERS and detected.confidence < SHORT_CONFIDENCE


def detect_language(texts: Sequence[str], candidates: Sequence[str]) -> List[Detected]:
    """Per text, the most likely of the ``candidates`` and its probability renormalised over them (0..1).

    A text with nothing to go on (empty, digits only) gets the first candidate with confidence
    ``1 / len(candidates)``.
    """
    texts, candidates = _texts(texts), _check(candidates)
    out = []
    for text in texts:
        probs = _distribution(text)
        among = [probs[c] for c in candidates]
        total = sum(among)
        if not text.strip() or total <= 0.0:
            out.append(Detected(candidates[0], 1.0 / len(candidates)))
            continue
        best = max(range(len(among)), key=among.__getitem__)
        out.append(Detected(candidates[best], among[best] / total))
    return out


def unserved_language(texts: Sequence[str], candidates: Sequence[str],
                      threshold: float = UNSERVED_THRESHOLD) -> List[Optional[str]]:
    """Per text: the most likely other language when it is clearly not one of the candidates (other languages
    together >= ``threshold``, and the most likely of them ``UNSERVED_RATIO`` times the best candidate); else None."""
    texts, served = _texts(texts), set(_check(candidates))
    out: List[Optional[str]] = []
    for text in texts:
        probs = _distribution(text) if text.strip() else {}
        others = {code: p for code, p in probs.items() if code not in served}
        best = max(others, key=others.get) if others else None
        clear = best is not None and sum(others.values()) >= threshold and \
            others[best] >= UNSERVED_RATIO * max(probs[c] for c in served)
        out.append(best if clear else None)
    return out
