"""A user who names no domain gets the one the domain classifier tells, in every path: the command line without
``--model`` (``--domain auto`` by default), ``translate_texts`` and ``Transformer.translate`` on a model that ships
a classifier (the shipped v4), the Ray jobs' translator; a named domain no model knows is a one-line error."""
import json
from pathlib import Path

import pytest

from transformer_hub import Transformer, cli
from transformer_hub.cli.options import MODELS_DIR_ENV
from transformer_hub.decoding import generate
from transformer_hub.text.domain import model_domain_classifier
from transformer_hub.text.pipeline import ModelSet, translate_texts

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "space" / "models"
V4 = MODELS / "multilingual-v4"
SOFTWARE = "To insert a table, choose Insert - Table."
CAPTION = "A man is riding a bicycle down the street."

pytestmark = [pytest.mark.slow,  # loads the shipped models
              pytest.mark.skipif(not (V4 / "domains.json").is_file(), reason="the shipped models are not here")]


@pytest.fixture(scope="module")
def v4() -> Transformer:
    return Transformer.from_pretrained(V4)


def test_the_shipped_classifier_tells_the_two_sentences_apart(v4):
    assert [d for d, _ in model_domain_classifier(v4).predict([SOFTWARE, CAPTION])] == ["software", "captions"]


def test_the_cli_without_model_sends_software_to_v4_and_a_caption_to_the_captions_model(tmp_path, monkeypatch,
                                                                                          capsys):
    monkeypatch.setenv(MODELS_DIR_ENV, str(MODELS))
    source, out = tmp_path / "in.en", tmp_path / "out.jsonl"
    source.write_text(f"{SOFTWARE}\n{CAPTION}\n", encoding="utf-8")
    assert cli.main(["translate", "--src-lang", "en", "--tgt-lang", "de", "--strategy", "greedy", "--json",
                     "--input", str(source), "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"model: {V4} (the best measured for en->de, software text)" in err
    assert f"model: {MODELS / 'en-de'} (the best measured for en->de, captions text)" in err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    software = Transformer.from_pretrained(V4)
    expected = generate(software, [SOFTWARE], strategy="greedy", src_lang="en", tgt_lang="de", domain="software")
    assert rows[0]["text"] == expected[0].text
    assert cli.main(["translate", "--src-lang", "en", "--tgt-lang", "de", "--domain", "legal",
                     "--input", str(source)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("unknown domain 'legal': the domains are captions, software (or auto)") and "\n" not in err


def test_python_defaults_to_the_classifiers_domain(v4):
    texts = [SOFTWARE, CAPTION]
    told = [generate(v4, [t], strategy="greedy", src_lang="en", tgt_lang="de", domain=d)[0].text
            for t, d in zip(texts, ("software", "captions"))]
    assert v4.translate(texts, src_lang="en", tgt_lang="de") == told  # Transformer.translate: no domain named
    results = translate_texts(v4, texts, src_lang="en", tgt_lang="de", strategy="greedy")
    assert [r.domain for r in results] == ["software", "captions"] and [r.text for r in results] == told
    as_caption = generate(v4, [SOFTWARE], strategy="greedy", src_lang="en", tgt_lang="de")[0].text
    assert v4.translate([SOFTWARE], src_lang="en", tgt_lang="de", domain=None) == [as_caption]  # None: the default


def test_the_library_over_the_shipped_models_picks_each_texts_model(v4):
    models = ModelSet({name: Transformer.from_pretrained(MODELS / name) for name in ("en-de", "multilingual-v4")})
    results = translate_texts(models, [SOFTWARE, CAPTION], src_lang="en", tgt_lang="de", strategy="greedy")
    assert [(r.domain, r.model) for r in results] == [("software", "multilingual-v4"), ("captions", "en-de")]
