"""The shipped v4 (space/models/multilingual-v4): twelve directions in both domains, weights stored in half
precision and loaded as float32, and the numbers its card, README and docs print are the ones
``scripts/domain_results.py`` wrote (docs/v4_results.json), which a slice of each test split reproduces."""
import json
from pathlib import Path

import pytest

from helpers.corpus import (DEBIAN_CATALOGS, DEBIAN_CATALOGS_MISSING, LIBREOFFICE_HELP, LIBREOFFICE_HELP_MISSING,
                            MULTI30K, MULTI30K_MISSING)
from helpers.docs import page
from helpers.shipped import same_data, stored_dtypes, val_table_lines
from transformer_hub import Transformer
from transformer_hub.decoding import DecodingConfig
from transformer_hub.hub import card_data_from_file
from transformer_hub.hub.results import METRICS
from transformer_hub.hub.results import load as load_results
from transformer_hub.text.pipeline import translate_texts
from transformer_hub.training.data import load_split
from transformer_hub.training.metrics import score

ROOT = Path(__file__).resolve().parent.parent
V4 = ROOT / "space" / "models" / "multilingual-v4"
RESULTS = ROOT / "docs" / "v4_results.json"
LANGS = ["en", "de", "fr", "cs"]
DATASETS = {"captions": "multi30k", "software": "libreoffice-help", "catalogs": "debian-catalogs"}
TAGS = {"captions": "captions", "software": "software", "catalogs": "software"}  # the catalogs are software to v4


@pytest.fixture(scope="module")
def v4() -> Transformer:
    return Transformer.from_pretrained(V4)


@pytest.fixture(scope="module")
def saved():
    return load_results(RESULTS)



def test_v4_serves_twelve_directions_in_both_domains(v4):
    assert v4.config.languages == LANGS and v4.config.domains == ["captions", "software"]
    assert sorted(v4.config.pairs()) == sorted((a, b) for a in LANGS for b in LANGS if a != b)
    assert (V4 / "domains.json").is_file() and (V4 / "rerank.json").is_file()


def test_v4_is_stored_in_half_precision_and_computes_in_float32(v4):
    import torch

    assert stored_dtypes(V4 / "model.safetensors") == {"F16"}
    assert {p.dtype for p in v4.parameters()} == {torch.float32}
    assert (V4 / "model.safetensors").stat().st_size < 16 * 2 ** 20


def test_the_card_carries_the_results_files_scores_of_every_test_set(saved):
    """Every v4 score of the results file is on the card (each split, the catalogs' entries by length, and the
    first sentences of each with the beam and the quality mode); nothing else is."""
    card = card_data_from_file(str(V4 / "README.md"))
    on_card = {(r["dataset_type"], r["split"], r["direction"], r["metric_name"]): r["value"] for r in card["results"]}
    stored = {(DATASETS[s.split.split("/")[0]], s.split.split("/", 1)[1], s.direction,
               METRICS[s.metric] + (", quality best" if s.model == "v4 best" else "")): s.value
              for s in saved.results if s.model in ("v4", "v4 best")}
    whole = {k for k in stored if "[:" not in k[1] and ":" not in k[1]}
    assert {k[0] for k in whole} == set(DATASETS.values()) and on_card == stored
    assert {k[2] for k in whole if k[0] == "libreoffice-help"} == {f"{a}-{b}" for a, b in
                                                                  ((a, b) for a in LANGS for b in LANGS if a != b)}



@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("corpus, folder, split, direction, missing", [
    ("catalogs", DEBIAN_CATALOGS, "test", "en-de", DEBIAN_CATALOGS_MISSING),
    ("catalogs", DEBIAN_CATALOGS, "test", "cs-en", DEBIAN_CATALOGS_MISSING),
    ("software", LIBREOFFICE_HELP, "test", "en-fr", LIBREOFFICE_HELP_MISSING),
    ("captions", MULTI30K, "test_2016_flickr", "de-en", MULTI30K_MISSING),
])
def test_a_slice_of_the_test_split_scores_what_the_results_file_says(v4, saved, corpus, folder, split, direction,
                                                                     missing):
    """The first ``slice`` rows that both languages have, beam 5 with the domain's tag as the results command ran
    it.  The tolerance lets another machine's float32 kernels change a tie in a sentence or two (a few tenths of
    BLEU on a few hundred sentences), not a different model, tag or search."""
    src, tgt = direction.split("-")
    if not (folder / f"{split}.{src}.gz").is_file():
        pytest.skip(missing)
    if not same_data(saved, folder, corpus, split, (src, tgt)):
        pytest.skip(f"the {corpus} corpus holds other {split} files than the ones scored (another build?)")
    n = saved.settings["slice"]
    stored = {s.metric: s.value for s in saved.results
              if s.model == "v4" and s.split == f"{corpus}/{split}[:{n}]" and s.direction == direction}
    pairs = load_split(folder, split, src, tgt)[:n]
    config = DecodingConfig(strategy="beam", beam_size=saved.settings["beam"], batch_size=64)
    outputs = [r.text for r in translate_texts(v4, [s for s, _ in pairs], config, src_lang=src, tgt_lang=tgt,
                                               split_sentences=False, domain=TAGS[corpus])]  # the results' path
    measured = score(outputs, [t for _, t in pairs])
    assert set(stored) == {"bleu", "bleu_lowercase", "chrf"}
    for metric in ("bleu", "bleu_lowercase", "chrf"):
        assert measured[metric] == pytest.approx(stored[metric], abs=0.4), metric


def test_the_readme_and_the_results_page_quote_the_results_file(capsys):
    """README.md's table and docs/results.md's v4 tables are ``python -m scripts.domain_results --table
    docs/v4_results.json``, as printed."""
    from scripts import domain_results

    assert domain_results.main(["--table", str(RESULTS)]) == 0
    printed = capsys.readouterr().out.strip()
    readme = page("README.md").replace("\n\n<details><summary>The quality mode against the beam</summary>", "")
    assert printed in readme  # the quality mode's table folded under the beam's
    assert printed in page("results.md")


def test_the_v4_page_quotes_the_runs_log_and_card():
    """docs/multilingual-v4.md's validation table is the means of the run's log (shipped beside the weights),
    and its updates and minutes are the card's."""
    text = page("multilingual-v4.md")
    lines = val_table_lines(V4 / "metrics.jsonl")
    quoted = sum(line in text for line in lines)
    assert quoted == len(lines) >= 6
    training = card_data_from_file(str(V4 / "README.md"))["training"]
    assert f"{training['updates']:,} updates" in text


def _bleu(saved, model: str, split: str, metric: str = "bleu") -> dict:
    return {s.direction: s.value for s in saved.results if s.model == model and s.split == split
            and s.metric == metric}


def _span(values: dict) -> tuple:
    low, high = min(values, key=values.get), max(values, key=values.get)
    return low, values[low], high, values[high]


def test_the_results_page_and_readme_say_what_the_results_file_holds(saved):
    """The figures docs/results.md's v4 section and README.md state in words, from the results file."""
    from scripts.results_table import V4_CATALOGS

    text, readme = (" ".join(page(name).split()) for name in ("results.md", "README.md"))
    long = _bleu(saved, "v4", "catalogs/test:3+words")
    low, a, high, b = _span({d: long[d] - target for d, target in V4_CATALOGS.items()})
    assert min(a, b) > 0 and f"by {a:.2f} ({low}) to {b:.2f} BLEU ({high})" in text
    v3, v4 = _bleu(saved, "v3", "software/test"), _bleu(saved, "v4", "software/test")
    low, a, high, b = _span({d: v4[d] - v3[d] for d in v4})
    assert a >= 3 and f"gains {a:.2f} ({low}) to {b:.2f} BLEU ({high}) over v3" in text
    lc2, lc3, lc4 = (_bleu(saved, m, "captions/test_2016_flickr", "bleu_lowercase") for m in ("v2", "v3", "v4"))
    below3 = [lc3[d] - lc4[d] for d in lc4]
    below2 = [lc2[d] - lc4[d] for d in lc4]
    said = f"{min(below3):.2f}-{max(below3):.2f} BLEU against v3 ({min(below2):.2f}-{max(below2):.2f} against v2)"
    assert said in text and f"where v4 is {min(below2):.2f}-{max(below2):.2f} BLEU behind" in readme


def test_the_v4_page_quotes_the_speed_file():
    speed = json.loads((ROOT / "docs" / "v4_speed.json").read_text())
    ratio = speed["ratio"]
    text = " ".join(page("multilingual-v4.md").split())
    assert speed["new"] == "space/models/multilingual-v4" and speed["sentences"] == 240
    assert (f"{ratio['all']:.2f}x v3's over all (captions {ratio['captions']:.2f}x, software "
            f"{ratio['software']:.2f}x" in text) and ratio["all"] <= speed["target"]


def test_the_v4_page_quotes_the_page_latency_file():
    """docs/v4_page.json (``python -m benchmarks app --model space/models/multilingual-v4 ...``): the page's p50
    with v4 for one client, and eight clients' rate, as the v4 page prints them."""
    found = json.loads((ROOT / "docs" / "v4_page.json").read_text())
    one, eight = ({r["clients"]: r for r in found["results"]}[c] for c in (1, 8))
    text = " ".join(page("multilingual-v4.md").split())
    assert found["model"] == "space/models/multilingual-v4" and found["command"] in text
    assert f"one client's p50 {one['p50_ms']:.1f} ms" in text and one["errors"] == 0
    assert f"eight clients {eight['requests_per_s']:.1f} requests/s" in text
    assert ("(target 150 ms: met)" in text) == (one["p50_ms"] <= 150)
