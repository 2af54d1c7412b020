"""Forced target prefixes: the output must start with given tokens, or with a given text.

A prefix text is tokenized as the start of a target sentence.  Its tokens
are forced at the first steps (their log-probabilities are the model's, and
they count in the score).  A prefix that does not end in whitespace may end
inside a word ("Ein Hu"): its last word is *not* forced as tokenized (the
pieces of a cut word, "▁Hu", are rarely how the model spells the whole
word, "▁Hund").  Instead that word's text becomes a constraint: the next
tokens must spell it out, each one either a piece that starts with the
remaining text ("▁Hund" for "▁Hu": the word is completed, maybe longer) or
one that the remaining text starts with ("▁H", then "u..."); the model picks
among them.  A complete last word ("Ein Hund") is handled the same way, so
the model may still extend it ("Hunde").  Where a piece of that word is
not a plain piece (byte fallback, unknown), the prefix is forced as
tokenized instead.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Union

import torch

from .config import one_per_text
from .processors import Processor, Step

Tensor = torch.Tensor
WORD_START = "\u2581"  # SentencePiece's word-boundary marker
_BYTE_PIECE = re.compile(r"<0x[0-9A-Fa-f]{2}>")
_PIECE_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # tokenizer -> its target pieces


@dataclass
class Prefix:
    """What one sentence's output must start with."""

    forced: List[int]  # token ids forced at the first steps
    partial: str = ""  # then the next tokens must spell this out (pieces' text, word marker included)
    pieces: Optional[Sequence[str]] = field(default=None, repr=False)  # target vocabulary; "" for special ids
    length: int = 0  # tokens of the whole prefix as tokenized (checked against the output cap)
    tokenized: List[int] = field(default_factory=list)  # the whole prefix as tokenized (what other engines force)

    @classmethod
    def from_ids(cls, ids: Sequence[int]) -> "Prefix":
        return cls(forced=[int(i) for i in ids], length=len(ids), tokenized=[int(i) for i in ids])

    @classmethod
    def from_text(cls, tokenizer, text: str, special_ids: Sequence[int]) -> "Prefix":
        """Tokenize ``text`` as the start of a target sentence; a last word without a space after it stays open."""
        ids = tokenizer.encode(text, side="target") if text.strip() else []
        if not ids or text[-1].isspace():
            return cls.from_ids(ids)
        pieces = target_pieces(tokenizer, special_ids)
        start = max((i for i, t in enumerate(ids) if pieces[t].startswith(WORD_START)), default=0)
        word = [pieces[t] for t in ids[start:]]
        if not all(word):  # a special or byte-fallback piece: keep the tokenization as it is
            return cls.from_ids(ids)
        return cls(forced=ids[:start], partial="".join(word), pieces=pieces, length=len(ids), tokenized=list(ids))


def target_pieces(tokenizer, special_ids: Sequence[int]) -> List[str]:
    """Every target id's piece ("" for special and byte-fallback pieces, which never spell a prefix); cached."""
    table = _PIECE_TABLES.get(tokenizer)
    if table is None:
        special = set(special_ids)
        table = tokenizer.pieces(list(range(tokenizer.tgt_vocab_size)), side="target")
        table = ["" if i in special or _BYTE_PIECE.fullmatch(p) else p for i, p in enumerate(table)]
        _PIECE_TABLES[tokenizer] = table
    return table


def advance(remaining: str, piece: str) -> str:
    """The text still to spell after emitting ``piece``."""
    if not remaining or piece.startswith(remaining):
        return ""
    return remaining[len(piece):] if remaining.startswith(piece) else ""


class Forcing(Processor):
    """The sentences' prefixes as a processor: each row's text still to spell follows the row."""

    def __init__(self, prefixes: Sequence[Optional[Prefix]], device: torch.device, per_sentence: int = 1) -> None:
        self.prefixes, self.device = list(prefixes), device
        self.longest = max((len(p.forced) for p in prefixes if p is not None), default=0)
        self._allowed: Dict[str, Tensor] = {}
        # per row: the text it must still spell once its forced tokens are out
        self.remaining = [p.partial if p is not None else "" for p in self.prefixes for _ in range(per_sentence)]

    def allowed(self, sentence: int, remaining: str) -> Tensor:
        if remaining not in self._allowed:
            pieces = self.prefixes[sentence].pieces
            ids = [i for i, p in enumerate(pieces) if p and (p.startswith(remaining) or remaining.startswith(p))]
            self._allowed[remaining] = torch.tensor(ids, dtype=torch.long, device=self.device)
        return self._allowed[remaining]

    def __call__(self, log_probs: Tensor, step: Step) -> None:
        """Rows still in their forced tokens get only that token; rows spelling a word get only the pieces that
        continue it.  The kept entries keep the model's log-probabilities."""
        if step.t >= self.longest and not any(self.remaining):
            return
        rows, tokens = [], []
        for row, s in enumerate(step.sentences):
            prefix = self.prefixes[s]
            if prefix is None:
                continue
            if step.t < len(prefix.forced):
                rows.append(row)
                tokens.append(prefix.forced[step.t])
            elif self.remaining[row]:
                allowed = self.allowed(s, self.remaining[row])
                if allowed.numel():
                    kept = log_probs[row, allowed]
                    log_probs[row] = float("-inf")
                    log_probs[row, allowed] = kept
        if rows:
            index = torch.tensor(rows, device=self.device)
            token = torch.tensor(tokens, device=self.device)
            kept = log_probs[index, token]
            log_probs[index] = float("-inf")
            log_probs[index, token] = kept

    def follow(self, rows: Optional[Sequence[int]], tokens, step: Step) -> None:
        """Each row's remaining text after it emitted its token at ``step.t``."""
        if rows is not None:
            self.remaining = [self.remaining[r] for r in rows]
        if tokens is None or not any(self.remaining):
            return
        tokens = tokens.tolist() if isinstance(tokens, Tensor) else tokens
        for row, s in enumerate(step.sentences):
            prefix = self.prefixes[s]
            if self.remaining[row] and prefix is not None and step.t >= len(prefix.forced):
                self.remaining[row] = advance(self.remaining[row], prefix.pieces[tokens[row]])


PrefixArg = Union[None, str, Sequence[Union[str, Sequence[int], None]]]


def _per_sentence(prefix, n: int) -> list:
    return one_per_text(prefix, n, "prefix", "one prefix", unit="sentences")


def prefixes_for_texts(model, tokenizer, prefix: PrefixArg, n: int) -> Optional[List[Optional[Prefix]]]:
    """``generate``'s ``prefix=``: one text for every sentence, or a list with one per sentence (None or "": none)."""
    if prefix is None:
        return None
    cfg = model.config
    special = [cfg.pad_id, cfg.bos_id, cfg.eos_id, getattr(cfg, "unk_id", cfg.pad_id)]
    out: List[Optional[Prefix]] = []
    for text in _per_sentence(prefix, n):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"a prefix must be a string (or None), got {type(text).__name__}")
        out.append(Prefix.from_text(tokenizer, text, special) if text and text.strip() else None)
    return out if any(p is not None for p in out) else None


def prefixes_for_ids(model, prefix, n: int) -> Optional[List[Optional[Prefix]]]:
    """``decode_ids``' ``prefix=``: one id list per row (None or []: none); ids must be plain target tokens."""
    if prefix is None:
        return None
    cfg = model.config
    out: List[Optional[Prefix]] = []
    for ids in _per_sentence(prefix, n):
        ids = [] if ids is None else [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < cfg.tgt_vocab_size or i in (cfg.pad_id, cfg.bos_id, cfg.eos_id)]
        if bad:
            raise ValueError(f"prefix ids must be target tokens in [0, {cfg.tgt_vocab_size}) other than pad, bos "
                             f"and eos; got {bad[:5]}")
        out.append(Prefix.from_ids(ids) if ids else None)
    return out if any(p is not None for p in out) else None


def check_prefix_lengths(prefixes: Optional[List[Optional[Prefix]]], sources: List[List[int]],
                         caps: List[int]) -> None:
    """A prefix must fit in its sentence's output cap."""
    if prefixes is None:
        return
    for i, (p, ids, cap) in enumerate(zip(prefixes, sources, caps)):
        if p is not None and ids and p.length > cap:
            raise ValueError(f"the prefix of sentence {i} is {p.length} tokens, more than the {cap} output tokens it "
                             f"may have (source tokens + max_len_offset, max_length, the model's max_len): "
                             f"shorten the prefix or raise max_len_offset / max_length")
