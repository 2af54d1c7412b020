"""The paper's model against references: eq. 1 and multi-head attention vs PyTorch, the sinusoids vs the formula,
layers vs ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``; then whole-model properties:
causality, padding invariance, KV-cache == full forward, tied weights, input checks."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors import safe_open

from helpers.tolerances import f32, f32_close, f64, f64_close, magnitude
from transformer_hub import Transformer, TransformerConfig
from transformer_hub.model.losses import label_smoothed_cross_entropy
from transformer_hub.model import (Dropout, Embeddings, EncoderState, KeyValueBuffer, MathAttention, MultiHeadAttention,
                                   PositionwiseFeedForward,
                                   PostNorm, SinusoidalPositionalEncoding, causal_mask, scaled_dot_product_attention,
                                   sinusoid_table)
from transformer_hub.model.variants.attention import SDPAttention
from transformer_hub.model.variants.norm import PreNorm

LAYOUTS = ["encoder-decoder", "decoder-only"]
POSITIONALS = ["sinusoidal", "learned", "rope"]
KERNELS = {"math": MathAttention, "sdpa": SDPAttention}


def close(a, b) -> bool:
    """Float32 results of two computations of the same equation (tests/tolerances.py), relative to ``b``'s scale."""
    return f32_close(a, b, scale=magnitude(b))


def differs(a, b, margin: float = 1e-3) -> bool:
    """A sanity check in the other direction: some value moved by more than ``margin``."""
    return not torch.allclose(a, b, atol=margin, rtol=0)


def padding_mask(lengths, size):  # (B, 1, 1, S), True on real tokens
    return (torch.arange(size)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]


# --------------------------------------------------------------------------- 3.2.1 Scaled dot-product attention
def _qkv(seed=0, b=2, h=3, tq=5, tk=6, d=8):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, h, tq, d, generator=g), torch.randn(b, h, tk, d, generator=g),
            torch.randn(b, h, tk, d, generator=g))


def _masks(tq, tk):
    causal = torch.ones(tq, tk).tril(tk - tq).bool()[None, None]  # (1, 1, Tq, Tk)
    padding = padding_mask([tk, tk - 2], tk)  # (2, 1, 1, Tk)
    return {"none": None, "padding": padding, "causal": causal, "both": padding & causal}


@pytest.mark.parametrize("mask_name", ["none", "padding", "causal", "both"])
@pytest.mark.parametrize("shape", [(5, 6), (6, 6), (1, 4)])
def test_equation_1_equals_torch_sdpa(mask_name, shape):
    q, k, v = _qkv(tq=shape[0], tk=shape[1])
    mask = _masks(*shape)[mask_name]
    reference = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # bool mask: True = take part, like ours
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert close(out, reference)
    assert close(weights.sum(-1), torch.ones_like(weights.sum(-1)))
    if mask is not None:
        assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()
    for name, kernel in KERNELS.items():
        kernel_out, kernel_weights = kernel()(q, k, v, mask)
        assert close(kernel_out, reference), name
        assert kernel_weights is None  # only computed when asked for


def test_equation_1_by_hand():
    q, k, v = _qkv(b=1, h=1, tq=2, tk=3, d=4)
    scores = (q[0, 0] @ k[0, 0].T) / math.sqrt(4)
    expected = torch.softmax(scores, dim=-1) @ v[0, 0]
    assert close(scaled_dot_product_attention(q, k, v)[0][0, 0], expected)


@pytest.mark.parametrize("mask_name", ["none", "padding", "causal", "both"])
def test_math_and_sdpa_kernels_agree(mask_name):
    q, k, v = _qkv(seed=3, tq=7, tk=7)
    mask = _masks(7, 7)[mask_name]
    math_out, math_weights = MathAttention()(q, k, v, mask, need_weights=True)
    sdpa_out, _ = SDPAttention()(q, k, v, mask)
    assert close(math_out, sdpa_out)
    sdpa_weighted, sdpa_weights = SDPAttention()(q, k, v, mask, need_weights=True)
    assert close(sdpa_weighted, math_out) and close(sdpa_weights, math_weights)


def test_fully_masked_rows_give_uniform_weights_not_nan():
    q, k, v = _qkv(tq=3, tk=4)
    mask = torch.zeros(1, 1, 3, 4, dtype=torch.bool)
    mask[..., 0, :2] = True  # row 0 may attend to keys 0-1; rows 1-2 to nothing
    for kernel in KERNELS.values():
        out, _ = kernel()(q, k, v, mask)
        assert torch.isfinite(out).all()
        assert close(out[:, :, 1:], v.mean(dim=2, keepdim=True).expand(-1, -1, 2, -1))
    _, weights = scaled_dot_product_attention(q, k, v, mask)
    assert close(weights[:, :, 1:], torch.full_like(weights[:, :, 1:], 0.25))


# --------------------------------------------------------------------------- 3.2.2 Multi-head attention
def _mha_pair(kernel, d=16, h=4, seed=0):
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d, h, KERNELS[kernel]()).eval()
    with torch.no_grad():  # non-zero biases, so their handling is checked too
        ours.in_proj.bias.normal_()
        ours.out_proj.bias.normal_()
    reference = nn.MultiheadAttention(d, h, dropout=0.0, batch_first=True).eval()
    with torch.no_grad():
        reference.in_proj_weight.copy_(ours.in_proj.weight)
        reference.in_proj_bias.copy_(ours.in_proj.bias)
        reference.out_proj.weight.copy_(ours.out_proj.weight)
        reference.out_proj.bias.copy_(ours.out_proj.bias)
    return ours, reference


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("masking", ["none", "padding", "causal", "both"])
def test_self_attention_equals_torch_multihead_attention(kernel, masking):
    ours, reference = _mha_pair(kernel)
    x = torch.randn(3, 6, 16)
    lengths = [6, 4, 2]
    ours_mask, kwargs = None, {}
    if masking in ("padding", "both"):
        ours_mask = padding_mask(lengths, 6)
        kwargs["key_padding_mask"] = ~ours_mask[:, 0, 0]  # torch: True = ignore
    if masking in ("causal", "both"):
        causal = causal_mask(6, 0, x.device)  # (1, 1, T, T)
        ours_mask = causal if ours_mask is None else ours_mask & causal
        kwargs["attn_mask"] = ~causal[0, 0]  # torch: True = not allowed
    expected, expected_weights = reference(x, x, x, need_weights=True, average_attn_weights=False, **kwargs)
    out, weights = ours(x, mask=ours_mask, need_weights=True)
    assert close(out, expected)
    assert close(weights, expected_weights)


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("padded", [False, True])
def test_cross_attention_equals_torch_multihead_attention(kernel, padded):
    ours, reference = _mha_pair(kernel, seed=1)
    x, memory = torch.randn(2, 4, 16), torch.randn(2, 7, 16)  # queries from x, keys/values from the memory
    mask = padding_mask([7, 3], 7) if padded else None
    kwargs = {"key_padding_mask": ~mask[:, 0, 0]} if padded else {}
    expected = reference(x, memory, memory, need_weights=False, **kwargs)[0]
    out, _ = ours(x, memory, mask)
    assert close(out, expected)
    cache = KeyValueBuffer()  # the memory's keys/values are computed once and reused
    first, _ = ours(x, memory, mask, cache=cache)
    again, _ = ours(x, memory * 0 + 123.0, mask, cache=cache)
    assert close(first, expected) and close(again, expected)


def test_self_attention_cache_appends_keys():
    ours, _ = _mha_pair("math")
    x = torch.randn(1, 5, 16)
    full, _ = ours(x, mask=causal_mask(5, 0, x.device))
    cache, steps = KeyValueBuffer(), []
    for t in range(5):
        out, _ = ours(x[:, t:t + 1], mask=causal_mask(1, t, x.device), cache=cache)
        steps.append(out)
    assert cache.length == 5 and cache.buffer.shape[:4] == (2, 1, 4, 16)  # (k/v, B, h, capacity)
    keys, _ = cache.append(torch.zeros(1, 4, 20, 4), torch.zeros(1, 4, 20, 4))  # past the capacity: it grows
    assert keys.shape == (1, 4, 25, 4) and cache.buffer.size(3) == 32
    assert close(torch.cat(steps, dim=1), full)


def test_key_value_buffer_reorders_grows_and_appends_in_place():
    torch.manual_seed(0)
    keys, values = torch.randn(3, 2, 40, 4), torch.randn(3, 2, 40, 4)  # (B, h, T, d_k)
    cache = KeyValueBuffer()
    cache.append(keys[:, :, :5], values[:, :, :5])
    for index in (torch.tensor([2, 0, 0, 1, 2]), torch.tensor([4, 1])):  # more rows (beams), then fewer
        cache.index_select_(index)
        keys, values = keys[index], values[index]
    first = cache.buffer.data_ptr()
    k, v = cache.append(keys[:, :, 5:9], values[:, :, 5:9])  # fits: written in place
    assert cache.buffer.data_ptr() == first and torch.equal(k, keys[:, :, :9]) and torch.equal(v, values[:, :, :9])
    k, v = cache.append(keys[:, :, 9:], values[:, :, 9:])  # 40 > capacity 16: grows, keeps what it had
    assert cache.length == 40 and torch.equal(k, keys) and torch.equal(v, values)
    empty = KeyValueBuffer()
    empty.index_select_(torch.tensor([0]))  # nothing cached yet: nothing to do
    assert empty.buffer is None and empty.length == 0


def test_grouped_cross_attention_needs_whole_groups():
    ours, _ = _mha_pair("math")
    with pytest.raises(ValueError, match="3 query rows cannot share 2 memory rows evenly"):
        ours(torch.randn(3, 1, 16), torch.randn(2, 5, 16))


# --------------------------------------------------------------------------- 3.4, 3.5, 3.3, 3.1 building blocks
@pytest.mark.parametrize("d_model", [32, 7])
def test_sinusoids_match_the_formula(d_model):
    table = sinusoid_table(60, d_model)
    for pos in (0, 1, 2, 17, 59):
        for i in range((d_model + 1) // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            scale = max(1.0, angle)  # float32 angles: their error grows with them
            assert table[pos, 2 * i].item() == f32(math.sin(angle), scale)
            if 2 * i + 1 < d_model:
                assert table[pos, 2 * i + 1].item() == f32(math.cos(angle), scale)


def test_sinusoidal_encoding_module_adds_the_table_and_is_not_saved():
    cfg = TransformerConfig.preset("tiny")
    pe = SinusoidalPositionalEncoding(cfg)
    x = torch.randn(2, 5, cfg.d_model)
    positions = torch.tensor([[3, 4, 5, 6, 7]])
    assert close(pe(x, positions), x + sinusoid_table(cfg.max_len, cfg.d_model)[3:8])
    assert pe.table[10, 4].item() == f32(math.sin(10 / 10000 ** (4 / cfg.d_model)), scale=10)
    assert list(pe.state_dict()) == []  # a fixed function of the position: nothing to store
    assert list(pe.parameters()) == []


def test_embeddings_scaled_by_sqrt_d_model_and_pad_row_zero():
    torch.manual_seed(0)
    emb = Embeddings(50, 16, pad_id=0)
    ids = torch.tensor([[0, 5, 9]])
    out = emb(ids)
    assert close(out, emb.lut.weight[ids] * 4.0)
    assert (out[0, 0] == 0).all()


def test_feed_forward_is_equation_2():
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(8, 20)
    x = torch.randn(2, 3, 8)
    w1, b1, w2, b2 = ffn.w_1.weight, ffn.w_1.bias, ffn.w_2.weight, ffn.w_2.bias
    assert close(ffn(x), torch.clamp(x @ w1.T + b1, min=0) @ w2.T + b2)


def test_residual_and_norm_placement():
    torch.manual_seed(0)
    x, sub = torch.randn(2, 3, 8), nn.Linear(8, 8)
    post, pre = PostNorm(8, 0.0), PreNorm(8, 0.0)
    assert close(post(x, sub), F.layer_norm(x + sub(x), (8,)))  # LayerNorm(x + Sublayer(x))
    assert close(pre(x, sub), x + sub(F.layer_norm(x, (8,))))
    assert not PostNorm.final_norm and PreNorm.final_norm


# --------------------------------------------------------------------------- layers vs PyTorch's reference layers
def _copy_ffn_and_norms(ours_layer, reference, n_norms):
    reference.linear1.load_state_dict(ours_layer.feed_forward.w_1.state_dict())
    reference.linear2.load_state_dict(ours_layer.feed_forward.w_2.state_dict())
    for i in range(n_norms):
        getattr(reference, f"norm{i + 1}").load_state_dict(ours_layer.residuals[i].norm.state_dict())


def _copy_attention(ours_mha, reference_mha):
    with torch.no_grad():
        reference_mha.in_proj_weight.copy_(ours_mha.in_proj.weight)
        reference_mha.in_proj_bias.copy_(ours_mha.in_proj.bias)
        reference_mha.out_proj.load_state_dict(ours_mha.out_proj.state_dict())


@pytest.mark.parametrize("norm, feed_forward", [("post", "relu"), ("pre", "relu"), ("post", "gelu")])
def test_encoder_and_decoder_layers_equal_torch_reference_layers(make_model, norm, feed_forward):
    model = make_model(norm=norm, feed_forward=feed_forward, tokenizer=False)
    cfg, body = model.config, model.body
    kwargs = dict(d_model=cfg.d_model, nhead=cfg.n_heads, dim_feedforward=cfg.d_ff, dropout=0.0,
                  activation=feed_forward, batch_first=True, norm_first=(norm == "pre"))
    enc_ref, dec_ref = nn.TransformerEncoderLayer(**kwargs).eval(), nn.TransformerDecoderLayer(**kwargs).eval()
    _copy_attention(body.encoder[0].self_attn, enc_ref.self_attn)
    _copy_ffn_and_norms(body.encoder[0], enc_ref, 2)
    _copy_attention(body.decoder[0].self_attn, dec_ref.self_attn)
    _copy_attention(body.decoder[0].cross_attn, dec_ref.multihead_attn)
    _copy_ffn_and_norms(body.decoder[0], dec_ref, 3)

    x, y = torch.randn(2, 6, cfg.d_model), torch.randn(2, 5, cfg.d_model)
    src_mask = padding_mask([6, 3], 6)
    ours_enc, _ = body.encoder[0](x, src_mask)
    ref_enc = enc_ref(x, src_key_padding_mask=~src_mask[:, 0, 0])  # grad enabled: no fast path
    assert close(ours_enc[0], ref_enc[0]) and close(ours_enc[1, :3], ref_enc[1, :3])

    ours_dec, _, _ = body.decoder[0](y, x, causal_mask(5, 0, y.device), src_mask)
    ref_dec = dec_ref(y, x, tgt_mask=~causal_mask(5, 0, y.device)[0, 0], memory_key_padding_mask=~src_mask[:, 0, 0])
    assert close(ours_dec, ref_dec)


# --------------------------------------------------------------------------- whole-model properties
def _differs(ids, start, vocab):
    """Copy of ``ids`` with every token from ``start`` on replaced by a different non-special token."""
    out = ids.clone()
    out[:, start:] = (ids[:, start:] - 4 + 1) % (vocab - 4) + 4
    return out


@pytest.mark.parametrize("attention", list(KERNELS))
@pytest.mark.parametrize("positional", POSITIONALS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_causality(make_model, ids, layout, positional, attention):
    model = make_model(layout=layout, positional=positional, attention=attention, tokenizer=False)
    vocab = model.config.tgt_vocab_size
    src, tgt = ids(2, 6, vocab), ids(2, 8, vocab)
    with torch.no_grad():
        base = model(src, tgt)
        for t in range(8):
            out = model(src, _differs(tgt, t, vocab))
            assert close(out[:, :t], base[:, :t]), f"logits before position {t} saw a later token"
            assert differs(out[:, t], base[:, t])  # sanity: position t does see token t
        assert differs(model(_differs(src, 3, vocab), tgt), base)  # and the source is read


def _padded_batch(ids, vocab, src_lengths, tgt_lengths, pad_id):
    sentences = [(ids(1, s, vocab)[0], ids(1, t, vocab)[0]) for s, t in zip(src_lengths, tgt_lengths)]
    src = torch.full((len(sentences), max(src_lengths)), pad_id)
    tgt = torch.full((len(sentences), max(tgt_lengths)), pad_id)
    for i, (s, t) in enumerate(sentences):
        src[i, :len(s)], tgt[i, :len(t)] = s, t
    return sentences, src, tgt


@pytest.mark.parametrize("attention", list(KERNELS))
@pytest.mark.parametrize("positional", POSITIONALS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_padding_invariance(make_model, ids, layout, positional, attention):
    model = make_model(layout=layout, positional=positional, attention=attention, tokenizer=False)
    vocab, pad = model.config.tgt_vocab_size, model.config.pad_id
    sentences, src, tgt = _padded_batch(ids, vocab, [5, 2, 8], [4, 7, 1], pad)
    with torch.no_grad():
        batch = model(src, tgt)
        for i, (s, t) in enumerate(sentences):
            alone = model(s[None], t[None])
            assert close(batch[i, :len(t)], alone[0]), f"sentence {i} changed inside a padded batch"


@pytest.mark.parametrize("attention", list(KERNELS))
@pytest.mark.parametrize("positional", POSITIONALS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_kv_cache_equals_full_forward(make_model, ids, layout, positional, attention):
    model = make_model(layout=layout, positional=positional, attention=attention, tokenizer=False)
    vocab, pad = model.config.tgt_vocab_size, model.config.pad_id
    _, src, tgt = _padded_batch(ids, vocab, [6, 3], [7, 7], pad)
    with torch.no_grad():
        full = model(src, tgt)
        state, cache = model.encode(src), model.new_cache()
        steps = [model.decode(tgt[:, i:i + 1], state, cache).logits for i in range(tgt.size(1))]
        assert cache.length == tgt.size(1)
        assert close(torch.cat(steps, dim=1), full)
        # a prompt of several tokens first, then one token at a time
        cache = model.new_cache()
        chunks = [model.decode(tgt[:, :3], state, cache).logits]
        chunks += [model.decode(tgt[:, i:i + 1], state, cache).logits for i in range(3, tgt.size(1))]
        assert close(torch.cat(chunks, dim=1), full)


def test_encode_and_decode_return_their_attention_only_when_asked(make_model, ids):
    """Weights come back on request (None otherwise), per layer; decoding one token at a time over the cache
    gives each step's row of the full pass's weights (self-attention over the tokens so far, cross over the source)."""
    model = make_model(tokenizer=False)
    c = model.config
    _, src, tgt = _padded_batch(ids, c.tgt_vocab_size, [6, 3], [5, 5], c.pad_id)
    with torch.no_grad():
        plain = model.encode(src)
        assert plain.self_attention is None and model.decode(tgt, plain).cross_attention is None
        assert model.decode(tgt, plain).self_attention is None
        state = model.encode(src, need_weights=True)
        full = model.decode(tgt, state, need_weights=True)
        assert [w.shape for w in state.self_attention] == [(2, c.n_heads, 6, 6)] * c.n_encoder_layers
        assert [w.shape for w in full.self_attention] == [(2, c.n_heads, 5, 5)] * c.n_decoder_layers
        assert [w.shape for w in full.cross_attention] == [(2, c.n_heads, 5, 6)] * c.n_decoder_layers
        assert torch.equal(state.self_attention[0][1, :, :, 3:], torch.zeros(c.n_heads, 6, 3))  # padding: no weight
        cache = model.new_cache()
        for t in range(tgt.size(1)):
            step = model.decode(tgt[:, t:t + 1], state, cache, need_weights=True)
            for layer in range(c.n_decoder_layers):  # probabilities: scale 1
                assert f32_close(step.self_attention[layer][:, :, 0], full.self_attention[layer][:, :, t, :t + 1])
                assert f32_close(step.cross_attention[layer][:, :, 0], full.cross_attention[layer][:, :, t])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cache_reorder_follows_the_selected_rows(make_model, ids, layout):
    """What beam search does: decode, re-rank rows (reorder the cache), continue."""
    model = make_model(layout=layout, positional="rope", tokenizer=False)
    vocab, pad = model.config.tgt_vocab_size, model.config.pad_id
    _, src, tgt = _padded_batch(ids, vocab, [5, 3, 4], [6, 6, 6], pad)
    index = torch.tensor([2, 0, 0])
    with torch.no_grad():
        state, cache = model.encode(src), model.new_cache()
        model.decode(tgt[:, :3], state, cache)
        cache.reorder(index)
        state = state.index_select(index)
        continued = model.decode(tgt[index, 3:], state, cache).logits
        expected = model(src[index], tgt[index])[:, 3:]
    assert close(continued, expected)


def test_cache_reorder_of_beams_within_their_sentences(make_model, ids):
    """Rows that move only within their own sentence keep their cross-attention keys/values
    (``source_moved=False``); ``source_index`` moves them with the encoder state instead."""
    model = make_model(tokenizer=False)
    vocab, pad = model.config.tgt_vocab_size, model.config.pad_id
    _, src, tgt = _padded_batch(ids, vocab, [5, 3], [6, 6], pad)
    beams = torch.tensor([0, 0, 1, 1])  # two beams per sentence
    src, tgt = src[beams], tgt[torch.tensor([0, 1, 0, 1])]  # the beams of a sentence hold different prefixes
    index = torch.tensor([1, 1, 3, 2])  # re-rank within each sentence
    with torch.no_grad():
        state, cache = model.encode(src), model.new_cache()
        model.decode(tgt[:, :3], state, cache)
        cross_before = [layer["cross"].buffer for layer in cache.layers]
        cache.reorder(index, source_moved=False)
        assert all(layer["cross"].buffer is k for layer, k in zip(cache.layers, cross_before))
        continued = model.decode(tgt[index, 3:4], state, cache).logits
        assert close(continued, model(src[index], tgt[index])[:, 3:4])
        keep = torch.tensor([2, 3])  # sentence 0 leaves: the source rows move too
        cache.reorder(keep, source_index=keep)
        continued = model.decode(tgt[index][keep, 4:], state.index_select(keep), cache).logits
        assert close(continued, model(src[keep], tgt[index][keep])[:, 4:])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_grouped_state_equals_copied_sources(make_model, ids, layout):
    """``state.repeat(k)``: k decoder rows per source read one copy of it (beams), as if it were copied k times."""
    model = make_model(layout=layout, positional="rope", tokenizer=False)
    vocab, pad = model.config.tgt_vocab_size, model.config.pad_id
    _, src, _ = _padded_batch(ids, vocab, [5, 3], [4, 4], pad)
    k = 3
    tgt = ids(2 * k, 4, vocab)  # each beam its own prefix
    copies = torch.arange(2).repeat_interleave(k)
    with torch.no_grad():
        state = model.encode(src)
        grouped, copied = state.repeat(k), state.index_select(copies)
        assert grouped.rows == copied.rows == 2 * k and grouped.src is state.src  # nothing copied
        want = model.decode(tgt, copied, need_weights=True)
        got = model.decode(tgt, grouped, need_weights=True)
        assert close(got.logits, want.logits)
        assert all(close(a, b) for a, b in zip(got.cross_attention, want.cross_attention))
        cache_g, cache_c = model.new_cache(), model.new_cache()  # one token at a time, beams re-ranked
        model.decode(tgt[:, :2], grouped, cache_g)
        model.decode(tgt[:, :2], copied, cache_c)
        order = torch.tensor([2, 0, 0, 5, 3, 4])  # within each sentence
        cache_g.reorder(order, source_moved=False)
        cache_c.reorder(order, source_moved=False)
        step_g = model.decode(tgt[order, 2:3], grouped, cache_g).logits
        assert close(step_g, model.decode(tgt[order, 2:3], copied, cache_c).logits)
        keep = torch.tensor([1])  # sentence 0 leaves: its k rows go, the state keeps source 1
        cache_g.reorder(torch.arange(k, 2 * k), source_index=keep)
        last = model.decode(tgt[order][k:, 3:4], grouped.index_select(keep), cache_g).logits
        assert close(last, model(src[copies][k:], tgt[order][k:])[:, 3:4])
        with pytest.raises(ValueError, match="target has 4 rows, the encoder state serves 6"):
            model.decode(tgt[:4], grouped)


def test_key_mask_only_with_padding(make_model, ids):
    model = make_model(tokenizer=False)
    src = ids(2, 5, model.config.src_vocab_size)
    assert model.encode(src).key_mask is None
    src[1, 3:] = model.config.pad_id
    mask = model.encode(src).key_mask
    assert mask.shape == (2, 1, 1, 5) and mask.sum().item() == 8


def test_encoder_state_index_select(make_model, ids):
    model = make_model(tokenizer=False)
    src = ids(3, 4, model.config.src_vocab_size)
    state = model.encode(src)
    picked = state.index_select(torch.tensor([1, 1]))
    assert torch.equal(picked.src, src[[1, 1]]) and torch.equal(picked.memory, state.memory[[1, 1]])
    only = EncoderState(src, src != 0).index_select(torch.tensor([0]))
    assert only.memory is None and only.src.shape == (1, 4)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_attention_weights_over_the_source(make_model, ids, layout):
    model = make_model(layout=layout, tokenizer=False)
    vocab, pad = model.config.tgt_vocab_size, model.config.pad_id
    _, src, tgt = _padded_batch(ids, vocab, [5, 2], [3, 3], pad)
    with torch.no_grad():
        out = model.decode(tgt, model.encode(src), need_weights=True)
    assert len(out.cross_attention) == model.config.n_decoder_layers
    for weights in out.cross_attention:
        assert weights.shape == (2, model.config.n_heads, 3, 5)
        assert close(weights.sum(-1), torch.ones(2, model.config.n_heads, 3))
        assert (weights[1, :, :, 2:] == 0).all()  # padded source positions get no attention
    assert model.decode(tgt, model.encode(src)).cross_attention is None


def test_dropout_only_in_training(make_model, ids):
    model = make_model(dropout=0.3, tokenizer=False)
    src, tgt = ids(2, 5, 100), ids(2, 4, 100)
    with torch.no_grad():
        assert torch.equal(model(src, tgt), model(src, tgt))
        model.train()
        assert not torch.equal(model(src, tgt), model(src, tgt))


def test_dropout_module_zeroes_p_and_scales_the_rest():
    torch.manual_seed(0)
    x = torch.ones(400, 500, requires_grad=True)
    drop = Dropout(0.3)
    y = drop(x)
    dropped = float((y == 0).float().mean())
    assert abs(dropped - 0.3) < 0.005  # 200k draws: the standard error is 0.001
    assert f32_close(y[y != 0], torch.full_like(y[y != 0], 1 / 0.7), scale=1 / 0.7)
    y.sum().backward()
    assert torch.equal(x.grad, y.detach())  # the gradient goes through the same mask and scale
    torch.manual_seed(5)
    a = drop(x)
    torch.manual_seed(5)
    assert torch.equal(a, drop(x))  # seeded: exact resume depends on it
    drop.eval()
    assert drop(x) is x
    assert Dropout(0.0).train()(x) is x
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match="dropout probability"):
            Dropout(bad)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_forward_with_targets_is_the_loss_of_the_logits(make_model, ids, layout):
    model = make_model(layout=layout, tokenizer=False).double()
    src, tgt = ids(3, 6, 100), ids(3, 5, 100)
    src[1, 4:] = tgt[2, 3:] = model.config.pad_id
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    fused = model(src, tgt_in, tgt_out, label_smoothing=0.1)
    grads = torch.autograd.grad(fused, list(model.parameters()))
    ref = label_smoothed_cross_entropy(model(src, tgt_in), tgt_out, model.config.pad_id, 0.1)
    ref_grads = torch.autograd.grad(ref, list(model.parameters()))
    assert fused.item() == f64(ref.item(), scale=ref.item())  # the model in float64
    for a, b in zip(grads, ref_grads):
        assert f64_close(a, b, scale=magnitude(b))


def test_input_checks(make_model, ids):
    model = make_model(tokenizer=False)
    max_len = model.config.max_len
    with pytest.raises(ValueError, match=r"source must be a \(batch, length\) tensor"):
        model(torch.tensor([5, 6, 7]), ids(1, 3, 100))
    with pytest.raises(ValueError, match=f"more than max_len={max_len}"):
        model(ids(1, max_len + 1, 100), ids(1, 3, 100))
    with pytest.raises(ValueError, match=f"target has {max_len + 1} tokens"):
        model(ids(1, 3, 100), ids(1, max_len + 1, 100))
    state, cache = model.encode(ids(1, 3, 100)), model.new_cache()
    model.decode(ids(1, max_len, 100), state, cache)
    with pytest.raises(ValueError, match="decoding past max_len"):
        model.decode(ids(1, 1, 100), state, cache)


def test_decoder_only_shares_max_len_between_source_and_target(make_model, ids):
    model = make_model(layout="decoder-only", tokenizer=False)
    max_len = model.config.max_len
    state = model.encode(ids(1, 10, 100))
    assert model.target_budget(state) == max_len - 10
    assert model.decode(ids(1, max_len - 10, 100), state).logits.shape[1] == max_len - 10
    with pytest.raises(ValueError, match="more than max_len"):
        model.decode(ids(1, max_len - 9, 100), state)
    assert make_model(tokenizer=False).target_budget(state) == max_len


def test_constructor_checks():
    with pytest.raises(TypeError, match="config must be a TransformerConfig"):
        Transformer("tiny")
    model = Transformer(TransformerConfig.preset("tiny").to_dict())  # a dict is validated into a config
    assert isinstance(model.config, TransformerConfig)
    with pytest.raises(ValueError, match="unknown config keys"):
        Transformer({"d_model": 32, "bogus": 1})
    assert model.tokenizer is None


# --------------------------------------------------------------------------- tied weights (3.4)
def _tied_tensors(model):
    body = model.body
    if model.config.layout == "encoder-decoder":
        return [body.src_embed.lut.weight, body.tgt_embed.lut.weight, body.generator.weight]
    return [body.embed_tokens.lut.weight, body.generator.weight]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_shared_embeddings_are_one_tensor_also_after_loading(make_model, tmp_path, layout):
    model = make_model(layout=layout, share_embeddings=True)
    vocab, d = model.config.tgt_vocab_size, model.config.d_model
    for m in (model, None):
        if m is None:
            model.save_pretrained(tmp_path)
            m = Transformer.from_pretrained(tmp_path)
        tensors = _tied_tensors(m)
        assert all(t is tensors[0] for t in tensors)
        assert len({t.data_ptr() for t in tensors}) == 1
        with torch.no_grad():  # really one storage: writing through one name is seen through the others
            tensors[-1][5, 0] = 42.0
        assert all(t[5, 0].item() == 42.0 for t in tensors)
        assert m.num_parameters() == m.config.num_parameters()  # counted once
    with safe_open(str(tmp_path / "model.safetensors"), framework="pt") as fh:
        shapes = [tuple(fh.get_slice(name).get_shape()) for name in fh.keys()]
    assert shapes.count((vocab, d)) == 1  # stored once


def test_unshared_embeddings_are_separate(make_model, tmp_path):
    model = make_model(share_embeddings=False)
    tensors = _tied_tensors(model)
    assert len({t.data_ptr() for t in tensors}) == 3
    model.save_pretrained(tmp_path)
    loaded = Transformer.from_pretrained(tmp_path)
    assert len({t.data_ptr() for t in _tied_tensors(loaded)}) == 3
    with safe_open(str(tmp_path / "model.safetensors"), framework="pt") as fh:
        shapes = [tuple(fh.get_slice(name).get_shape()) for name in fh.keys()]
    assert shapes.count((model.config.tgt_vocab_size, model.config.d_model)) == 3


def test_shared_embeddings_train_as_one(make_model, ids):
    model = make_model(share_embeddings=True, tokenizer=False).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    src, tgt = ids(2, 5, 100), ids(2, 4, 100)
    loss = F.cross_entropy(model(src, tgt).flatten(0, 1), ids(2, 4, 100).flatten())
    loss.backward()
    optimizer.step()
    tensors = _tied_tensors(model)
    assert all(t is tensors[0] for t in tensors)
    assert tensors[0].grad is not None and torch.isfinite(tensors[0].grad).all()
