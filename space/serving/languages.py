"""The languages the Space offers, and what a model's config says it serves (``TransformerConfig.pairs``)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from transformer_hub import TransformerConfig
from transformer_hub.text import LANGUAGE_NAMES

from ..hosting.limits import RequestError

LANGUAGES: Dict[str, str] = dict(LANGUAGE_NAMES)  # the languages the Space offers: those the library names
DEFAULT_PAIR = ("en", "de")
AUTO = "auto"  # the source picker's "Detect language" entry (transformer_hub's src_lang="auto")
DETECT_LABEL = "Detect language"


def language_code(name: str, value) -> str:
    """A language code from the UI or the API; anything but en/de/fr/cs is a one-line error."""
    if value is None or value == "":
        raise RequestError(f"{name} is missing: give one of {', '.join(LANGUAGES)}.")
    if not isinstance(value, str) or value not in LANGUAGES:
        raise RequestError(f"{name} must be one of {', '.join(LANGUAGES)} ({', '.join(LANGUAGES.values())}); "
                       f"got {value!r}.")
    return value


def served(config: Optional[TransformerConfig]) -> List[Tuple[str, str]]:
    """The (source, target) pairs a model serves among the Space's languages; every pair if it names none."""
    pairs = config.pairs() if config is not None else []
    if not pairs:  # a model that names no languages: the pickers stay free, the model decides
        return [(s, t) for s in LANGUAGES for t in LANGUAGES if s != t]
    return [(s, t) for s, t in pairs if s in LANGUAGES and t in LANGUAGES]


def choices(codes) -> List[Tuple[str, str]]:
    """Dropdown choices (label, code) in the Space's order, "Detect language" first when offered."""
    return [(DETECT_LABEL, AUTO)] * (AUTO in set(codes)) + [(name, code) for code, name in LANGUAGES.items()
                                                           if code in set(codes)]


def fit_pair(config: Optional[TransformerConfig], source: Optional[str], target: Optional[str],
             pairs: Optional[List[Tuple[str, str]]] = None,
             detect: bool = False) -> Tuple[List[str], List[str], str, str]:
    """Source and target choices for ``config`` (or for the given ``pairs``), and the pair to show (kept when
    it is served).

    ``detect``: "auto" heads the sources (and is the default); with it, every served target is offered."""
    pairs = [(s, t) for s, t in pairs if s in LANGUAGES and t in LANGUAGES] if pairs is not None else served(config)
    pairs = pairs or [DEFAULT_PAIR]
    sources = [AUTO] * detect + list(dict.fromkeys(s for s, _ in pairs))
    default = AUTO if detect else DEFAULT_PAIR[0]
    source = source if source in sources else (default if default in sources else sources[0])
    targets = list(dict.fromkeys(t for s, t in pairs if s == source or source == AUTO))
    if target not in targets:
        target = DEFAULT_PAIR[1] if DEFAULT_PAIR[1] in targets else targets[0]
    return sources, targets, source, target


def direction(config: Optional[TransformerConfig], source, target) -> Tuple[Optional[str], Optional[str]]:
    """The ``src_lang`` / ``tgt_lang`` to decode with: codes checked, the pair checked against the model."""
    source, target = language_code("source_lang", source), language_code("target_lang", target)
    if source == target:
        raise RequestError(f"source_lang and target_lang are both {source!r}: pick two different languages.")
    if config is None or not config.pairs():
        return None, None  # the model names no languages: it translates what it was trained on
    if (source, target) not in config.pairs():
        raise RequestError(f"This model does not translate {source}->{target}; it serves "
                       f"{', '.join(f'{s}->{t}' for s, t in config.pairs())}. Pick another model or pair.")
    return source, target
