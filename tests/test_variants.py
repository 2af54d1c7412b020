"""Every combination of the registered parts trains (forward, loss, backward), each part describes itself, and
each variant does what it says."""
import itertools
import math
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers.tolerances import f32, f32_close, magnitude
from transformer_hub import LAYOUT, NORM, PARTS, Transformer, TransformerConfig
from transformer_hub.export import check_exportable
from transformer_hub.export.common import TAG_POSITIONS, UnsupportedModelError
from transformer_hub.model.variants.feed_forward import GELUFeedForward, SwiGLUFeedForward
from transformer_hub.model.variants.positional import LearnedPositionalEncoding, RotaryPositionalEncoding

REGISTERED = {field: registry.names() for field, registry in PARTS.items()}  # the built-in parts (no plugin here)
COMBINATIONS = [dict(zip(REGISTERED, values)) for values in itertools.product(*REGISTERED.values())]
LAYOUTS = REGISTERED["layout"]


@pytest.mark.parametrize("field, name", [(field, name) for field, names in REGISTERED.items() for name in names])
def test_every_registered_part_describes_itself(field, name):
    registry = PARTS[field]
    assert isinstance(registry.about(name, "label"), str) and registry.about(name, "label")
    exports = registry.about(name, "exports")
    assert set(exports) <= set(TAG_POSITIONS) and all(isinstance(v, (dict, str)) for v in exports.values())
    if field == "norm":
        assert registry.about(name, "steps").count("sublayer") == 1
        assert isinstance(registry.about(name, "final_norm"), bool)
    if field == "layout":
        assert isinstance(registry.about(name, "has_encoder"), bool)


@pytest.mark.parametrize("variant", COMBINATIONS, ids=lambda v: "-".join(v.values()))
def test_an_export_takes_a_combination_exactly_when_each_part_says_so(variant):
    for fmt in TAG_POSITIONS:
        said = [PARTS[field].about(name, "exports").get(fmt) for field, name in variant.items()]
        if all(isinstance(options, dict) for options in said):
            options = check_exportable(_tiny(**variant), fmt)
            assert options == {k: v for part in said for k, v in part.items()}
        else:
            reason = next(s for s in said if isinstance(s, str))
            with pytest.raises(UnsupportedModelError, match=re.escape(reason)):
                check_exportable(_tiny(**variant), fmt)


def _tiny(**variant):
    fields = dict(src_vocab_size=60, tgt_vocab_size=60, n_encoder_layers=1, n_decoder_layers=2, dropout=0.1,
                  max_len=32)
    if not LAYOUT.about(variant.get("layout", "encoder-decoder"), "has_encoder"):
        fields.update(n_encoder_layers=0, share_embeddings=True)
    return TransformerConfig.preset("tiny", **{**fields, **variant})


@pytest.mark.parametrize("variant", COMBINATIONS, ids=lambda v: "-".join(v.values()))
def test_every_combination_trains(variant):
    torch.manual_seed(0)
    model = Transformer(_tiny(**variant)).train()
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]])  # right-padded, pad_id 0
    tgt_in = torch.tensor([[1, 11, 12, 13], [1, 14, 0, 0]])
    tgt_out = torch.tensor([[11, 12, 13, 2], [14, 2, 0, 0]])
    logits = model(src, tgt_in)
    assert logits.shape == (2, 4, 60)
    loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0)
    assert torch.isfinite(loss)
    loss.backward()
    for name, param in model.named_parameters():
        assert param.grad is not None, f"{name} got no gradient"
        assert torch.isfinite(param.grad).all(), f"{name} has a non-finite gradient"
    assert sum(p.grad.abs().sum() for p in model.parameters()) > 0
    assert model.num_parameters() == model.config.num_parameters()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_tiny_model_can_memorise_a_batch(layout):
    """End to end: 40 Adam steps on one batch bring the loss far down (the parts are wired to learn)."""
    torch.manual_seed(0)
    model = Transformer(_tiny(layout=layout, dropout=0.0, norm="pre")).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    src = torch.randint(4, 60, (4, 6))
    tgt = torch.cat([torch.ones(4, 1, dtype=torch.long), torch.randint(4, 60, (4, 5))], dim=1)
    losses = []
    for _ in range(40):
        loss = F.cross_entropy(model(src, tgt[:, :-1]).flatten(0, 1), tgt[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.25 * losses[0], losses[::10]


# --------------------------------------------------------------------------- positional encodings
def test_learned_positions_are_parameters_added_to_the_embeddings():
    cfg = _tiny(positional="learned")
    pe = LearnedPositionalEncoding(cfg)
    assert pe.embedding.weight.shape == (cfg.max_len, cfg.d_model)
    assert "embedding.weight" in pe.state_dict()  # saved with the model
    x, positions = torch.randn(2, 4, cfg.d_model), torch.tensor([[0, 1, 2, 3]])
    assert f32_close(pe(x, positions), x + pe.embedding.weight[:4], scale=magnitude(x))
    assert pe.rotation(positions) is None  # added to the embeddings, nothing rotated


def test_rope_rotates_queries_and_keys_only():
    cfg = _tiny(positional="rope")
    rope = RotaryPositionalEncoding(cfg)
    d_k = cfg.d_model // cfg.n_heads
    x = torch.randn(1, 2, 5, cfg.d_model)
    assert torch.equal(rope(x, torch.arange(5)[None]), x)  # nothing added to the embeddings
    q = torch.randn(1, cfg.n_heads, 5, d_k)
    rotated = rope.rotation(torch.arange(5)[None])(q)
    assert f32_close(rotated.norm(dim=-1), q.norm(dim=-1), scale=magnitude(q.norm(dim=-1)))  # a rotation keeps lengths
    assert f32_close(rotated[:, :, 0], q[:, :, 0], scale=magnitude(q))  # position 0: angle 0
    # pairs (i, i + d_k/2) are rotated by pos * 10000^(-2i/d_k)
    pos, i = 3, 1
    theta = pos * 10000 ** (-2 * i / d_k)
    x1, x2 = q[0, 0, pos, i], q[0, 0, pos, i + d_k // 2]
    scale = magnitude(q) * max(1.0, theta)  # the angle is computed in float32: its error grows with it
    assert rotated[0, 0, pos, i].item() == f32((x1 * math.cos(theta) - x2 * math.sin(theta)).item(), scale)
    assert rotated[0, 0, pos, i + d_k // 2].item() == f32((x1 * math.sin(theta) + x2 * math.cos(theta)).item(), scale)


def test_rope_scores_depend_only_on_relative_position():
    cfg = _tiny(positional="rope")
    rope = RotaryPositionalEncoding(cfg)
    d_k = cfg.d_model // cfg.n_heads
    q, k = torch.randn(1, 1, 1, d_k), torch.randn(1, 1, 1, d_k)
    scores = []
    for start in (0, 4, 11):
        rq = rope.rotation(torch.tensor([[start + 5]]))(q)
        rk = rope.rotation(torch.tensor([[start + 2]]))(k)
        scores.append((rq * rk).sum().item())
    assert scores == f32([scores[0]] * 3, scale=magnitude(q) * magnitude(k) * d_k)  # a dot product of d_k terms


# --------------------------------------------------------------------------- norms, feed-forward blocks, kernels
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("norm", REGISTERED["norm"])
def test_stacks_end_with_a_layer_norm_when_the_norm_says_so(layout, norm):
    model = Transformer(_tiny(layout=layout, norm=norm))
    final = ["decoder_norm", "encoder_norm"] if LAYOUT.about(layout, "has_encoder") else ["final_norm"]
    expected = nn.LayerNorm if NORM.about(norm, "final_norm") else nn.Identity
    assert all(type(getattr(model.body, name)) is expected for name in final)
    assert NORM.about("pre", "final_norm") and not NORM.about("post", "final_norm")  # the paper's: none


def test_gelu_feed_forward():
    torch.manual_seed(0)
    ffn = GELUFeedForward(8, 16)
    x = torch.randn(3, 8)
    expected = ffn.w_2(F.gelu(ffn.w_1(x)))
    assert f32_close(ffn(x), expected, scale=magnitude(expected))


def test_swiglu_feed_forward():
    torch.manual_seed(0)
    ffn = SwiGLUFeedForward(8, 96)
    hidden = ffn.w_2.in_features
    assert hidden == 64 and hidden % 8 == 0  # 2/3 of d_ff, a multiple of 8
    x = torch.randn(3, 8)
    w1, w3 = ffn.w_13.weight[:hidden], ffn.w_13.weight[hidden:]
    expected = (F.silu(x @ w1.T) * (x @ w3.T)) @ ffn.w_2.weight.T
    assert f32_close(ffn(x), expected, scale=magnitude(expected))
    assert ffn.w_13.bias is None and ffn.w_2.bias is None


@pytest.mark.parametrize("layout", LAYOUTS)
def test_sdpa_kernel_gives_the_same_model(layout):
    torch.manual_seed(0)
    math_model = Transformer(_tiny(layout=layout, attention="math", dropout=0.0)).eval()
    sdpa_model = Transformer(_tiny(layout=layout, attention="sdpa", dropout=0.0)).eval()
    sdpa_model.load_state_dict(math_model.state_dict())  # kernels hold no weights: same checkpoint
    src, tgt = torch.tensor([[5, 6, 7, 2], [8, 2, 0, 0]]), torch.tensor([[1, 9, 10], [1, 11, 0]])
    with torch.no_grad():
        expected = math_model(src, tgt)
        assert f32_close(sdpa_model(src, tgt), expected, scale=magnitude(expected))


def test_decoder_only_has_one_stack_and_no_encoder():
    model = Transformer(_tiny(layout="decoder-only"))
    names = list(model.state_dict())
    assert not any("encoder" in n or "cross_attn" in n for n in names)
    assert len(model.body.layers) == model.config.n_decoder_layers
    assert model.encode(torch.tensor([[5, 6, 2]])).memory is None
