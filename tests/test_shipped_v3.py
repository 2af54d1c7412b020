"""v3 (space/retired/multilingual-v3: served until v4 replaced it, kept for the records that name it and as v4's
starting point): both domains, weights stored in half precision and loaded as float32, and the numbers its card and
docs/results.md print are the ones ``scripts/domain_results.py`` wrote (docs/domain_results.json), which a slice of
each test split reproduces."""
import json
from pathlib import Path

import pytest

from helpers.corpus import LIBREOFFICE_HELP, LIBREOFFICE_HELP_MISSING, MULTI30K, MULTI30K_MISSING
from helpers.shipped import same_data, stored_dtypes, val_table_lines
from transformer_hub import Transformer
from transformer_hub.decoding import generate
from transformer_hub.hub import card_data_from_file
from transformer_hub.hub.results import load as load_results
from transformer_hub.training.data import corpus_file, read_lines
from transformer_hub.training.metrics import score

ROOT = Path(__file__).resolve().parent.parent
V3 = ROOT / "space" / "retired" / "multilingual-v3"
RESULTS = ROOT / "docs" / "domain_results.json"
LANGS = ["en", "de", "fr", "cs"]
DATASETS = {"captions": "multi30k", "software": "libreoffice-help"}


@pytest.fixture(scope="module")
def v3() -> Transformer:
    return Transformer.from_pretrained(V3)


@pytest.fixture(scope="module")
def saved():
    return load_results(RESULTS)



def test_v3_serves_twelve_directions_in_both_domains(v3):
    assert v3.config.languages == LANGS and v3.config.domains == ["captions", "software"]
    assert sorted(v3.config.pairs()) == sorted((a, b) for a in LANGS for b in LANGS if a != b)
    assert (V3 / "domains.json").is_file()  # the classifier that domain="auto" uses


def test_v3_is_stored_in_half_precision_and_computes_in_float32(v3):
    assert stored_dtypes(V3 / "model.safetensors") == {"F16"}
    assert {p.dtype for p in v3.parameters()} == {__import__("torch").float32}
    assert (V3 / "model.safetensors").stat().st_size < 12 * 2 ** 20


def test_the_card_carries_the_results_files_scores_of_both_domains(saved):
    """Every v3 score of the results file is on the card: each split's beam, and on the first sentences of it
    the beam and the quality mode ("quality best" in the metric's name); nothing else is."""
    from transformer_hub.hub.results import METRICS

    card = card_data_from_file(str(V3 / "README.md"))
    on_card = {(r["dataset_type"], r["split"], r["direction"], r["metric_name"]): r["value"] for r in card["results"]}
    stored = {(DATASETS[s.split.split("/")[0]], s.split.split("/", 1)[1], s.direction,
               METRICS[s.metric] + (", quality best" if s.model == "v3 best" else "")): s.value
              for s in saved.results if s.model in ("v3", "v3 best")}
    assert len([k for k in stored if "[:" not in k[1]]) == 2 * 12 * 3 and on_card == stored



@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("domain, folder, split, direction, missing", [
    ("software", LIBREOFFICE_HELP, "test", "en-de", LIBREOFFICE_HELP_MISSING),
    ("software", LIBREOFFICE_HELP, "test", "cs-en", LIBREOFFICE_HELP_MISSING),
    ("captions", MULTI30K, "test_2016_flickr", "fr-en", MULTI30K_MISSING),
])
def test_a_slice_of_the_test_split_scores_what_the_results_file_says(v3, saved, domain, folder, split, direction,
                                                                     missing):
    """The first ``slice`` sentences, beam 5 with the domain's tag as the results command ran it.  The tolerance
    lets another machine's float32 kernels change a tie in a sentence or two (a few tenths of BLEU on a few
    hundred sentences), not a different model, tag or search."""
    src, tgt = direction.split("-")
    if not (folder / f"{split}.{src}.gz").is_file():
        pytest.skip(missing)
    if not same_data(saved, folder, domain, split, (src, tgt)):
        pytest.skip(f"the {domain} corpus holds other {split} files than the ones scored (another package version?)")
    n = saved.settings["slice"]
    stored = {s.metric: s.value for s in saved.results
              if s.model == "v3" and s.split == f"{domain}/{split}[:{n}]" and s.direction == direction}
    sources = read_lines(corpus_file(folder, split, src))[:n]
    references = read_lines(corpus_file(folder, split, tgt))[:n]
    outputs = [r.text for r in generate(v3, sources, src_lang=src, tgt_lang=tgt, domain=domain, strategy="beam",
                                        beam_size=saved.settings["beam"], batch_size=64)]
    measured = score(outputs, references)
    assert set(stored) == {"bleu", "bleu_lowercase", "chrf"}
    for metric in ("bleu", "bleu_lowercase", "chrf"):
        assert measured[metric] == pytest.approx(stored[metric], abs=0.4), metric


def test_the_results_page_quotes_the_results_file(capsys):
    """docs/results.md's v3 tables are ``python -m scripts.domain_results --table docs/domain_results.json``, as
    printed."""
    from helpers.docs import page
    from scripts import domain_results

    assert domain_results.main(["--table", str(RESULTS)]) == 0
    assert capsys.readouterr().out.strip() in page("results.md")


def test_the_v3_page_quotes_the_runs_log_and_card():
    """docs/multilingual-v3.md's validation table is the means of the run's log (shipped beside the weights),
    and its updates and minutes are the card's."""
    from helpers.docs import page

    text = page("multilingual-v3.md")
    lines = val_table_lines(V3 / "metrics.jsonl")
    quoted = sum(line in text for line in lines)
    assert quoted == 4
    training = card_data_from_file(str(V3 / "README.md"))["training"]
    assert f"{training['updates']:,} updates, {round(training['train_wall_minutes'])} minutes of wall time" in text


def _bleu(saved, model: str, split: str, metric: str = "bleu"):
    return {s.direction: s.value for s in saved.results if s.model == model and s.split == split
            and s.metric == metric}


def test_the_results_page_says_what_the_results_file_holds(saved):
    """The figures docs/results.md's v3 section states in words: ranges, gaps and ratios, from the results files."""
    from helpers.docs import page

    text = " ".join(page("results.md").split())
    english = ["en-de", "en-fr", "en-cs", "de-en", "fr-en", "cs-en"]
    v3, v2 = _bleu(saved, "v3", "software/test"), _bleu(saved, "v2", "software/test")
    targets = {"en-de": 35, "en-fr": 40, "en-cs": 30, "de-en": 40, "fr-en": 40, "cs-en": 38}
    gaps = {d: targets[d] - v3[d] for d in english}
    assert f"by {min(gaps.values()):.2f} (fr-en, {v3['fr-en']:.2f} against 40) to {max(gaps.values()):.2f} BLEU " \
           f"(en-de, {v3['en-de']:.2f} against 35)" in text
    assert f"{min(v3.values()):.2f}-{max(v3.values()):.2f} BLEU where v2 scored {min(v2.values()):.2f}-" \
           f"{max(v2.values()):.2f}" in text
    chrf3, chrf2 = _bleu(saved, "v3", "software/test", "chrf"), _bleu(saved, "v2", "software/test", "chrf")
    assert f"(chrF {min(chrf3.values()):.0f}-{max(chrf3.values()):.0f} against {min(chrf2.values()):.0f}-" \
           f"{max(chrf2.values()):.0f})" in text
    pivots = _bleu(saved, "v3 via en", "software/test")
    above = [v3[d] - pivots[d] for d in pivots]
    assert min(above) > 0 and f"{min(above):.2f} to {max(above):.2f} BLEU above v3's own pivot" in text
    lc3, lc2 = (_bleu(saved, m, "captions/test_2016_flickr", "bleu_lowercase") for m in ("v3", "v2"))
    below = {d: lc2[d] - lc3[d] for d in english}
    assert f"{min(below.values()):.2f} (en-de) to {max(below.values()):.2f} (fr-en) BLEU below v2" in text
    speed = json.loads((ROOT / "docs" / "v3_speed.json").read_text())
    assert f"{speed['ratio']['all']:.2f}x over all (captions {speed['ratio']['captions']:.2f}x, software " \
           f"{speed['ratio']['software']:.2f}x" in text and speed["sentences"] == 240
    n = saved.settings["slice"]
    gains = [b - f for b, f in zip(_bleu(saved, "v3 best", f"software/test[:{n}]").values(),
                                   _bleu(saved, "v3", f"software/test[:{n}]").values())]
    assert min(gains) > 0 and f"adds {min(gains):.2f}-{max(gains):.2f} BLEU for v3" in text
    cap = {d: b - _bleu(saved, "v3", f"captions/test_2016_flickr[:{n}]", "bleu_lowercase")[d]
           for d, b in _bleu(saved, "v3 best", f"captions/test_2016_flickr[:{n}]", "bleu_lowercase").items()}
    worst = min(cap, key=cap.get)
    assert f"loses up to {-cap[worst]:.2f} ({worst}) in {sum(v < 0 for v in cap.values())} directions" in text
