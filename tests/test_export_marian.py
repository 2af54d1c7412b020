"""MarianMTModel export: the paper's block decodes to our greedy tokens; the folder loads; other variants are refused."""
import pytest
import torch

from helpers.decoding_fixtures import one_thread, random_model
from helpers.tolerances import f32_close, magnitude
from transformer_hub import cli
from transformer_hub.decoding import generate
from transformer_hub.export import UnsupportedModelError, export_marian
from transformer_hub.model import sinusoid_table

transformers = pytest.importorskip("transformers")
from transformer_hub.export.marian import permutation, to_marian  # noqa: E402  (needs transformers)

TEXTS = ["a dog runs in the park .", "two people sit on a bench with a red ball .", "the man", "water",
         "a small child plays with a blue ball in the water .", "big"]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def marian_greedy(marian, results, max_len):
    """Marian's greedy output for our source ids, one sentence at a time: ids after the start token."""
    out = []
    for r in results:
        ids = torch.tensor([r.source_ids])
        steps = min(max_len, len(r.source_ids) + 50)
        seq = marian.generate(input_ids=ids, attention_mask=torch.ones_like(ids), num_beams=1, do_sample=False,
                              max_new_tokens=steps)[0, 1:].tolist()
        out.append(seq)
    return out


@pytest.mark.parametrize("overrides", [{}, dict(share_embeddings=True), dict(feed_forward="gelu"),
                                       dict(attention="sdpa")], ids=["paper", "tied", "gelu", "sdpa"])
def test_marian_greedy_tokens_equal_ours(overrides):
    model = random_model(seed=2, **overrides)
    results = generate(model, TEXTS)
    expected = [r.best.tokens + ([model.config.eos_id] if r.best.finished else []) for r in results]
    assert marian_greedy(to_marian(model), results, model.config.max_len) == expected
    assert sum(map(len, expected)) >= 3 * len(TEXTS)


def test_marian_logits_equal_ours_with_padding():
    model = random_model(share_embeddings=True)
    src = torch.tensor([[40, 41, 42, 43, 2], [50, 51, 2, 0, 0]])
    tgt = torch.tensor([[1, 60, 61], [1, 62, 63]])
    with torch.no_grad():
        ours = model(src, tgt)
        theirs = to_marian(model)(input_ids=src, attention_mask=src != 0, decoder_input_ids=tgt).logits
    assert f32_close(theirs, ours, scale=magnitude(ours))  # transformers' own layers, in another order


def test_permuted_dimension_turns_marian_table_into_ours():
    marian = to_marian(random_model())
    table = marian.model.encoder.embed_positions.weight.detach()  # Marian's [sin | cos], recomputed on load
    ours = sinusoid_table(table.size(0), table.size(1))
    assert f32_close(table, ours[:, permutation(table.size(1))])  # sines and cosines: scale 1


def test_folder_loads_with_marian_classes_and_tokenizer(tmp_path):
    model = random_model(share_embeddings=True)
    out = export_marian(model, tmp_path / "marian")
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "generation_config.json", "model.safetensors", "source.spm", "target.spm",
            "vocab.json", "tokenizer_config.json", "README.md"} <= names
    marian = transformers.MarianMTModel.from_pretrained(str(out)).eval()
    tokenizer = transformers.MarianTokenizer.from_pretrained(str(out))
    cfg = marian.config
    assert (cfg.pad_token_id, cfg.eos_token_id, cfg.decoder_start_token_id) == (0, 2, 1)
    assert cfg.forced_eos_token_id is None and cfg.scale_embedding
    plain = ["a dog runs in the park .", "the man with a red ball ."]
    batch = tokenizer(plain, return_tensors="pt", padding=True)
    for row, text in zip(batch["input_ids"].tolist(), plain):
        assert [i for i in row if i != 0] == model.tokenizer.encode(text) + [2]  # MarianTokenizer appends </s>
    generated = marian.generate(**batch, num_beams=1, max_new_tokens=20)
    assert tokenizer.batch_decode(generated, skip_special_tokens=True) == model.translate(plain, max_length=20)


@pytest.mark.parametrize("overrides, missing", [
    (dict(norm="pre"), "post-norm only"), (dict(positional="rope"), "rotary"), (dict(positional="learned"), "learned"),
    (dict(feed_forward="swiglu"), "gated"), (dict(layout="decoder-only"), "encoder"),
])
def test_other_variants_are_refused_naming_what_marian_lacks(overrides, missing, tmp_path):
    with pytest.raises(UnsupportedModelError, match=missing) as info:
        export_marian(random_model(**overrides), tmp_path / "out")
    if overrides.get("layout") != "decoder-only":
        assert "--format ctranslate2" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_cli_export_marian(tmp_path, capsys):
    random_model().save_pretrained(tmp_path / "model")
    status = cli.main(["export", "--model", str(tmp_path / "model"), "--format", "marian", "--out",
                       str(tmp_path / "m")])
    _, err = capsys.readouterr()
    assert status == 0, err
    assert (tmp_path / "m" / "model.safetensors").is_file()
    status = cli.main(["export", "--model", str(tmp_path / "model"), "--format", "marian", "--out",
                       str(tmp_path / "m2"), "--quantization", "int8"])
    _, err = capsys.readouterr()
    assert status == 2 and "ctranslate2 format only" in err
