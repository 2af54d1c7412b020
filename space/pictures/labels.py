"""Pieces as a visitor reads them, in every picture and view of the Space (no SentencePiece markup)."""
from __future__ import annotations

import re
from typing import Sequence

from transformer_hub.text import language_name

_NAMED = {"</s>": "[end]", "<s>": "[start]", "<unk>": "[unknown]", "<pad>": "[padding]", "\u2581": "[space]"}
_TAG = re.compile(r"<2(\w+)>")


def piece_label(piece: str) -> str:
    """A piece as a visitor reads it, in every picture: a word's first piece as that text ("▁Ein" -> "Ein"),
    a piece inside a word after a hyphen ("ter" -> "-ter"), tags and end of sentence in words ("[to German]",
    "[end]")."""
    if not piece:
        return "[nothing]"
    tag = _TAG.fullmatch(piece)
    if tag:
        return f"[to {language_name(tag.group(1))}]"
    if piece in _NAMED:
        return _NAMED[piece]
    if piece.startswith("\u2581"):
        return piece[1:]
    return piece if not piece[0].isalnum() else "-" + piece


def token_label(token: str) -> str:
    """A whole-word token (the playground's digits and number words) as a visitor reads it: start and end of
    sentence in words ("<s>" -> "[start]"), every other token as it is."""
    return _NAMED.get(token, token) if token != "\u2581" else token


def pieces_text(pieces: Sequence[str]) -> str:
    """Pieces joined as the text they spell, tags and end of sentence left out."""
    kept = [p for p in pieces if p not in _NAMED or p == "\u2581"]
    return "".join(p for p in kept if not _TAG.fullmatch(p)).replace("\u2581", " ").strip() or "[nothing yet]"
