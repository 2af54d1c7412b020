"""The one step every document format shares: its texts cut into sentences, all translated in one batch, and a
map from positions in each original text to positions in its translation; and the registry of formats
(``DOCUMENT_FORMATS``: each format registers itself with ``register_format``).

The sentences are the text pipeline's (``transformer_hub.text.pipeline``: its split, its model per direction, one
decoding call per model, its join); ``translate`` is either the pipeline's ``Models`` or a plain function from
sentences to translations (wrapped as one). A format collects the texts it translates (a paragraph, a table
cell, a subtitle cue, the inline content of an HTML block) together with the places where its markup sits inside
them (run boundaries, inline tags). The
translations come back sentence by sentence, so a mark inside a sentence can only be placed by proportion: its
relative position in the source sentence, snapped to the nearest word boundary of the translated sentence
(keeping whether it followed a space). A mark at a sentence's start or end stays exactly there, and text between
sentences (spaces, line breaks) is kept as it was, so no mark ever leaves its sentence.

    done = translate_document_texts(["Hello <b>world</b>. Bye."-as-plain-text], translate, lang="en")
    done[0].target                # the translated text, the original layout between its sentences
    done[0].position(6)           # where source offset 6 lands in the target
    done[0].pieces([0, 6, 11])    # the target cut where the source was cut: one piece per source run
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from dataclasses import field
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from ..decoding import DecodingConfig, Hypothesis, TranslationResult
from ..registry import Registry
from ..text.models import Models
from ..text.cut import Cut, cut_texts
from ..text.pipeline import translate_texts

Translate = Callable[[List[str]], List[str]]  # sentences -> their translations, same length and order


class DocumentError(ValueError):
    """A document that cannot be translated (malformed, too large, unsupported): the message says which and why."""


@dataclass(frozen=True)
class Translated:
    """One text and its translation; ``spans`` pairs each sentence's (start, end) in both."""

    source: str
    target: str
    spans: Tuple[Tuple[int, int, int, int], ...]  # (source start, source end, target start, target end)
    result: Optional[TranslationResult] = field(default=None, compare=False)  # the pipeline's record (model, ...)

    @classmethod
    def unchanged(cls, text: str) -> "Translated":
        """``text`` as its own translation (every offset lands where it was)."""
        return cls(text, text, ())

    def position(self, offset: int) -> int:
        """Where ``offset`` (0..len(source)) of the source lands in the target."""
        if not 0 <= offset <= len(self.source):
            raise ValueError(f"offset {offset} outside a text of {len(self.source)} characters")
        starts = [span[0] for span in self.spans]
        i = bisect.bisect_right(starts, offset) - 1
        if i < 0:  # before the first sentence: the leading text is unchanged
            return offset
        s0, s1, t0, t1 = self.spans[i]
        if offset >= s1:  # between sentences (or after the last): the text there is unchanged
            return t1 + (offset - s1)
        guess = t0 + round((offset - s0) * (t1 - t0) / max(1, s1 - s0))
        after_space = offset > 0 and self.source[offset - 1].isspace()
        return _snap(self.target, guess, t0, t1, after_space)

    def pieces(self, bounds: Sequence[int]) -> List[str]:
        """The target cut at the images of ``bounds`` (0 = b0 <= b1 <= ... = len(source)): one piece per run."""
        if not bounds or bounds[0] != 0 or bounds[-1] != len(self.source) or list(bounds) != sorted(bounds):
            raise ValueError("bounds must rise from 0 to the length of the text")
        cuts = [self.position(b) for b in bounds]
        for k in range(1, len(cuts)):  # monotone already; kept so a rounding tie can never reorder
            cuts[k] = max(cuts[k], cuts[k - 1])
        return [self.target[a:b] for a, b in zip(cuts, cuts[1:])]


_BOUNDARY = re.compile(r"\s+|\w+|[^\w\s]")


def _snap(text: str, guess: int, lo: int, hi: int, after_space: bool) -> int:
    """The word boundary of ``text[lo:hi]`` nearest ``guess``; on a tie the one that matches ``after_space``."""
    bounds = {lo, hi}
    for match in _BOUNDARY.finditer(text, lo, hi):
        bounds.update((match.start(), match.end()))
    return min(bounds, key=lambda b: (abs(b - guess), (b > 0 and text[b - 1].isspace()) != after_space, b))


@dataclass(frozen=True)
class Document:
    """A document read by its format: the texts to translate, in order, and how to write it back translated."""

    texts: List[str]
    write: Callable[[List[Translated]], bytes]  # one Translated per text, in order -> the translated file


@dataclass(frozen=True)
class DocumentFormat:
    """A kind of document: its name for people, its file extensions, its reader (whose ``Document`` writes the
    file back translated) and its place in the lists the Space shows (``order``, lowest first)."""

    label: str
    extensions: Tuple[str, ...]
    read: Callable[..., Document]  # the file's bytes (and ``options``, by keyword) -> the Document
    order: int = 100
    options: Tuple[str, ...] = ()  # what its reader takes beside the bytes: "tgt_lang", "overwrite"

    @property
    def title(self) -> str:
        """How messages name it: "Word (.docx)"."""
        return f"{self.label} ({', '.join(self.extensions)})"


DOCUMENT_FORMATS: Registry[DocumentFormat] = Registry("document format")


def register_format(name: str, label: str, extensions: Sequence[str], read: Callable[..., Document],
                    order: int = 100, options: Sequence[str] = ()) -> DocumentFormat:
    """Add a format to ``DOCUMENT_FORMATS``: the one step that makes the library, the page's document box and
    ``POST /translate_file`` take its extensions (lower case, with their dot)."""
    bad = [e for e in extensions if not e.startswith(".") or e != e.lower()]
    if not extensions or bad:
        raise ValueError(f"a format's extensions are lower case and start with a dot, got {list(extensions)!r}")
    return DOCUMENT_FORMATS.register(name)(DocumentFormat(label, tuple(extensions), read, order, tuple(options)))


class CallbackModels(Models):
    """A function from sentences to their translations as the pipeline's ``Models``: one model, any direction."""

    one_model = True

    def __init__(self, translate: Translate) -> None:
        self.translate = translate

    def languages(self) -> List[str]:
        raise ValueError("a translation function detects no language: give the document's language")

    def choose(self, src_lang: Optional[str], tgt_lang: Optional[str], quality: str = "fast",
               domain: Optional[str] = None) -> str:
        if quality != "fast":  # the function translates as it does: there is no n-best to rerank
            raise ValueError(f"quality={quality!r} needs a model with a tuned reranker, not a translation function")
        return "function"

    def decode(self, name, sentences, src_langs, tgt_langs, config, quality: str = "fast", **options):
        translations = list(self.translate(list(sentences)))
        if len(translations) != len(sentences):
            raise ValueError(f"the translator returned {len(translations)} translations for {len(sentences)} "
                             "sentences")
        return [TranslationResult(source=s, hypotheses=[Hypothesis(text=t, tokens=[], token_logprobs=[], score=0.0,
                                                                   normalized_score=0.0, finished=True)])
                for s, t in zip(sentences, translations)], "function"


def cut_document(texts: Sequence[str], lang: str, max_sentences: Optional[int] = None, classifier: Any = None,
                 domains: Sequence[str] = ()) -> Cut:
    """What a document's text costs before any sentence is decoded, which grows with the text: each text cut into
    sentences by ``lang``'s rules (a code), the sentences counted against ``max_sentences`` (a ``DocumentError``)
    before anything else, then with a ``classifier`` (a ``DomainClassifier``) each sentence's domain among
    ``domains`` told as ``domain="auto"`` tells a document's (``text.cut``).  A server runs it in the document's
    worker process (``space/hosting/sandbox.py``) and hands the ``Cut`` to ``translate_document_texts``."""
    return cut_texts(texts, lang, classifier, domains, [0] * len(texts),
                     lambda count: _check_sentences(count, max_sentences))


def _check_sentences(count: int, max_sentences: Optional[int]) -> None:
    if max_sentences is not None and count > max_sentences:
        raise DocumentError(f"The document has {count:,} sentences to translate, the limit is "
                            f"{max_sentences:,}: split it into smaller documents.")


def translate_document_texts(texts: Sequence[str], translate: Union[Translate, Models], lang: Any = None,
                             max_sentences: Optional[int] = None, *, tgt_lang: Any = None,
                             config: Optional[DecodingConfig] = None, **options: Any) -> List[Translated]:
    """Every text of ``texts`` through the text pipeline: cut into sentences (``lang``'s rules: one code, or one
    per text), the sentences decoded (a plain ``translate`` function gets them all in ONE call), and each text put
    back together with its layout between the sentences.  ``options`` go to the pipeline (``glossary``,
    ``on_chunk``, ``chunk_size``, ``check_size``, ``domain``, ...); with ``domain="auto"`` the texts are one
    document (``document_ids``, unless given): each sentence is read as its own domain where the classifier is sure
    of it, else as its paragraph's or text's, and a short text (a heading, a cell) that says little on its own as
    the whole document's (``text.routing``).  ``cut``: the sentences and their domains found already
    (``cut_document``, with ``lang``'s code), not found again."""
    models = translate if isinstance(translate, Models) else CallbackModels(translate)
    options.setdefault("document_ids", [0] * len(texts))
    check = options.pop("check_size", None)

    def check_size(count: int) -> None:
        _check_sentences(count, max_sentences)
        if check is not None:
            check(count)

    results = translate_texts(models, list(texts), config, src_lang=lang, tgt_lang=tgt_lang, check_size=check_size,
                              **options)
    return [_assemble(text, r.layout.segments, r.layout.separators, [s.text for s in r.sentences or []], r)
            for text, r in zip(texts, results)]


def _assemble(text: str, segments: Sequence[str], separators: Sequence[str], translations: Sequence[str],
              result: Optional[TranslationResult] = None) -> Translated:
    spans, parts, s_pos, t_pos = [], [separators[0]], len(separators[0]), len(separators[0])
    for segment, translation, after in zip(segments, translations, separators[1:]):
        translation = " ".join(translation.split())  # a segment holds no line break; neither may its translation
        spans.append((s_pos, s_pos + len(segment), t_pos, t_pos + len(translation)))
        parts += [translation, after]
        s_pos += len(segment) + len(after)
        t_pos += len(translation) + len(after)
    return Translated(text, "".join(parts), tuple(spans), result)
