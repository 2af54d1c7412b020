"""``python -m scripts.ship_model``: a run's final folder into the Space with float16 weights, every other file
copied, the card saying how the weights are stored; one-line refusals that leave the destination as it was."""
import re
from pathlib import Path

import pytest
import torch

from helpers.decoding_fixtures import random_model
from scripts import ship_model
from transformer_hub import Transformer
from transformer_hub.hub import card_data_from_file

WEIGHTS = "model.safetensors"
RESULTS = [{"dataset_name": "Multi30k", "dataset_type": "multi30k", "split": "val", "direction": "en-de",
            "metric": "bleu", "metric_name": "sacreBLEU (cased)", "value": 12.5}]
EXTRAS = {"metrics.jsonl": b'{"step": 1, "loss": 5.0}\n', "training_curves.png": b"\x89PNG not really",
          "rerank.json": b"{}\n"}


@pytest.fixture(scope="module")
def final(tmp_path_factory) -> Path:
    """A tiny model folder laid out as a training run's final/: weights, config, tokenizer, card, log, plot."""
    folder = tmp_path_factory.mktemp("run") / "final"
    model = random_model(seed=3)
    model.card_data = {"name": "tiny test model", "results": RESULTS, "training": {"updates": 7}}
    model.save_pretrained(folder)
    for name, data in EXTRAS.items():
        (folder / name).write_bytes(data)
    return folder


def ship(argv, capsys):
    status = ship_model.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_ship_writes_float16_weights_and_copies_everything_else(final, tmp_path, capsys):
    dest = tmp_path / "space" / "models" / "tiny"
    status, out, err = ship([final, dest], capsys)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert re.fullmatch(r"model\.safetensors: \d+\.\d kB -> \d+\.\d kB \(float16\)", lines[0]), lines[0]
    before, after = (float(x) for x in re.findall(r"(\d+\.\d) kB", lines[0]))
    assert after == pytest.approx(before / 2, rel=0.05)
    assert lines[-1].startswith(f"{dest}: {len(lines) - 1} files, ")
    assert {p.name for p in dest.iterdir()} == {p.name for p in final.iterdir()}
    assert {line.split(":")[0] for line in lines[:-1]} == {p.name for p in final.iterdir()}
    for name in ("config.json", "tokenizer_config.json", "spm.model", *EXTRAS):
        assert (dest / name).read_bytes() == (final / name).read_bytes(), name
    card = (dest / "README.md").read_text()
    assert "stored in float16" in card and "loaded as float32" in card and "![training curves]" in card
    results = [card_data_from_file(str(folder / "README.md"))["results"] for folder in (dest, final)]
    assert results[0] == results[1] == [{**r, "value": pytest.approx(r["value"])} for r in RESULTS]
    shipped, source = Transformer.from_pretrained(dest), Transformer.from_pretrained(final)
    assert shipped.weights_dtype == "float16"
    for name, tensor in shipped.state_dict().items():
        assert tensor.dtype == torch.float32 and torch.equal(tensor, source.state_dict()[name].half().float()), name
    assert [p.name for p in dest.parent.iterdir()] == ["tiny"]  # no temporary folder left beside it


def test_ship_float32_keeps_the_weights_file(final, tmp_path, capsys):
    status, out, _ = ship([final, tmp_path / "wide", "--dtype", "float32"], capsys)
    assert status == 0 and "(float32)" in out.splitlines()[0]
    assert (tmp_path / "wide" / WEIGHTS).read_bytes() == (final / WEIGHTS).read_bytes()
    assert "float16" not in (tmp_path / "wide" / "README.md").read_text()


def test_force_replaces_an_existing_destination(final, tmp_path, capsys):
    dest = tmp_path / "tiny"
    dest.mkdir()
    (dest / "stale.txt").write_text("from an older model")
    status, _, err = ship([final, dest], capsys)
    assert status == 2 and err == f"error: {dest} exists: pass --force to replace it\n"
    assert [p.name for p in dest.iterdir()] == ["stale.txt"]
    status, _, err = ship([final, dest, "--force"], capsys)
    assert status == 0, err
    assert not (dest / "stale.txt").exists() and (dest / WEIGHTS).is_file()


@pytest.mark.parametrize("case, message", [
    ("missing", "{source}: no such folder"),
    ("not-a-model", "{source} is not a model folder: it has no config.json and model.safetensors"),
    ("corrupt", "{source}/model.safetensors is not a readable safetensors file"),
    ("into-itself", "{dest} holds the source folder {source}"),
    ("bad-dtype", "argument --dtype: invalid choice: 'bfloat16'"),
])
def test_mistakes_are_one_line_and_write_nothing(final, tmp_path, capsys, case, message):
    source, dest, extra = tmp_path / "src", tmp_path / "dest", []
    if case == "not-a-model":
        source.mkdir()
        (source / "README.md").write_text("a card alone")
    elif case == "corrupt":
        source.mkdir()
        for path in final.iterdir():
            (source / path.name).write_bytes(path.read_bytes())
        (source / WEIGHTS).write_bytes(b"\x00" * 40)
    elif case == "into-itself":
        source, dest, extra = final, final.parent, ["--force"]
    elif case == "bad-dtype":
        source, extra = final, ["--dtype", "bfloat16"]
    status, out, err = ship([source, dest, *extra], capsys)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert message.format(source=source, dest=dest) in err
    if case != "into-itself":
        assert not dest.exists()
    assert (final / WEIGHTS).is_file()
