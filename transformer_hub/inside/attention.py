"""The three kinds of attention (section 3.2.3), every layer and head, from one teacher-forced forward pass.

The weights are those the model's own attention modules compute: ``encode`` and ``decode`` are asked for
them (``need_weights=True``) during an ordinary teacher-forced pass; nothing here re-implements attention.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch

from ..model import no_dropout
from ..registry import LAYOUT
from ..tokenizer import source_tags

Tensor = torch.Tensor
KINDS = ("encoder_self", "decoder_self", "cross")


def source_ids(model, text: str, src_lang: Optional[str] = None, tgt_lang: Optional[str] = None) -> List[int]:
    """The ids the model reads for ``text``: the target-language tag of a multilingual model, pieces, eos."""
    tokenizer = _tokenizer(model)
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the text is empty: give a sentence to look inside the model with")
    _, target = model.config.check_pair(src_lang, tgt_lang)
    if getattr(model.config, "decoder_tags", False):
        raise ValueError("this model reads its target-language tag at the decoder start (tag_position 'decoder'); "
                         "the inside views teacher-force from bos alone and do not show such a tag yet")
    ids = source_tags(tokenizer, model.config, target) + tokenizer.encode(text, side="source") + [model.config.eos_id]
    if len(ids) > model.config.max_len:
        raise ValueError(f"the text has {len(ids)} tokens, more than this model's max_len={model.config.max_len}")
    return ids


def target_ids(model, text: str, src_ids: List[int], target: Optional[str], src_lang=None, tgt_lang=None
               ) -> Tuple[List[int], bool]:
    """The output tokens to teacher-force, ``target`` tokenized or the model's own greedy translation, and whether
    they end in eos (a greedy output cut at the length cap does not)."""
    if target is not None:
        if not isinstance(target, str) or not target.strip():
            raise ValueError("target is empty: give the translation to teacher-force, or None for the model's own")
        return _tokenizer(model).encode(target, side="target"), True
    from ..decoding import generate

    result = generate(model, [text], strategy="greedy", src_lang=src_lang, tgt_lang=tgt_lang)[0]
    if result.source_ids != src_ids:  # generate truncates; source_ids refused an over-long text already
        raise ValueError("the text was truncated for decoding")
    return list(result.best.tokens), result.best.finished


def _tokenizer(model):
    if getattr(model, "tokenizer", None) is None:
        raise ValueError("the model has no tokenizer attached (model.tokenizer is None)")
    return model.tokenizer


def check_layout(model) -> None:
    """The three kinds of attention exist in the encoder-decoder layout only (ValueError otherwise)."""
    if not LAYOUT.about(model.config.layout, "has_encoder"):
        raise ValueError(f"the {model.config.layout} layout has no encoder and decoder: the three kinds of "
                         "attention exist in the encoder-decoder layout only")


def teacher_forced(model, src: List[int], tokens: List[int], capture: bool = False
                   ) -> Tuple[Tensor, Optional[Dict[str, Tensor]]]:
    """One forward pass on ``bos + tokens``: log-probabilities (T, V) of every next token, and, with
    ``capture``, each kind's weights stacked over layers (layers, heads, queries, keys)."""
    c = model.config
    with torch.no_grad(), no_dropout():
        state = model.encode(torch.tensor([src]), need_weights=capture)
        out = model.decode(torch.tensor([[c.bos_id] + list(tokens)]), state, need_weights=capture)
        log_probs = out.logits[0].float().log_softmax(dim=-1)
    if not capture:
        return log_probs, None
    found = {"encoder_self": state.self_attention, "decoder_self": out.self_attention, "cross": out.cross_attention}
    if any(w is None for weights in found.values() for w in weights):
        raise ValueError(f"the attention kernel {c.attention!r} returned no weights")
    return log_probs, {kind: torch.stack([w[0] for w in found[kind]]).float() for kind in KINDS}


@dataclass
class AttentionMaps:
    """Attention weights of one sentence: (layers, heads, queries, keys) float tensors.

    ``encoder_self`` (L_enc, h, S, S); ``decoder_self`` (L_dec, h, T, T), zero above the diagonal (the
    causal mask); ``cross`` (L_dec, h, T, S).  Source positions are ``source_pieces`` (tag, pieces,
    eos); target positions are the decoder's inputs ``target_pieces`` (bos, then the output), and the
    query at position t predicts ``output_pieces[t]`` (the output, then eos unless the length cap cut it).
    """

    encoder_self: Tensor
    decoder_self: Tensor
    cross: Tensor
    source_pieces: List[str]
    target_pieces: List[str]
    output_pieces: List[str]
    source_ids: List[int]
    target_ids: List[int]  # the output tokens teacher-forced (bos and eos excluded)
    target: str  # their text

    def to_dict(self, decimals: int = 4) -> Dict[str, Any]:
        """Plain JSON-able data: the pieces and each kind's nested lists, rounded."""
        def rounded(t: Tensor) -> list:
            return torch.round(t, decimals=decimals).tolist()

        return {"source_pieces": self.source_pieces, "target_pieces": self.target_pieces,
                "output_pieces": self.output_pieces, "target": self.target,
                **{kind: rounded(getattr(self, kind)) for kind in KINDS},
                "shapes": {kind: list(getattr(self, kind).shape) for kind in KINDS}}


def attention_maps(model, text: str, src_lang: Optional[str] = None, tgt_lang: Optional[str] = None,
                   target: Optional[str] = None) -> AttentionMaps:
    """Encoder self-, decoder masked self- and cross-attention of every layer and head for ``text``.

    Teacher-forced on ``target`` (a translation the caller gives) or, by default, on the model's own greedy
    translation; one forward pass, weights taken from the model's attention modules.  ``ValueError`` for an
    empty text, a direction the model does not serve, or a layout without an encoder and a decoder.
    """
    check_layout(model)  # before any decoding
    src = source_ids(model, text, src_lang, tgt_lang)
    tokens, finished = target_ids(model, text, src, target, src_lang, tgt_lang)
    c = model.config
    # The query at position t predicts outputs[t]: eos last unless the length cap cut the model's output, whose
    # last token then is a prediction and no input (so a cut output of max_len tokens still fits).
    outputs = tokens + [c.eos_id] if finished else tokens
    if len(outputs) > c.max_len:
        raise ValueError(f"the target has {len(outputs)} tokens, more than max_len={c.max_len}")
    _, maps = teacher_forced(model, src, outputs[:-1], capture=True)
    tokenizer = model.tokenizer
    return AttentionMaps(**maps, source_pieces=tokenizer.pieces(src, side="source"),
                         target_pieces=tokenizer.pieces([c.bos_id] + outputs[:-1], side="target"),
                         output_pieces=tokenizer.pieces(outputs, side="target"),
                         source_ids=src, target_ids=tokens, target=tokenizer.decode(tokens, side="target"))
