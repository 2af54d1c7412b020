"""The three kinds of attention (section 3.2.3), every layer and head, from one teacher-forced forward pass.

The weights are those the model's own ``MultiHeadAttention`` modules compute: hooks ask each module for
its weights (its ``need_weights`` argument) during an ordinary ``encode`` + ``decode`` and keep what it
returns; nothing here re-implements attention.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch

from ..model.kernels import no_dropout
from ..model import MultiHeadAttention

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
    tag = [tokenizer.lang_tag_id(target)] if model.config.multilingual else []
    ids = tag + tokenizer.encode(text, side="source") + [model.config.eos_id]
    if len(ids) > model.config.max_len:
        raise ValueError(f"the text has {len(ids)} tokens, more than this model's max_len={model.config.max_len}")
    return ids


def target_ids(model, text: str, src_ids: List[int], target: Optional[str], src_lang=None, tgt_lang=None
               ) -> List[int]:
    """The output tokens to teacher-force: ``target`` tokenized, or the model's own greedy translation."""
    if target is not None:
        if not isinstance(target, str) or not target.strip():
            raise ValueError("target is empty: give the translation to teacher-force, or None for the model's own")
        return _tokenizer(model).encode(target, side="target")
    from ..decoding import generate

    result = generate(model, [text], strategy="greedy", src_lang=src_lang, tgt_lang=tgt_lang)[0]
    if result.source_ids != src_ids:  # generate truncates; source_ids refused an over-long text already
        raise ValueError("the text was truncated for decoding")
    return list(result.best.tokens)


def _tokenizer(model):
    if getattr(model, "tokenizer", None) is None:
        raise ValueError("the model has no tokenizer attached (model.tokenizer is None)")
    return model.tokenizer


def _modules(model) -> Dict[Tuple[str, int], MultiHeadAttention]:
    """Every attention module of an encoder-decoder model, by (kind, layer)."""
    body = model.body
    if not (hasattr(body, "encoder") and hasattr(body, "decoder")):
        raise ValueError(f"the {model.config.layout} layout has no encoder and decoder: the three kinds of "
                         "attention exist in the encoder-decoder layout only")
    found = {("encoder_self", i): layer.self_attn for i, layer in enumerate(body.encoder)}
    for i, layer in enumerate(body.decoder):
        found[("decoder_self", i)], found[("cross", i)] = layer.self_attn, layer.cross_attn
    return found


def teacher_forced(model, src: List[int], tokens: List[int], capture: bool = False
                   ) -> Tuple[Tensor, Optional[Dict[str, Tensor]]]:
    """One forward pass on ``bos + tokens``: log-probabilities (T, V) of every next token, and, with
    ``capture``, each kind's weights stacked over layers (layers, heads, queries, keys)."""
    seen: Dict[Tuple[str, int], Tensor] = {}
    handles = []
    if capture:
        for key, module in _modules(model).items():
            handles.append(module.register_forward_pre_hook(_ask_for_weights, with_kwargs=True))
            handles.append(module.register_forward_hook(_keeper(seen, key)))
    c = model.config
    try:
        with torch.no_grad(), no_dropout():
            state = model.encode(torch.tensor([src]))
            out = model.decode(torch.tensor([[c.bos_id] + list(tokens)]), state)
            log_probs = out.logits[0].float().log_softmax(dim=-1)
    finally:
        for handle in handles:
            handle.remove()
    if not capture:
        return log_probs, None
    layers = {kind: sorted(i for k, i in seen if k == kind) for kind in KINDS}
    return log_probs, {kind: torch.stack([seen[(kind, i)][0] for i in layers[kind]]).float() for kind in KINDS}


def _ask_for_weights(module, args, kwargs):
    if len(args) > 5:  # need_weights given by position (MultiHeadAttention.forward's sixth parameter)
        args = args[:5] + (True,) + args[6:]
    else:
        kwargs = {**kwargs, "need_weights": True}
    return args, kwargs


def _keeper(seen: Dict, key: Tuple[str, int]):
    def keep(module, args, output) -> None:
        weights = output[1]
        if weights is None:
            raise ValueError(f"the attention kernel {type(module.kernel).__name__} returned no weights")
        seen[key] = weights.detach()

    return keep


@dataclass
class AttentionMaps:
    """Attention weights of one sentence: (layers, heads, queries, keys) float tensors.

    ``encoder_self`` (L_enc, h, S, S); ``decoder_self`` (L_dec, h, T, T), zero above the diagonal (the
    causal mask); ``cross`` (L_dec, h, T, S).  Source positions are ``source_pieces`` (tag, pieces,
    eos); target positions are the decoder's inputs ``target_pieces`` (bos, then the output), and the
    query at position t predicts ``output_pieces[t]`` (the output, then eos).
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
    _modules(model)  # the layout check first, before any decoding
    src = source_ids(model, text, src_lang, tgt_lang)
    tokens = target_ids(model, text, src, target, src_lang, tgt_lang)
    if len(tokens) + 1 > model.config.max_len:
        raise ValueError(f"the target has {len(tokens) + 1} tokens, more than max_len={model.config.max_len}")
    _, maps = teacher_forced(model, src, tokens, capture=True)
    tokenizer, c = model.tokenizer, model.config
    return AttentionMaps(**maps, source_pieces=tokenizer.pieces(src, side="source"),
                         target_pieces=tokenizer.pieces([c.bos_id] + tokens, side="target"),
                         output_pieces=tokenizer.pieces(tokens + [c.eos_id], side="target"),
                         source_ids=src, target_ids=tokens, target=tokenizer.decode(tokens, side="target"))
