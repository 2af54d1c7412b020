"""The first steps of ``translate_texts`` on their own: each text cut into sentences in its language, and for
``domain="auto"`` each sentence's domain told (``text.routing``).  Their cost grows with the text, so a server does
them where a document's text is (its worker process: ``formats.cut_document``), within that process's budget,
and hands the ``Cut`` to ``translate_texts(cut=...)``, which then does neither again.

    cut = cut_texts(texts, "en", classifier, ("captions", "software"), document_ids=0)
    cut.layouts[0].segments      # the first text's sentences, as translate_texts would cut them
    cut.domains[0].sentences     # their domains, as translate_texts would tell them
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Tuple

from ..decoding.config import one_per_text
from .domain import DomainClassifier
from .routing import AUTO, TextDomains, told_by
from .segmentation import Segmented, split_sentences


@dataclass(frozen=True)
class Cut:
    """Texts cut into sentences (one ``Segmented`` per text) and, for ``domain="auto"``, their domains (one
    ``routing.TextDomains`` per text; None: not told here, the call tells them)."""

    layouts: Tuple[Segmented, ...]
    domains: Optional[Tuple[TextDomains, ...]] = None


def text_layout(text: str, lang: Optional[str], split: bool = True, unchanged: Optional[str] = None) -> Segmented:
    """The segments to translate in ``text`` (none when it stays as it is: ``unchanged`` says why) and the text
    between them: its sentences by ``lang``'s rules, or with ``split=False`` the whole text as one."""
    if unchanged is not None or not text.strip():  # a blank text (a corpus's empty line) has no direction to choose
        return Segmented((), (text,))
    if split:
        return split_sentences(text, lang)
    return Segmented((text,), ("", ""))  # the whole text is one sentence (an empty one gives an empty output)


def cut_texts(texts: Sequence[str], lang: Any, classifier: Optional[DomainClassifier] = None,
              known: Sequence[str] = (), document_ids: Any = None,
              check_size: Optional[Callable[[int], None]] = None) -> Cut:
    """``texts`` cut by ``lang``'s rules (a code, or one per text); ``check_size(n)`` sees the number of sentences
    before anything else (it raises to refuse them); then, with a ``classifier``, the domain of each sentence among
    ``known`` as ``domain="auto"`` tells it (``document_ids`` as for ``translate_texts``)."""
    langs = one_per_text(lang, len(texts), "lang", "one code")
    layouts = tuple(text_layout(text, code) for text, code in zip(texts, langs))
    if check_size is not None:
        check_size(sum(len(layout.segments) for layout in layouts))
    if classifier is None:
        return Cut(layouts)
    return Cut(layouts, tuple(told_by(classifier, tuple(known), texts, layouts, [AUTO] * len(texts),
                                      document_ids)))


def check_cut(cut: Optional[Cut], texts: Sequence[str], src_lang: Any, split: bool) -> Optional[Cut]:
    """``cut`` checked against the call it is handed to: its texts' language given (not "auto") and split into
    sentences, one layout per text that joins back into it, and its domains (if told) one per sentence."""
    if cut is None:
        return None
    if not split or AUTO in one_per_text(src_lang, len(texts), "src_lang", "one code"):
        raise ValueError("cut needs split_sentences=True and the texts' language (src_lang a code): their "
                         "sentences were cut by its rules")
    if len(cut.layouts) != len(texts) or cut.domains is not None and len(cut.domains) != len(texts):
        raise ValueError(f"cut has {len(cut.layouts)} layouts for {len(texts)} texts")
    for i, (layout, text) in enumerate(zip(cut.layouts, texts)):
        told = cut.domains[i].sentences if cut.domains is not None else layout.segments
        if not isinstance(layout, Segmented) or layout.join(layout.segments) != text or \
                len(told) != len(layout.segments):
            raise ValueError(f"cut's layout {i + 1} is not one of text {i + 1}")
    return cut
