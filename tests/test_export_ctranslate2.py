"""CTranslate2 export: float32 greedy tokens equal ours for every exportable variant; refusals; the folder; the CLI."""
import gzip
import json
from pathlib import Path

import pytest

from helpers.tolerances import f32
from helpers.decoding_fixtures import one_thread, random_model
from transformer_hub import cli
from helpers.corpus import MULTI30K, MULTI30K_MISSING
from transformer_hub.decoding import generate
from transformer_hub.export import UnsupportedModelError, check_exportable, export_ctranslate2

ctranslate2 = pytest.importorskip("ctranslate2")
from transformer_hub.export.ctranslate2 import convert_to_files  # noqa: E402  (needs ctranslate2)

ROOT = Path(__file__).resolve().parents[1]
VAL_EN = MULTI30K / "val.en.gz"
SHIPPED = ROOT / "space" / "models" / "en-de"
TEXTS = ["a dog runs in the park .", "two people sit on a bench with a red ball .", "the man", "water",
         "a small child plays with a blue ball in the water .", "Ein Hund rennt im Park.", "big"]
VARIANTS = {
    "paper": {}, "learned": dict(positional="learned"), "pre-norm": dict(norm="pre"), "rope": dict(positional="rope"),
    "swiglu": dict(feed_forward="swiglu"), "gelu": dict(feed_forward="gelu"), "sdpa": dict(attention="sdpa"),
    "modern": dict(positional="rope", norm="pre", feed_forward="swiglu", attention="sdpa"),
    "tied-embeddings": dict(share_embeddings=True),
}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def ct2_greedy(translator, results, max_steps):
    """Decode our source pieces (eos included) with ctranslate2 directly: ids with eos when finished."""
    out = translator.translate_batch([r.source_pieces for r in results], beam_size=1, min_decoding_length=0,
                                     max_decoding_length=max_steps, max_input_length=0, return_end_token=True)
    return [[p for p in r.hypotheses[0]] for r in out]


def ours(result):
    return result.best.tokens + ([2] if result.best.finished else [])


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_float32_greedy_tokens_equal_ours(name):
    model = random_model(seed=2, **VARIANTS[name])
    translator = ctranslate2.Translator("test", files=convert_to_files(model), intra_threads=1)
    results = generate(model, TEXTS, max_length=40)
    got = ct2_greedy(translator, results, 40)
    piece_id = model.tokenizer.target.PieceToId
    assert [[piece_id(p) for p in pieces] for pieces in got] == [ours(r) for r in results]
    assert sum(len(ours(r)) for r in results) >= 3 * len(TEXTS)  # not a vacuous comparison of empty outputs


def test_decoder_only_layout_is_refused_naming_what_is_missing(tmp_path):
    model = random_model(layout="decoder-only")
    with pytest.raises(UnsupportedModelError, match="decoder-only") as info:
        export_ctranslate2(model, tmp_path / "out")
    assert "encoder" in str(info.value) and "TransformerSpec" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_every_builtin_encoder_decoder_variant_is_exportable():
    for overrides in VARIANTS.values():
        check_exportable(random_model(**overrides).config, "ctranslate2")  # raises if not


def test_exported_folder_is_self_contained(tmp_path):
    model = random_model(positional="rope", norm="pre", feed_forward="swiglu")
    out = export_ctranslate2(model, tmp_path / "ct2")
    names = {p.name for p in out.iterdir()}
    assert {"model.bin", "config.json", "shared_vocabulary.json", "spm.model", "README.md"} <= names
    config = json.loads((out / "config.json").read_text())
    assert config["decoder_start_token"] == "<s>" and config["eos_token"] == "</s>"
    assert config["layer_norm_epsilon"] == f32(1e-5, scale=1e-5)  # stored as float32
    readme = (out / "README.md").read_text()
    assert "ctranslate2.Translator" in readme and "</s>" in readme and "length" in readme
    translator = ctranslate2.Translator(str(out), intra_threads=1)  # loads from the folder alone
    results = generate(model, TEXTS, max_length=30)
    piece_id = model.tokenizer.target.PieceToId
    assert [[piece_id(p) for p in h] for h in ct2_greedy(translator, results, 30)] == [ours(r) for r in results]
    with pytest.raises(FileExistsError):
        export_ctranslate2(model, out)
    export_ctranslate2(model, out, quantization="int8", force=True)
    assert ctranslate2.Translator(str(out), compute_type="int8", intra_threads=1).translate_batch([["▁a", "</s>"]])


def test_cli_export_ctranslate2_and_refusal(tmp_path, capsys):
    folder = tmp_path / "model"
    random_model().save_pretrained(folder)
    status = cli.main(["export", "--model", str(folder), "--format", "ctranslate2", "--out", str(tmp_path / "ct2"),
                       "--quantization", "int8"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert (tmp_path / "ct2" / "model.bin").is_file() and "ct2" in out
    random_model(layout="decoder-only").save_pretrained(tmp_path / "dec")
    status = cli.main(["export", "--model", str(tmp_path / "dec"), "--format", "ctranslate2", "--out",
                       str(tmp_path / "dec-ct2")])
    _, err = capsys.readouterr()
    assert status == 2 and "decoder-only" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.data
def test_shipped_model_through_ctranslate2_translator_matches_our_greedy(tmp_path):
    if not VAL_EN.is_file():
        pytest.skip(MULTI30K_MISSING)
    if not (SHIPPED / "model.safetensors").is_file():
        pytest.skip(f"shipped model not found at {SHIPPED}")
    from transformer_hub import Transformer

    with gzip.open(VAL_EN, "rt", encoding="utf-8") as fh:
        texts = [line.strip() for _, line in zip(range(200), fh)]
    model = Transformer.from_pretrained(str(SHIPPED))
    out = export_ctranslate2(model, tmp_path / "en-de")
    translator = ctranslate2.Translator(str(out), compute_type="float32", intra_threads=1)
    results = generate(model, texts, strategy="greedy")
    sources = [r.source_pieces for r in results]
    got = translator.translate_batch(sources, beam_size=1, min_decoding_length=0, max_input_length=0,
                                     max_decoding_length=max(len(s) for s in sources) + 50, max_batch_size=64)
    same = sum(g.hypotheses[0] == model.tokenizer.pieces(r.best.tokens) for g, r in zip(got, results))
    assert same >= 0.99 * len(texts), f"only {same}/{len(texts)} sentences equal"
