"""Weights stored in float16 (``save_pretrained(weights_dtype="float16")``), loaded as float32: exact float32
parameters, logits within float16 rounding, half the bytes, re-saves that keep the dtype, values float16 cannot
hold refused, strict loading kept, and the Hub, a DecodingPool and the exports on a half-stored folder."""
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from helpers.decoding_fixtures import one_thread, random_model
from helpers.tolerances import F16_UNIT, half_weights_close, magnitude
from transformer_hub import Transformer, cli
from transformer_hub.decoding import DecodingPool, generate
from transformer_hub.hub import CheckpointError, model_card
from transformer_hub.hub.loading import tied_groups
from transformer_hub.training import checkpoint as ckpt

WEIGHTS = "model.safetensors"
TEXTS = ["a dog runs in the park .", "two people sit on a bench with a red ball .", "the man", "water",
         "a small child plays with a blue ball in the water .", "big"]
STORED_SO = "The weights are stored in float16 (`model.safetensors`) and loaded as float32"


def perturbed(make_model, **overrides) -> Transformer:
    """A tiny model with non-trivial values everywhere (biases and norms start at 0 and 1)."""
    model = make_model(**overrides)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    return model


def dtypes(folder: Path) -> set:
    with safe_open(str(folder / WEIGHTS), framework="pt") as fh:
        return {fh.get_slice(name).get_dtype() for name in fh.keys()}


def data_bytes(folder: Path) -> int:
    """The tensor bytes of a safetensors file: its size less the 8-byte length and the JSON header."""
    raw = (folder / WEIGHTS).read_bytes()
    return len(raw) - 8 - int.from_bytes(raw[:8], "little")


def logits(model: Transformer) -> torch.Tensor:
    generator = torch.Generator().manual_seed(3)
    src = torch.randint(4, model.config.src_vocab_size, (3, 11), generator=generator)
    tgt = torch.randint(4, model.config.tgt_vocab_size, (3, 9), generator=generator)
    tgt[:, 0] = model.config.bos_id
    with torch.no_grad():
        return model.eval()(src, tgt)


def rounded_state(model: Transformer) -> dict:
    return {name: t.half().float() for name, t in model.state_dict().items()}


# --------------------------------------------------------------------------- saving and loading
@pytest.mark.parametrize("overrides", [{}, dict(positional="rope", norm="pre", feed_forward="swiglu",
                                                share_embeddings=False)], ids=["paper", "rope-pre-swiglu-unshared"])
def test_float16_round_trip_gives_the_rounded_weights_in_float32(make_model, tmp_path, overrides):
    model = perturbed(make_model, **overrides)
    model.save_pretrained(tmp_path / "full")
    model.save_pretrained(tmp_path / "half", weights_dtype="float16")
    assert model.weights_dtype == "float32"  # the call chose the stored dtype; the model is unchanged
    assert dtypes(tmp_path / "full") == {"F32"} and dtypes(tmp_path / "half") == {"F16"}
    assert 2 * data_bytes(tmp_path / "half") == data_bytes(tmp_path / "full")
    assert (tmp_path / "half" / WEIGHTS).stat().st_size < 0.52 * (tmp_path / "full" / WEIGHTS).stat().st_size
    loaded = Transformer.from_pretrained(tmp_path / "half")
    assert loaded.weights_dtype == "float16" and not loaded.training
    assert {p.dtype for p in loaded.parameters()} == {torch.float32}
    expected = rounded_state(model)
    for name, tensor in loaded.state_dict().items():
        assert tensor.dtype == torch.float32 and torch.equal(tensor, expected[name]), name
    assert not all(torch.equal(t, expected[n]) for n, t in model.state_dict().items())  # rounding did round


def test_logits_move_by_float16_rounding_only(make_model, tmp_path):
    model = perturbed(make_model)
    model.save_pretrained(tmp_path, weights_dtype="float16")
    loaded = Transformer.from_pretrained(tmp_path)
    original, got = logits(model), logits(loaded)
    matrices = sum(p.dim() >= 2 for p in model.parameters())
    assert half_weights_close(original, got, matrices)
    moved = float((original - got).abs().max())
    assert 0 < moved < matrices * F16_UNIT * magnitude(original)
    model.load_state_dict(rounded_state(model))  # the same float32 computation on the rounded weights
    assert torch.equal(logits(model), got)


def test_the_card_says_how_the_weights_are_stored(make_model, tmp_path):
    model = perturbed(make_model)
    model.save_pretrained(tmp_path / "full")
    model.save_pretrained(tmp_path / "half", weights_dtype="float16")
    assert STORED_SO in (tmp_path / "half" / "README.md").read_text()
    assert "float16" not in (tmp_path / "full" / "README.md").read_text()
    loaded = Transformer.from_pretrained(tmp_path / "half")
    assert STORED_SO in str(model_card(loaded))  # what the scripts that rewrite a card (write_card) write
    assert "float16" not in str(model_card(Transformer.from_pretrained(tmp_path / "full")))


def test_a_loaded_half_model_saves_again_in_float16_unless_told(make_model, tmp_path):
    perturbed(make_model).save_pretrained(tmp_path / "half", weights_dtype="float16")
    loaded = Transformer.from_pretrained(tmp_path / "half")
    loaded.save_pretrained(tmp_path / "again")
    assert (tmp_path / "again" / WEIGHTS).read_bytes() == (tmp_path / "half" / WEIGHTS).read_bytes()
    assert STORED_SO in (tmp_path / "again" / "README.md").read_text()
    loaded.save_pretrained(tmp_path / "wide", weights_dtype="float32")
    assert dtypes(tmp_path / "wide") == {"F32"} and loaded.weights_dtype == "float16"
    wide = Transformer.from_pretrained(tmp_path / "wide")
    assert wide.weights_dtype == "float32"
    assert all(torch.equal(t, loaded.state_dict()[n]) for n, t in wide.state_dict().items())  # float32 holds them


def test_checkpoints_stay_float32_whatever_the_model_was_loaded_from(make_model, tmp_path):
    perturbed(make_model).save_pretrained(tmp_path / "half", weights_dtype="float16")
    model = Transformer.from_pretrained(tmp_path / "half")
    folder = ckpt.save_checkpoint(tmp_path / "checkpoints", model, torch.optim.Adam(model.parameters()),
                                  ckpt.RunState(step=1), keep_last=1)
    assert dtypes(folder) == {"F32"}


@pytest.mark.parametrize("value, why", [(70000.0, "holds 70000, past float16's largest finite value 65504"),
                                        (float("nan"), "holds NaN or infinite values")], ids=["overflow", "nan"])
def test_a_value_float16_cannot_hold_is_refused_naming_its_tensor(make_model, tmp_path, value, why):
    model = make_model()
    name = tied_groups(model)[-1][0]
    with torch.no_grad():
        model.state_dict(keep_vars=True)[name].view(-1)[0] = value
    with pytest.raises(ValueError, match=f"cannot store tensor {name} in float16: it {why}"):
        model.save_pretrained(tmp_path / "half", weights_dtype="float16")
    assert not (tmp_path / "half" / WEIGHTS).exists()


def test_an_unknown_weights_dtype_is_refused(tiny_model, tmp_path):
    with pytest.raises(ValueError, match="weights_dtype must be one of float32, float16, got 'bfloat16'"):
        tiny_model.save_pretrained(tmp_path, weights_dtype="bfloat16")
    assert not (tmp_path / WEIGHTS).exists()


@pytest.mark.parametrize("edit, match", [("drop", "missing tensors"), ("reshape", "has shape")])
def test_strict_loading_holds_for_half_files(tiny_model, tmp_path, edit, match):
    tiny_model.save_pretrained(tmp_path, weights_dtype="float16")
    tensors = load_file(str(tmp_path / WEIGHTS))
    name = sorted(tensors)[0]
    if edit == "drop":
        del tensors[name]
    else:
        tensors[name] = tensors[name].reshape(-1)[:-1].contiguous()
    save_file(tensors, str(tmp_path / WEIGHTS))
    with pytest.raises(CheckpointError, match=match):
        Transformer.from_pretrained(tmp_path)


# --------------------------------------------------------------------------- the Hub, a pool, the exports
def test_push_and_pull_a_half_model(make_model, hub_server, tmp_path):
    model = perturbed(make_model)
    model.save_pretrained(tmp_path / "half", weights_dtype="float16", push_to_hub=True, repo_id="user/half")
    assert hub_server.files_at("user/half")[WEIGHTS] == (tmp_path / "half" / WEIGHTS).read_bytes()
    pulled = Transformer.from_pretrained("user/half")
    assert pulled.weights_dtype == "float16"
    expected = rounded_state(model)
    assert all(t.dtype == torch.float32 and torch.equal(t, expected[n]) for n, t in pulled.state_dict().items())
    pulled.push_to_hub("user/half-again")  # a pulled half model goes back up in float16
    assert hub_server.files_at("user/half-again")[WEIGHTS] == (tmp_path / "half" / WEIGHTS).read_bytes()
    assert STORED_SO in hub_server.files_at("user/half-again")["README.md"].decode()
    assert hub_server.unhandled == []


@pytest.mark.slow
def test_a_decoding_pool_serves_a_half_model(tmp_path):
    random_model(seed=2).save_pretrained(tmp_path / "half", weights_dtype="float16")
    model = Transformer.from_pretrained(tmp_path / "half")
    with one_thread():
        expected = generate(model, TEXTS, max_length=30)
        with DecodingPool(model, processes=1) as pool:  # the worker loads the pool's copy, written in float16
            assert dtypes(Path(pool.folder)) == {"F16"}
            got = pool.generate(TEXTS, max_length=30)
    assert [r.best.tokens for r in got] == [r.best.tokens for r in expected]


def test_ctranslate2_export_of_a_half_folder_decodes_as_the_folder_does(tmp_path, capsys):
    ctranslate2 = pytest.importorskip("ctranslate2")
    random_model(seed=2).save_pretrained(tmp_path / "half", weights_dtype="float16")
    status = cli.main(["export", "--model", str(tmp_path / "half"), "--format", "ctranslate2",
                       "--out", str(tmp_path / "ct2")])
    assert status == 0, capsys.readouterr().err
    model = Transformer.from_pretrained(tmp_path / "half")
    with one_thread():
        results = generate(model, TEXTS, max_length=40)
        translator = ctranslate2.Translator(str(tmp_path / "ct2"), compute_type="float32", intra_threads=1)
        out = translator.translate_batch([r.source_pieces for r in results], beam_size=1, min_decoding_length=0,
                                         max_decoding_length=40, max_input_length=0, return_end_token=True)
    piece_id = model.tokenizer.target.PieceToId
    ours = [r.best.tokens + ([model.config.eos_id] if r.best.finished else []) for r in results]
    assert [[piece_id(p) for p in o.hypotheses[0]] for o in out] == ours
    assert sum(map(len, ours)) >= 3 * len(TEXTS)  # not a comparison of empty outputs


@pytest.mark.slow
def test_marian_export_of_a_half_folder_loads_the_rounded_weights(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    random_model(seed=2).save_pretrained(tmp_path / "half", weights_dtype="float16")
    status = cli.main(["export", "--model", str(tmp_path / "half"), "--format", "marian", "--out",
                       str(tmp_path / "marian")])
    assert status == 0, capsys.readouterr().err
    marian = transformers.MarianMTModel.from_pretrained(str(tmp_path / "marian"))
    model = Transformer.from_pretrained(tmp_path / "half")
    assert {p.dtype for p in marian.parameters()} == {torch.float32}
    with one_thread():
        results = generate(model, TEXTS, max_length=30)
        got = [marian.generate(input_ids=torch.tensor([r.source_ids]), attention_mask=torch.ones(1, len(r.source_ids)),
                               num_beams=1, do_sample=False, max_new_tokens=30)[0, 1:].tolist() for r in results]
    ours = [r.best.tokens + ([model.config.eos_id] if r.best.finished else []) for r in results]
    assert got == ours and sum(map(len, ours)) >= 3 * len(TEXTS)
