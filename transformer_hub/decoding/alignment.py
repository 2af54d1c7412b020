"""Where a source term's translation goes, read from the decoder's cross-attention: the units of term anchoring.

At every step the decoder's cross-attention says which source tokens the next target token is drawn from.
Averaged over the heads of every layer but the first (the first layer of the shipped models looks at the
token just written rather than the one to write: measured on the en-de model, its argmax trails the others'
by one word), it is a usable word alignment: the step that writes "Fahrrad" puts ~0.9 of its weight on
"bicycle", the article before it ~0.4.  From it:

* :func:`source_spans`: the source token positions a term's words occupy, at every occurrence;
* :func:`span_mass`: per decoder row, the share of attention on a span now (the gate of an anchored term);
* :func:`usual_translation`: in a finished output, the words written while attending to a span, i.e. what
  the model translates the term as when left alone; the first tokens of their :func:`head_words` (not an article
  before them) are what an anchored term replaces.
"""
from __future__ import annotations

import re
from typing import List, Sequence, Tuple

import torch

Tensor = torch.Tensor
WORD_START = "\u2581"  # sentencepiece's mark of a piece that starts a word
_BYTE = re.compile(r"<0x[0-9A-F]{2}>")
# A word is the term's usual translation when this much of its attention is on the term, and at least
# USUAL_RELATIVE of the best word's.  0.4 rather than 0.5: on Multi30k's val split (500 sentences, the four
# directions of benchmarks/glossary.py) words like "oben" for "top" (0.49) were missed at 0.5, and anchored
# terms kept the usual word beside them more often, at no lower BLEU (and replacing only the :func:`head_words`
# gained BLEU there in three directions of four).
USUAL_SHARE = 0.4
USUAL_RELATIVE = 0.75


def focus(attention: Tensor) -> Tensor:
    """(..., L, h, S) cross-attention -> (..., S): the mean over the heads of every layer but the first (all of
    them for a one-layer model)."""
    layers = attention[..., 1:, :, :] if attention.size(-3) > 1 else attention
    return layers.mean(dim=(-3, -2))


def span_mass(focused: Tensor, span: Tuple[int, int]) -> Tensor:
    """(..., S) focused attention -> (...): the weight on source positions [start, end)."""
    start, end = span
    return focused[..., start:end].sum(dim=-1)


def source_spans(pieces: Sequence[str], term: str) -> List[Tuple[int, int]]:
    """The [start, end) positions of ``pieces`` (a source's sentencepiece pieces) that spell ``term``'s words, one
    span per occurrence (in order, not overlapping), matched case-insensitively on word boundaries."""
    text, starts = "", []
    for piece in pieces:
        starts.append(len(text))
        text += piece.replace(WORD_START, " ")
    words = r"\s+".join(map(re.escape, term.split()))
    if not words:
        return []
    ends = starts[1:] + [len(text)]
    out: List[Tuple[int, int]] = []
    for found in re.finditer(r"(?<!\w)" + words + r"(?!\w)", text, re.IGNORECASE):
        inside = [i for i, (a, b) in enumerate(zip(starts, ends))
                  if a < found.end() and b > found.start() and text[a:b].strip()]
        if inside and (not out or inside[0] >= out[-1][1]):
            out.append((inside[0], inside[-1] + 1))
    return out


def writes_word(pieces: Sequence[str], phrase: str) -> bool:
    """True when output ``pieces`` spell ``phrase`` as whole words (case-sensitive), wherever its pieces split: an
    elided "l'accordéon" holds "accordéon" though its pieces ("'" "accordéon") are not the phrase's own."""
    text = "".join(pieces).replace(WORD_START, " ")
    words = r"\s+".join(map(re.escape, phrase.split()))
    return bool(words) and re.search(r"(?<!\w)" + words + r"(?!\w)", text) is not None


def _is_mark(piece: str) -> bool:
    """True for a punctuation piece ("." "-" "▁„"): something besides the word-start mark, no letter or digit,
    and not one of sentencepiece's byte pieces ("<0xC3>", the bytes of a rare letter, which stay in their word)."""
    body = piece.lstrip(WORD_START)
    return bool(body) and _BYTE.fullmatch(body) is None and not any(ch.isalnum() for ch in body)


def words_of(pieces: Sequence[str]) -> List[Tuple[int, int]]:
    """[start, end) piece ranges of the words in ``pieces``: a word starts at a piece marked as a word start, and
    punctuation is a word of its own ("fährt" "." are two; "l" "'" "homme" three), so a word's first piece is
    never a quote or an apostrophe."""
    out: List[Tuple[int, int]] = []
    for i, piece in enumerate(pieces):
        if not out or piece.startswith(WORD_START) or _is_mark(piece) or _is_mark(pieces[i - 1]):
            out.append((i, i + 1))
        else:
            out[-1] = (out[-1][0], i + 1)
    return out


def usual_translation(attention: Tensor, pieces: Sequence[str], span: Tuple[int, int]) -> List[Tuple[int, int]]:
    """The words of an output (``pieces``, its cross-attention ``attention`` (L, h, T, S) with T >= its length)
    that translate source ``span``: those whose most attentive piece puts at least ``USUAL_SHARE`` of its weight
    on the span, and at least ``USUAL_RELATIVE`` of the best word's.  Words without a letter never count (a byte
    piece's "0xF0" is no letter)."""
    if not pieces:
        return []
    mass = span_mass(focus(attention.permute(2, 0, 1, 3))[: len(pieces)], span).tolist()  # (T,)
    scored = [(max(mass[a:b]), (a, b)) for a, b in words_of(pieces) if _lettered(pieces[a:b])]
    best = max((m for m, _ in scored), default=0.0)
    return [word for m, word in scored if m >= USUAL_SHARE and m >= USUAL_RELATIVE * best]


def _lettered(word: Sequence[str]) -> bool:
    """True when a word's pieces hold a letter (byte pieces' "0xC3" is none)."""
    return any(ch.isalpha() for p in word if not _BYTE.fullmatch(p.lstrip(WORD_START)) for ch in p)


def head_words(words: Sequence[Tuple[int, int]], pieces: Sequence[str]) -> List[Tuple[int, int]]:
    """Of ``words`` (ranges of ``pieces``, a term's usual translation), those not followed by another of them
    (punctuation between aside): "poissons" of "des poissons", "hiver" of "d'hiver".  The article before the
    word the term replaces is not replaced with it: the term needs it too."""
    order = [w for w in words_of(pieces) if _lettered(pieces[w[0]:w[1]])]
    chosen = set(words)
    after = {w: order[n + 1] for n, w in enumerate(order[:-1])}
    return [w for w in words if after.get(w) not in chosen]


def inner_tokens(pieces: Sequence[str]) -> Tensor:
    """The ids (positions in ``pieces``, a target vocabulary's pieces) of the pieces that continue a word: not
    marked as a word start, and starting with a letter or digit."""
    return torch.tensor([i for i, p in enumerate(pieces) if p and not p.startswith(WORD_START) and p[0].isalnum()],
                        dtype=torch.long)
