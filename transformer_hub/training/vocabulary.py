"""A new vocabulary for a trained model: a joint tokenizer trained on several corpora in balance, and the
model's tables moved onto it ("vocabulary transplant").

A tokenizer trained on one domain cuts another's words into many pieces (v3's, trained on image captions, cuts
LibreOffice help into 2.6 pieces a word where a joint one needs 1.6: longer sequences, slower steps, worse
output).  Training a new one throws the weights away, unless each new piece starts where the old model already
knew it: a piece the old vocabulary has keeps its row; any other starts as the mean of the rows of the old
pieces that spell it (the idea of Gee et al., 2022, "Fast Vocabulary Transfer"); tags and bytes keep theirs by
name; what the old model cannot spell starts as the mean row.  Everything that is not a vocabulary table is
kept as it is.
"""
from __future__ import annotations

import random
from typing import Dict, List, Optional, Tuple

import torch

from ..tokenizer import Tokenizer

WORD_START = "\u2581"  # SentencePiece's mark of a piece that begins a word


def balanced(texts: Dict[Tuple[str, str], List[str]], per_corpus: int, seed: int = 0) -> List[str]:
    """``texts`` ({(language, corpus): lines}) as one list with at most ``per_corpus`` distinct lines of each
    (a seeded sample where there are more; 0: all), so that no corpus outweighs the others in a vocabulary."""
    chosen: List[str] = []
    for (lang, corpus), lines in texts.items():
        lines = sorted({line for line in lines if line.strip()})
        if per_corpus and len(lines) > per_corpus:
            random.Random(f"{seed}:{lang}:{corpus}").shuffle(lines)
            lines = lines[:per_corpus]
        chosen += lines
    return chosen


def spelling(old: Tokenizer, piece: str) -> List[int]:
    """The old vocabulary's ids that spell ``piece`` of the new one (a word start spelled as one)."""
    text = piece.replace(WORD_START, " ")
    ids = old.encode(text.strip() if piece.startswith(WORD_START) else text.lstrip())
    lone_start = old.source.PieceToId(WORD_START)
    if not piece.startswith(WORD_START) and ids and ids[0] == lone_start:  # the dummy word start SentencePiece adds
        ids = ids[1:]
    return [i for i in ids if i != old.source.unk_id()]


def row_sources(old: Tokenizer, new: Tokenizer) -> List[Optional[List[int]]]:
    """For each id of ``new``: the ids of ``old`` whose rows it starts from (None: the mean of all rows)."""
    sources: List[Optional[List[int]]] = []
    for index in range(new.source.GetPieceSize()):
        piece = new.source.IdToPiece(index)
        same = old.source.PieceToId(piece)
        if old.source.IdToPiece(same) == piece and (same != old.source.unk_id() or new.source.IsUnknown(index)):
            sources.append([same])  # the same piece (specials, tags, bytes, and every piece both vocabularies have)
        elif new.source.IsControl(index) or new.source.IsByte(index) or new.source.IsUnknown(index):
            sources.append(None)
        else:
            sources.append(spelling(old, piece) or None)
    return sources


def transplant(weights: Dict[str, torch.Tensor], old: Tokenizer, new: Tokenizer,
               sources: Optional[List[Optional[List[int]]]] = None) -> Dict[str, torch.Tensor]:
    """``weights`` with every table of the old vocabulary's size (embeddings, output projection and its bias)
    rebuilt for ``new``'s ids as the module docstring says (``sources``: ``row_sources``, when already made); the
    other tensors as they were."""
    old_size, sources = old.tgt_vocab_size, sources or row_sources(old, new)
    moved = {}
    for name, tensor in weights.items():
        if tensor.dim() >= 1 and tensor.shape[0] == old_size:
            table = tensor.float()
            mean = table.mean(dim=0)
            rows = [mean if ids is None else table[ids].mean(dim=0) for ids in sources]
            tensor = torch.stack(rows).to(tensor.dtype)
        moved[name] = tensor
    return moved


def transplant_summary(old: Tokenizer, new: Tokenizer,
                       sources: Optional[List[Optional[List[int]]]] = None) -> Dict[str, int]:
    """How the new rows start: kept (the same piece), spelled (from the old pieces that spell it), mean."""
    sources = sources or row_sources(old, new)
    kept = sum(1 for i, ids in enumerate(sources) if ids is not None and len(ids) == 1
               and old.source.IdToPiece(ids[0]) == new.source.IdToPiece(i))
    mean = sum(1 for ids in sources if ids is None)
    return {"pieces": len(sources), "kept": kept, "spelled": len(sources) - kept - mean, "mean": mean}
