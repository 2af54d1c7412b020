"""TransformerConfig: defaults, presets, validation (before any tensor exists), (de)serialisation, size estimate."""
import itertools
import json

import pytest
import torch

from transformer_hub import ATTENTION, FEED_FORWARD, LAYOUT, NORM, POSITIONAL, PRESETS, Transformer, TransformerConfig
from transformer_hub import config as config_module


def test_defaults_are_the_papers_base_model():
    cfg = TransformerConfig()
    assert (cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.dropout) == \
        (512, 8, 2048, 6, 6, 0.1)  # Table 3, "base"
    assert (cfg.positional, cfg.norm, cfg.feed_forward, cfg.layout) == \
        ("sinusoidal", "post", "relu", "encoder-decoder")
    assert (cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id) == (0, 1, 2, 3)


@pytest.mark.parametrize("name, expected", [
    ("base", dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, dropout=0.1)),
    ("big", dict(d_model=1024, n_heads=16, d_ff=4096, n_encoder_layers=6, n_decoder_layers=6, dropout=0.3)),
    ("cpu", dict(d_model=128, n_heads=4, d_ff=256, share_embeddings=True)),
    ("tiny", dict(d_model=32, n_heads=4, d_ff=64, dropout=0.0)),
])
def test_presets(name, expected):
    assert name in PRESETS
    cfg = TransformerConfig.preset(name)
    for key, value in expected.items():
        assert getattr(cfg, key) == value, key


def test_preset_overrides_and_unknown_preset():
    assert TransformerConfig.preset("tiny", d_model=64).d_model == 64
    with pytest.raises(ValueError, match=r"unknown preset 'huge'.*base.*big.*cpu.*tiny"):
        TransformerConfig.preset("huge")
    with pytest.raises(ValueError, match="divisible"):  # overrides are validated too
        TransformerConfig.preset("tiny", d_model=30)


@pytest.mark.parametrize("field, registry", [("positional", POSITIONAL), ("norm", NORM), ("feed_forward", FEED_FORWARD),
                                             ("attention", ATTENTION), ("layout", LAYOUT)])
def test_unknown_variant_lists_registered_names(field, registry):
    with pytest.raises(ValueError) as err:
        TransformerConfig(**{field: "no-such-part"})
    message = str(err.value)
    assert "no-such-part" in message and field in message
    for name in registry.names():
        assert name in message


def test_d_model_must_divide_by_heads():
    with pytest.raises(ValueError, match=r"d_model=100 must be divisible by n_heads=8"):
        TransformerConfig(d_model=100, n_heads=8)


@pytest.mark.parametrize("field", ["src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff",
                                   "n_decoder_layers", "max_len"])
@pytest.mark.parametrize("value", [0, -1])
def test_non_positive_sizes(field, value):
    with pytest.raises(ValueError, match=rf"{field}={value} is out of range"):
        TransformerConfig(**{field: value})


def test_negative_encoder_layers():
    with pytest.raises(ValueError, match="n_encoder_layers=-1 is out of range"):
        TransformerConfig(n_encoder_layers=-1)


@pytest.mark.parametrize("overrides, pattern", [
    (dict(d_model=10**9, n_heads=1), r"d_model=1000000000 is out of range"),
    (dict(max_len=10**12), r"max_len=1000000000000 is out of range"),
    (dict(src_vocab_size=10**9), r"src_vocab_size=1000000000 is out of range"),
    (dict(d_ff=10**8), r"d_ff=100000000 is out of range"),
    (dict(n_encoder_layers=10**6), r"n_encoder_layers=1000000 is out of range"),
    (dict(n_heads=4096, d_model=4096), r"n_heads=4096 is out of range"),
    # every size within its bound, the whole far over the parameter limit
    (dict(d_model=16384, n_heads=16, d_ff=65536, n_encoder_layers=64, n_decoder_layers=64), r"over the limit"),
])
def test_absurd_sizes_are_refused_before_allocation(overrides, pattern):
    with pytest.raises(ValueError, match=pattern):
        TransformerConfig(**overrides)


def test_parameter_limit_is_the_documented_one():
    cfg = TransformerConfig.preset("big", src_vocab_size=1000, tgt_vocab_size=1000)
    assert cfg.num_parameters() < config_module.MAX_PARAMETERS
    with pytest.raises(ValueError, match=f"{config_module.MAX_PARAMETERS:,}"):
        TransformerConfig(d_model=8192, n_heads=8, d_ff=32768, n_encoder_layers=32, n_decoder_layers=32)


@pytest.mark.parametrize("field, value", [
    ("d_model", "512"), ("d_model", 512.0), ("d_model", True), ("d_model", None), ("n_heads", [8]),
    ("dropout", "0.1"), ("dropout", True), ("share_embeddings", "yes"), ("share_embeddings", 1),
    ("positional", 1), ("layout", None), ("src_lang", 5), ("pad_id", 0.0),
])
def test_wrong_types(field, value):
    with pytest.raises(ValueError, match=field):
        TransformerConfig(**{field: value})


def test_integral_dropout_and_null_languages_are_fine():
    assert TransformerConfig(dropout=0).dropout == 0
    assert TransformerConfig(src_lang=None, tgt_lang="de").tgt_lang == "de"


@pytest.mark.parametrize("dropout", [-0.1, 1.0, 7])
def test_dropout_range(dropout):
    with pytest.raises(ValueError, match="dropout"):
        TransformerConfig(dropout=dropout)


@pytest.mark.parametrize("overrides, pattern", [
    (dict(pad_id=1), "distinct"),
    (dict(eos_id=64, src_vocab_size=64, tgt_vocab_size=64), "eos_id=64 must be a valid token id"),
    (dict(unk_id=-1), "unk_id=-1"),
])
def test_special_ids(overrides, pattern):
    with pytest.raises(ValueError, match=pattern):
        TransformerConfig(**overrides)


@pytest.mark.parametrize("overrides, pattern", [
    (dict(n_encoder_layers=0), "encoder-decoder layout needs n_encoder_layers >= 1"),
    (dict(layout="decoder-only"), "set n_encoder_layers=0"),
    (dict(layout="decoder-only", n_encoder_layers=0, src_vocab_size=100, tgt_vocab_size=200), "one shared vocabulary"),
    (dict(share_embeddings=True, src_vocab_size=100, tgt_vocab_size=200), "one shared vocabulary"),
    (dict(positional="rope", d_model=36, n_heads=4), "even head size"),
])
def test_inconsistent_settings(overrides, pattern):
    with pytest.raises(ValueError, match=pattern):
        TransformerConfig(**overrides)


def test_validate_catches_later_mutation():
    cfg = TransformerConfig.preset("tiny")
    cfg.d_model = 30
    with pytest.raises(ValueError, match="divisible"):
        cfg.validate()


# --------------------------------------------------------------------------- (de)serialisation
def test_dict_and_json_round_trip(tmp_path):
    cfg = TransformerConfig.preset("tiny", positional="rope", norm="pre", src_lang="en", tgt_lang="de")
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg.to_dict()))
    assert TransformerConfig.from_json_file(str(path)) == cfg


def test_from_dict_rejects_unknown_keys_listing_them():
    data = {**TransformerConfig.preset("tiny").to_dict(), "hidden_size": 32, "zzz": 1}
    with pytest.raises(ValueError, match=r"unknown config keys \['hidden_size', 'zzz'\]; known keys: \[.*'d_model'"):
        TransformerConfig.from_dict(data)


@pytest.mark.parametrize("data", [[1, 2], "d_model", None, 3])
def test_from_dict_needs_an_object(data):
    with pytest.raises(ValueError, match="config must be a JSON object"):
        TransformerConfig.from_dict(data)


def test_partial_dict_uses_defaults():
    assert TransformerConfig.from_dict({"d_model": 256, "n_heads": 4}).d_ff == 2048


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00garbage", b""])
def test_from_json_file_bad_content(tmp_path, content):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="cannot read config"):
        TransformerConfig.from_json_file(str(path))


def test_from_json_file_missing(tmp_path):
    with pytest.raises(ValueError, match="cannot read config"):
        TransformerConfig.from_json_file(str(tmp_path / "nope.json"))


# --------------------------------------------------------------------------- the size estimate
def test_base_preset_estimate_equals_the_built_model():
    cfg = TransformerConfig.preset("base", src_vocab_size=1000, tgt_vocab_size=1200)
    torch.manual_seed(0)
    model = Transformer(cfg)  # a real CPU model: ~47 M parameters
    assert cfg.num_parameters() == model.num_parameters() == sum(p.numel() for p in model.parameters())
    d, f = 512, 2048
    attention, ffn, norm = 4 * (d * d + d), 2 * d * f + f + d, 2 * d  # W^Q W^K W^V W^O (+ biases), eq. 2, LayerNorm
    encoder_layer, decoder_layer = attention + ffn + 2 * norm, 2 * attention + ffn + 3 * norm
    embeddings = (1000 + 1200) * d + 1200 * d  # source, target, pre-softmax (not shared here)
    assert cfg.num_parameters() == 6 * encoder_layer + 6 * decoder_layer + embeddings == 45_879_296


def _combinations():
    for positional, norm, ffn, layout, share in itertools.product(
            ["sinusoidal", "learned", "rope"], ["post", "pre"], ["relu", "gelu", "swiglu"],
            ["encoder-decoder", "decoder-only"], [False, True]):
        yield dict(positional=positional, norm=norm, feed_forward=ffn, layout=layout, share_embeddings=share,
                   n_encoder_layers=0 if layout == "decoder-only" else 3, n_decoder_layers=2, d_ff=100,
                   src_vocab_size=90, tgt_vocab_size=90)


@pytest.mark.parametrize("overrides", list(_combinations()), ids=lambda o: "-".join(
    str(o[k]) for k in ("layout", "positional", "norm", "feed_forward", "share_embeddings")))
def test_estimate_is_exact_for_every_built_in_variant(overrides):
    cfg = TransformerConfig.preset("tiny", **overrides)
    with torch.device("meta"):  # shapes only, nothing allocated
        model = Transformer(cfg)
    assert cfg.num_parameters() == model.num_parameters()


def test_estimate_allocates_nothing():
    cfg = TransformerConfig(d_model=4096, n_heads=8, d_ff=8192, n_encoder_layers=4, n_decoder_layers=4,
                            src_vocab_size=32_000, tgt_vocab_size=32_000)
    assert cfg.num_parameters() > 1_500_000_000  # ~1.7 B parameters, counted without building anything


class _WideFeedForward(torch.nn.Module):
    """A plugin-like part that states no ``parameter_count``: the count comes from a meta-device instance."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(d_model, 2 * d_ff), torch.nn.Linear(2 * d_ff, d_model)


def test_a_part_without_parameter_count_is_counted_exactly():
    FEED_FORWARD.register("wide-test")(_WideFeedForward)
    try:
        cfg = TransformerConfig.preset("tiny", feed_forward="wide-test")
        paper = TransformerConfig.preset("tiny")
        model = Transformer(cfg)
        per_layer = (2 * 32 * 128 + 128 + 32) - (2 * 32 * 64 + 64 + 32)  # the wide block minus equation 2's
        assert cfg.num_parameters() == model.num_parameters() == paper.num_parameters() + 4 * per_layer
    finally:
        FEED_FORWARD.unregister("wide-test")


def test_swiglu_hidden_size_has_one_definition():
    from transformer_hub.model.variants.feed_forward import SwiGLUFeedForward

    cfg = TransformerConfig.preset("tiny", feed_forward="swiglu", d_ff=100)
    block = SwiGLUFeedForward(cfg.d_model, cfg.d_ff)
    assert block.w_2.in_features == SwiGLUFeedForward.hidden_size(100) == 72  # 2/3 of 100, rounded up to 8
    assert SwiGLUFeedForward.parameter_count(cfg) == sum(p.numel() for p in block.parameters())
