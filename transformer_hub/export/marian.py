"""Export the paper's block to ``transformers``' MarianMTModel: a folder ``MarianMTModel.from_pretrained`` and
``MarianTokenizer.from_pretrained`` load, decoding to our greedy output.

Marian is the same block as section 3 of the paper (post-norm, ReLU or GELU,
sinusoidal positions added to embeddings scaled by sqrt(d_model), tied
embeddings), with one difference that matters: its sinusoid table is laid out
``[sin of every frequency | cos of every frequency]`` where ours interleaves
``sin, cos, sin, cos`` (section 3.5), and it is recomputed on load, never stored.
So the export permutes the model dimension instead: hidden unit ``c`` of the
Marian model is our unit ``PERM[c]`` (``PERM = [0, 2, 4, ..., 1, 3, 5, ...]``),
which makes Marian's table exactly ours.  Everything that reads the residual
stream gets its input columns permuted (embeddings, q/k/v projections, W_1),
everything that writes it its output rows and biases (W^O, W_2), and every
LayerNorm its parameters; LayerNorm and attention are unchanged by a permutation
of their inputs, so the model computes the same function.

Marian's configuration defaults are OPUS-MT's (eos 0, pad = decoder start 58100,
a forced eos): every special id is set explicitly here, and the generation
defaults are greedy with our ``max_len``.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, Optional

import torch

from .common import PathLike, UnsupportedModelError, check_exportable, require, vocabulary


def permutation(d_model: int) -> torch.Tensor:
    """Marian unit c = our unit PERM[c]: our sin columns (even) first, then our cos columns (odd)."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def marian_config(config, transformers):
    """The ``MarianConfig`` of our config, every special id and default set on purpose; the parts' own fields
    (``exports["marian"]``: the activation) from ``check_exportable``."""
    cfg = config
    return transformers.MarianConfig(**check_exportable(cfg, "marian"),
        vocab_size=cfg.src_vocab_size, decoder_vocab_size=cfg.tgt_vocab_size, d_model=cfg.d_model,
        encoder_layers=cfg.n_encoder_layers, decoder_layers=cfg.n_decoder_layers,
        encoder_attention_heads=cfg.n_heads, decoder_attention_heads=cfg.n_heads,
        encoder_ffn_dim=cfg.d_ff, decoder_ffn_dim=cfg.d_ff,
        max_position_embeddings=cfg.max_len, scale_embedding=True,
        dropout=cfg.dropout, attention_dropout=0.0, activation_dropout=0.0,  # our dropout: residual + embeddings only
        pad_token_id=cfg.pad_id, bos_token_id=cfg.bos_id, eos_token_id=cfg.eos_id,
        decoder_start_token_id=cfg.bos_id, forced_eos_token_id=None,
        share_encoder_decoder_embeddings=cfg.share_embeddings, tie_word_embeddings=cfg.share_embeddings,
    )


def _attention(out: Dict[str, torch.Tensor], prefix: str, attention, perm: torch.Tensor) -> None:
    d = attention.h * attention.d_k
    w, b = attention.in_proj.weight.detach(), attention.in_proj.bias.detach()
    for i, name in enumerate(("q_proj", "k_proj", "v_proj")):
        out[f"{prefix}.{name}.weight"] = w[i * d:(i + 1) * d][:, perm]  # reads the residual stream
        out[f"{prefix}.{name}.bias"] = b[i * d:(i + 1) * d]
    out[f"{prefix}.out_proj.weight"] = attention.out_proj.weight.detach()[perm]  # writes it
    out[f"{prefix}.out_proj.bias"] = attention.out_proj.bias.detach()[perm]


def _norm(out: Dict[str, torch.Tensor], prefix: str, norm, perm: torch.Tensor) -> None:
    out[f"{prefix}.weight"], out[f"{prefix}.bias"] = norm.weight.detach()[perm], norm.bias.detach()[perm]


def _ffn(out: Dict[str, torch.Tensor], prefix: str, ffn, perm: torch.Tensor) -> None:
    out[f"{prefix}.fc1.weight"], out[f"{prefix}.fc1.bias"] = ffn.w_1.weight.detach()[:, perm], ffn.w_1.bias.detach()
    out[f"{prefix}.fc2.weight"], out[f"{prefix}.fc2.bias"] = ffn.w_2.weight.detach()[perm], ffn.w_2.bias.detach()[perm]


def marian_state(model) -> Dict[str, torch.Tensor]:
    """Our weights under MarianMTModel's names, the model dimension permuted (see the module docstring)."""
    body, perm = model.body, permutation(model.config.d_model)
    out: Dict[str, torch.Tensor] = {}
    src, tgt = body.src_embed.lut.weight.detach()[:, perm], body.tgt_embed.lut.weight.detach()[:, perm]
    out["model.encoder.embed_tokens.weight"], out["model.decoder.embed_tokens.weight"] = src, tgt
    out["lm_head.weight"] = body.generator.weight.detach()[:, perm]
    if model.config.share_embeddings:
        out["model.shared.weight"] = src
    for i, layer in enumerate(body.encoder):
        p = f"model.encoder.layers.{i}"
        _attention(out, f"{p}.self_attn", layer.self_attn, perm)
        _norm(out, f"{p}.self_attn_layer_norm", layer.residuals[0].norm, perm)
        _ffn(out, p, layer.feed_forward, perm)
        _norm(out, f"{p}.final_layer_norm", layer.residuals[1].norm, perm)
    for i, layer in enumerate(body.decoder):
        p = f"model.decoder.layers.{i}"
        _attention(out, f"{p}.self_attn", layer.self_attn, perm)
        _norm(out, f"{p}.self_attn_layer_norm", layer.residuals[0].norm, perm)
        _attention(out, f"{p}.encoder_attn", layer.cross_attn, perm)
        _norm(out, f"{p}.encoder_attn_layer_norm", layer.residuals[1].norm, perm)
        _ffn(out, p, layer.feed_forward, perm)
        _norm(out, f"{p}.final_layer_norm", layer.residuals[2].norm, perm)
    out["final_logits_bias"] = torch.zeros(1, model.config.tgt_vocab_size)
    return {name: t.float().cpu().contiguous() for name, t in out.items()}


def to_marian(model):
    """A ``transformers.MarianMTModel`` (eval mode) computing what ``model`` computes."""
    transformers = require("transformers", "the marian export")
    cfg = model.config
    check_exportable(cfg, "marian")
    if cfg.d_model % 2:
        raise UnsupportedModelError(f"cannot export d_model={cfg.d_model} to marian: its [sin | cos] table is "
                                    "matched by permuting an even model dimension")
    marian = transformers.MarianMTModel(marian_config(cfg, transformers))
    missing, unexpected = marian.load_state_dict(marian_state(model), strict=False)
    missing = [k for k in missing if "embed_positions" not in k]  # recomputed by Marian, never stored
    if missing or unexpected:
        raise RuntimeError(f"Marian weight names do not match this transformers version: missing {missing}, "
                           f"unexpected {unexpected}")
    marian.generation_config = transformers.GenerationConfig(
        decoder_start_token_id=cfg.bos_id, bos_token_id=cfg.bos_id, eos_token_id=cfg.eos_id,
        pad_token_id=cfg.pad_id, forced_eos_token_id=None, num_beams=1, do_sample=False, max_length=cfg.max_len)
    return marian.eval()


def export(model, out: PathLike, force: bool = False) -> Path:
    """Write the MarianMTModel folder: weights, config, generation config, source/target .spm, vocab.json, README."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise FileExistsError(f"{out} exists and is not empty (pass force=True / --force to replace it)")
    marian = to_marian(model)
    if out.exists():
        shutil.rmtree(out)
    marian.save_pretrained(out)
    _tokenizer_files(model, out)
    (out / "README.md").write_text(readme(model), encoding="utf-8")
    return out


def _tokenizer_files(model, out: Path) -> None:
    """What ``MarianTokenizer`` reads: source.spm, target.spm, vocab.json (ids = our ids), tokenizer_config.json."""
    tokenizer, cfg = model.tokenizer, model.config
    (out / "source.spm").write_bytes(tokenizer.source.serialized_model_proto())
    (out / "target.spm").write_bytes(tokenizer.target.serialized_model_proto())
    source, target = vocabulary(model, "source"), vocabulary(model, "target")
    separate = source != target
    (out / "vocab.json").write_text(json.dumps({p: i for i, p in enumerate(source)}, ensure_ascii=False, indent=1))
    if separate:
        (out / "target_vocab.json").write_text(json.dumps({p: i for i, p in enumerate(target)}, ensure_ascii=False,
                                                          indent=1))
    settings = dict(tokenizer_class="MarianTokenizer", source_lang=cfg.src_lang, target_lang=cfg.tgt_lang,
                    separate_vocabs=separate, model_max_length=cfg.max_len, eos_token=source[cfg.eos_id],
                    unk_token=source[cfg.unk_id], pad_token=source[cfg.pad_id])
    (out / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n")


def readme(model, example: Optional[str] = "A dog runs in the park.") -> str:
    cfg = model.config
    return f"""# MarianMTModel export of a transformer_hub model

Converted by `python -m transformer_hub export --format marian`: the paper's block ({cfg.n_encoder_layers}+{cfg.n_decoder_layers}
layers, d_model {cfg.d_model}, {cfg.n_heads} heads, {cfg.feed_forward}, post-norm, sinusoidal positions), with the model
dimension permuted so that Marian's `[sin | cos]` position table equals the paper's interleaved one.

```python
from transformers import MarianMTModel, MarianTokenizer

tokenizer = MarianTokenizer.from_pretrained(".")      # appends </s> to the source, as the model was trained
model = MarianMTModel.from_pretrained(".")
batch = tokenizer(["{example}"], return_tensors="pt")
out = model.generate(**batch, num_beams=1, max_new_tokens=batch["input_ids"].shape[1] + 50)
print(tokenizer.batch_decode(out, skip_special_tokens=True))
```

* Greedy decoding gives transformer_hub's greedy output. `transformers`' beam search ranks finished hypotheses
  by `score / length ** length_penalty`, not GNMT's `((5 + length) / 6) ** alpha`.
* Special ids: pad {cfg.pad_id}, decoder start = bos {cfg.bos_id}, eos {cfg.eos_id}, unk {cfg.unk_id}.
"""
