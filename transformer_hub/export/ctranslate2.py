"""Export to CTranslate2: a ``ctranslate2.converters.Converter`` that fills a ``TransformerSpec`` from our model.

This module imports ``ctranslate2`` at the top: reach it through
``transformer_hub.export`` (``export_ctranslate2``), which first checks that the
package is installed and otherwise says how to install it.

How our parts map (checked against CTranslate2 4.8; the parity tests decode
with both and compare tokens):

* the encoder and decoder specs are built here, not with ``TransformerSpec.from_config``,
  which exposes no rotary options; their options are what our parts declare (their
  ``exports["ctranslate2"]``: ``pre_norm``, the activation, ``ffn_glu``, rotary settings);
* positions: a table our encoding adds (``added_table``: the sinusoids of section 3.5,
  interleaved sin/cos, which CTranslate2's default orders differently; a learned table)
  is written out; without one (rotary positions, rotating whole heads in our rotate-half
  layout) the position-encoding slot the encoder spec still declares is removed;
* self-attention ``linear[0]`` is our packed q;k;v projection as it is, cross-attention
  ``linear[0]`` its q rows and ``linear[1]`` its k;v rows; the last linear is W^O;
* ReLU / GELU (erf) feed-forward as ``linear_0`` / ``linear_1``; SwiGLU as ``ffn_glu``
  with ``Activation.SWISH``: the gate (W_1) in ``linear_0``, the value (W_3) in ``linear_0_noact``;
* embeddings are scaled by sqrt(d_model) (``scale_embeddings``); the decoder's output
  projection is our pre-softmax matrix (tied matrices are stored once, as aliases);
* LayerNorm epsilon 1e-5 (PyTorch's default), written into the model's config.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Dict, Optional

import ctranslate2
import numpy as np
import torch
from ctranslate2.converters import Converter
from ctranslate2.specs import common_spec, transformer_spec

from ..registry import NORM
from .common import PathLike, check_exportable, vocabulary

LAYER_NORM_EPSILON = 1e-5  # torch.nn.LayerNorm's default, which every norm of ours uses


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().cpu().numpy().copy()


def _linear(spec, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> None:
    spec.weight = _array(weight)
    if bias is not None:
        spec.bias = _array(bias)


def _norm(spec, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def _self_attention(spec, attention) -> None:
    _linear(spec.linear[0], attention.in_proj.weight, attention.in_proj.bias)  # fused q;k;v, as CTranslate2's
    _linear(spec.linear[1], attention.out_proj.weight, attention.out_proj.bias)


def _cross_attention(spec, attention) -> None:
    d = attention.h * attention.d_k
    w, b = attention.in_proj.weight, attention.in_proj.bias
    _linear(spec.linear[0], w[:d], b[:d])  # queries from the decoder
    _linear(spec.linear[1], w[d:], b[d:])  # fused keys;values from the encoder output
    _linear(spec.linear[2], attention.out_proj.weight, attention.out_proj.bias)


def _feed_forward(spec, ffn, glu: bool) -> None:
    if glu:
        gate, value = ffn.w_13.weight.chunk(2, dim=0)
        _linear(spec.linear_0, gate)
        _linear(spec.linear_0_noact, value)
        _linear(spec.linear_1, ffn.w_2.weight)
    else:
        _linear(spec.linear_0, ffn.w_1.weight, ffn.w_1.bias)
        _linear(spec.linear_1, ffn.w_2.weight, ffn.w_2.bias)


def _positions(spec, body) -> None:
    """The table our positions add into the stack's slot; positions that add none need no slot (it is removed)."""
    table = body.positional.added_table()
    if table is None:
        if hasattr(spec, "position_encodings"):
            delattr(spec, "position_encodings")
        return
    spec.position_encodings.encodings = _array(table)


def build_spec(model) -> transformer_spec.TransformerSpec:
    """The ``TransformerSpec`` holding ``model``'s weights (vocabularies and config included)."""
    cfg, body = model.config, model.body
    options = check_exportable(cfg, "ctranslate2")
    options["activation"] = common_spec.Activation[options.get("activation", "RELU")]
    encoder = transformer_spec.TransformerEncoderSpec(cfg.n_encoder_layers, cfg.n_heads, **options)
    decoder = transformer_spec.TransformerDecoderSpec(cfg.n_decoder_layers, cfg.n_heads, **options)
    for stack, embed in ((encoder, body.src_embed), (decoder, body.tgt_embed)):
        embeddings = stack.embeddings[0] if isinstance(stack.embeddings, list) else stack.embeddings
        embeddings.weight = _array(embed.lut.weight)
        stack.scale_embeddings = True  # x sqrt(d_model), section 3.4
        _positions(stack, body)
    for layer_spec, layer in zip(encoder.layer, body.encoder):
        _self_attention(layer_spec.self_attention, layer.self_attn)
        _norm(layer_spec.self_attention.layer_norm, layer.residuals[0].norm)
        _feed_forward(layer_spec.ffn, layer.feed_forward, options.get("ffn_glu", False))
        _norm(layer_spec.ffn.layer_norm, layer.residuals[1].norm)
    for layer_spec, layer in zip(decoder.layer, body.decoder):
        _self_attention(layer_spec.self_attention, layer.self_attn)
        _norm(layer_spec.self_attention.layer_norm, layer.residuals[0].norm)
        _cross_attention(layer_spec.attention, layer.cross_attn)
        _norm(layer_spec.attention.layer_norm, layer.residuals[1].norm)
        _feed_forward(layer_spec.ffn, layer.feed_forward, options.get("ffn_glu", False))
        _norm(layer_spec.ffn.layer_norm, layer.residuals[2].norm)
    if NORM.about(cfg.norm, "final_norm"):  # each stack ends with a LayerNorm
        _norm(encoder.layer_norm, body.encoder_norm)
        _norm(decoder.layer_norm, body.decoder_norm)
    _linear(decoder.projection, body.generator.weight)
    spec = transformer_spec.TransformerSpec(encoder, decoder)
    _vocabularies_and_config(spec, model)
    return spec


def _vocabularies_and_config(spec, model) -> None:
    cfg = model.config
    source, target = vocabulary(model, "source"), vocabulary(model, "target")
    spec.register_source_vocabulary(source)
    spec.register_target_vocabulary(target)
    config = spec.config
    config.unk_token, config.bos_token, config.eos_token = (target[cfg.unk_id], target[cfg.bos_id],
                                                            target[cfg.eos_id])
    config.decoder_start_token = target[cfg.bos_id]  # our decoder starts from bos
    config.add_source_bos = config.add_source_eos = False  # callers add eos (and a language tag) themselves
    config.layer_norm_epsilon = LAYER_NORM_EPSILON


class TransformerHubConverter(Converter):
    """CTranslate2's converter interface for a ``transformer_hub`` model: ``convert(output_dir, quantization=...)``."""

    def __init__(self, model) -> None:
        self.model = model

    def _load(self) -> transformer_spec.TransformerSpec:
        return build_spec(self.model)


def convert_to_files(model, quantization: Optional[str] = None) -> Dict[str, bytes]:
    """Convert in a temporary folder; returns its files by name (what ``ctranslate2.Translator(files=)`` takes)."""
    with tempfile.TemporaryDirectory(prefix="transformer_hub-ct2-") as tmp:
        out = os.path.join(tmp, "model")
        TransformerHubConverter(model).convert(out, quantization=quantization)
        return {name: Path(out, name).read_bytes() for name in os.listdir(out)}


def export(model, out: PathLike, quantization: Optional[str] = None, force: bool = False) -> Path:
    """Write a self-contained CTranslate2 folder: model.bin, config.json, vocabularies, SentencePiece model(s), README."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise FileExistsError(f"{out} exists and is not empty (pass force=True / --force to replace it)")
    if out.exists():
        shutil.rmtree(out)
    TransformerHubConverter(model).convert(str(out), quantization=quantization, force=True)
    spm_files = model.tokenizer.save(out)
    (out / "README.md").write_text(readme(model, spm_files, quantization), encoding="utf-8")
    return out


def readme(model, spm_files, quantization: Optional[str]) -> str:
    """How to call ``ctranslate2.Translator`` on the folder, and how it differs from our decoding."""
    cfg = model.config
    src_spm = "spm.model" if "spm.model" in spm_files else "source.spm.model"
    tgt_spm = "spm.model" if "spm.model" in spm_files else "target.spm.model"
    tag = ""
    if getattr(cfg, "languages", None) and getattr(cfg, "tag_position", "source") == "decoder":
        tag = (f"\nThis model is multilingual and reads the target-language tag at the decoder's start: pass it as "
               f"`target_prefix=[['<2{cfg.languages[0]}>']]` (one list per sentence) and drop it, the first piece, "
               "from each hypothesis (and its log-probability from the scores).\n")
    elif getattr(cfg, "languages", None):
        tag = (f"\nThis model is multilingual: put the target-language tag first, e.g. `['<2{cfg.languages[0]}>'] + "
               "pieces + ['</s>']`.\n")
    return f"""# CTranslate2 export of a transformer_hub model

Converted by `python -m transformer_hub export --format ctranslate2` (CTranslate2 {ctranslate2.__version__},
weights {quantization or 'as stored (float32)'}). Architecture: {cfg.layout}, {cfg.n_encoder_layers}+{cfg.n_decoder_layers}
layers, d_model {cfg.d_model}, {cfg.n_heads} heads, positions `{cfg.positional}`, norm `{cfg.norm}`, feed-forward
`{cfg.feed_forward}`.

```python
import ctranslate2, sentencepiece as spm

translator = ctranslate2.Translator("{'.'}", device="cpu", compute_type="default")
src, tgt = spm.SentencePieceProcessor(model_file="{src_spm}"), spm.SentencePieceProcessor(model_file="{tgt_spm}")
pieces = src.encode("A dog runs in the park.", out_type=str) + ["</s>"]   # the source ends with </s>
result = translator.translate_batch([pieces], beam_size=1, min_decoding_length=0, max_decoding_length=256,
                                    max_input_length=0)[0]
print(tgt.decode(result.hypotheses[0]))
```
{tag}
* The source is the SentencePiece pieces followed by `</s>`: the export does not add it for you.
* The decoder starts from `<s>` (set as `decoder_start_token`: nothing to pass).
* Pass `min_decoding_length=0` (CTranslate2's default is 1, transformer_hub's 0) and a `max_decoding_length`
  (transformer_hub stops at source tokens + 50, eos included, and at most `max_len={cfg.max_len}` positions).
* Greedy decoding gives transformer_hub's own output. Beam search differs in its length penalty: CTranslate2
  ranks by `score / length ** alpha`, transformer_hub by GNMT's `score / ((5 + length) / 6) ** alpha`; the same
  alpha gives the same translation for almost every sentence, not all.
"""
