"""Pieces without words inside a sentence (URLs, e-mail addresses, numbers, times, emoji) come out as they went in.

A model trained on captions mangles them ("12:45" -> "1245", an address loses its dots, an emoji is dropped).  After
decoding, each such piece of the source that the translation lacks verbatim is put back where the translation
attends to it: the output position whose cross-attention (averaged over layers and heads) weighs the piece's
source tokens most.  There, an output word that is itself wordless (the mangled piece) is replaced, keeping its
punctuation; a word is never changed: the piece is inserted before it.  Without attention (an engine that gives
none) the piece goes to the same relative place in the translation.

    restore("Meet me at 12:45 now.", "Triff mich um 1245 jetzt.", attention, source_pieces, target_pieces)
    # 'Triff mich um 12:45 jetzt.'
"""
from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import List, Optional, Sequence, Tuple

from .segmentation import has_words

# Sentence punctuation around a piece is the sentence's, not the piece's ("(12:45)," holds "12:45").
_EDGE = ".,;:!?…\"'()[]{}«»„“”‚‘’<>"
_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_SPACE = "\u2581"  # SentencePiece's word-start mark


def wordless_pieces(sentence: str) -> List[str]:
    """The tokens of ``sentence`` without words (``has_words``) that are more than punctuation, edges trimmed."""
    pieces = []
    for token in sentence.split():
        core = token.strip(_EDGE)
        if core and not has_words(token) and not all(unicodedata.category(ch).startswith("P") for ch in core):
            pieces.append(core)
    return pieces


def with_attention(config, sentences: Sequence[str]):
    """``config`` asking for cross-attention when some sentence holds a wordless piece (else as it is)."""
    if config.return_attention or not any(wordless_pieces(s) for s in sentences):
        return config
    return dataclasses.replace(config, return_attention=True)


def restore_results(results, tokenizer=None, keep_attention: bool = False) -> None:
    """Every hypothesis of ``results`` (TranslationResults) with its source's wordless pieces restored, in place;
    the attention asked for only for this is dropped again unless ``keep_attention``."""
    for result in results:
        for rank, hyp in enumerate(result.hypotheses):
            targets = result.target_pieces(tokenizer, rank) if tokenizer is not None else None
            hyp.text = restore(result.source, hyp.text, hyp.attention, result.source_pieces, targets)
            if not keep_attention:
                hyp.attention = None


def restore(source: str, text: str, attention=None, source_pieces: Optional[Sequence[str]] = None,
            target_pieces: Optional[Sequence[str]] = None) -> str:
    """``text`` (a translation of ``source``) with each wordless piece of ``source`` it lacks put back.

    ``attention`` is (layers, heads, T, S) with ``source_pieces`` its S columns and ``target_pieces`` its T rows;
    without them the piece goes to the same relative place."""
    missing = [p for p in wordless_pieces(source) if p not in text]
    if not missing:
        return text
    words = text.split()
    original = list(words)
    before: List[List[str]] = [[] for _ in range(len(words) + 1)]  # pieces inserted before each word, and at the end
    for piece in missing:  # in source order
        where = None
        if attention is not None and source_pieces and target_pieces:
            where = _attended_word(source, piece, attention, source_pieces, target_pieces, len(words))
        if where is None:
            where = round(source.find(piece) / max(len(source), 1) * len(words))
        if where < len(words) and words[where] == original[where] and wordless_pieces(words[where]):
            core = words[where].strip(_EDGE)  # the mangled piece itself: replaced, its punctuation kept
            words[where] = words[where].replace(core, piece, 1)
        else:
            before[where].append(piece)
    return " ".join(part for inserted, word in zip(before, words + [""]) for part in inserted + [word] if part)


def _attended_word(source: str, piece: str, attention, source_pieces: Sequence[str],
                   target_pieces: Sequence[str], n_words: int) -> Optional[int]:
    """The index of the output word whose token attends most to ``piece``'s source tokens (None: not found)."""
    columns = _columns_of(source, piece, source_pieces)
    rows = _word_of_rows(target_pieces)
    if not columns or attention.shape[-2] != len(rows) or attention.shape[-1] != len(source_pieces):
        return None
    weight = attention.float().mean(dim=(0, 1))[:, columns].sum(dim=1)  # (T,)
    candidates = [t for t, word in enumerate(rows) if word is not None and word < n_words]
    if not candidates:
        return None
    return rows[max(candidates, key=lambda t: float(weight[t]))]


def _columns_of(source: str, piece: str, source_pieces: Sequence[str]) -> List[int]:
    """The source tokens that spell ``piece`` (at its first place in ``source``)."""
    spelled, owners = _spell(source_pieces)
    start = spelled.find(piece)
    if start < 0:  # the tokenizer normalised it: no columns (the caller falls back)
        return []
    return sorted({column for i in range(start, start + len(piece)) for column in owners[i]})


def _spell(pieces: Sequence[str]) -> Tuple[str, List[range]]:
    """The text the pieces spell (word marks as spaces, bytes joined into characters; specials spell nothing)
    and, per character, the pieces it came from (a character of several bytes: all of them)."""
    chars: List[str] = []
    owners: List[range] = []
    pending, first = b"", 0
    for index, piece in enumerate(pieces):
        byte = _BYTE.fullmatch(piece)
        if byte:
            first = index if not pending else first
            pending += bytes([int(byte.group(1), 16)])
            try:
                chars.append(pending.decode("utf-8"))
                owners.append(range(first, index + 1))
                pending = b""
            except UnicodeDecodeError:  # more bytes of this character follow (at most 4 make one)
                pending = pending if len(pending) < 4 else b""
            continue
        pending = b""
        if piece.startswith("<") and piece.endswith(">"):  # eos, language tags: no text
            continue
        for ch in piece.replace(_SPACE, " "):
            chars.append(ch)
            owners.append(range(index, index + 1))
    return "".join(chars), owners


def _word_of_rows(target_pieces: Sequence[str]) -> List[Optional[int]]:
    """Per output token, the index of the output word it is part of (None for eos and other specials)."""
    rows: List[Optional[int]] = []
    word = -1
    for piece in target_pieces:
        if piece.startswith("<") and piece.endswith(">") and not _BYTE.fullmatch(piece):
            rows.append(None)
            continue
        if word < 0 or piece.startswith(_SPACE):
            word += 1
        rows.append(word)
    return rows
