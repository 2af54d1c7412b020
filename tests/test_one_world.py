"""One world for the tests: the fixture models are the same whether or not a corpus is found
($TRANSFORMER_HUB_DATA), so a fresh clone tests what CI tests."""
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# Builds the decoding tests' trained model and the Space's test model (a few updates each) into the folder given
# as argv[1]; prints each tensor's values as a list, by name.
BUILD = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from safetensors.torch import load_file
from helpers.decoding_fixtures import trained_model
from helpers.space_fixtures import model_for_tests
tensors = {{"decoding." + k: v for k, v in trained_model(steps=3).state_dict().items()}}
space = model_for_tests(Path(sys.argv[1]), updates=2)
tensors.update({{"space." + k: v for k, v in load_file(str(space / "model.safetensors")).items()}})
print(json.dumps({{k: v.flatten().tolist() for k, v in sorted(tensors.items())}}))
"""


def build(folder: Path, data) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRANSFORMER_HUB_DATA"}
    if data is not None:
        env["TRANSFORMER_HUB_DATA"] = str(data)
    out = subprocess.run([sys.executable, "-c", BUILD.format(tests=str(TESTS)), str(folder)], env=env, cwd=TESTS.parent,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.slow
def test_the_fixture_models_are_the_same_with_and_without_a_corpus(tmp_path):
    corpus = tmp_path / "multi30k"  # a corpus in Multi30k's layout, unlike the synthetic pairs
    corpus.mkdir()
    for split in ("train", "val", "test_2016_flickr"):
        for lang, line in (("en", "Nothing here is like the fixtures' sentences."), ("de", "Nichts hier gleicht ihnen.")):
            with gzip.open(corpus / f"{split}.{lang}.gz", "wt", encoding="utf-8") as fh:
                fh.write((line + "\n") * 200)
    without = build(tmp_path / "without", tmp_path / "missing")
    with_corpus = build(tmp_path / "with", corpus)
    assert without.keys() == with_corpus.keys() and any(k.startswith("space.") for k in without)
    assert without == with_corpus  # bit for bit: the same data, seeds and kernels on this machine
