"""docs/multilingual-v4-pilots.md is the table of its results file, as ``python -m scripts.pilots_v4 table`` writes it."""
import json
from pathlib import Path

from scripts.pilots_v4 import PILOTS, mean_bleu, table_page

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_page_is_the_table_of_its_results_file():
    results = json.loads((DOCS / "multilingual-v4-pilots.json").read_text())
    assert (DOCS / "multilingual-v4-pilots.md").read_text() == table_page(results["pilots"])
    for pilot in results["pilots"]:
        assert pilot["name"] in PILOTS and pilot["about"] == PILOTS[pilot["name"]]["about"]
        assert len(pilot["scores"]) == 18  # six English-side directions on each of the three domains
        assert "/work" not in pilot.get("command", "")  # the corpora named by their variables, not where they lie


def test_the_mean_is_over_the_domain_s_directions_only():
    pilot = {"scores": {"help/en-de": {"bleu": 10.0}, "help/de-en": {"bleu": 20.0}, "catalogs/en-de": {"bleu": 90.0}}}
    assert mean_bleu(pilot, "help") == 15.0 and mean_bleu(pilot, "catalogs") == 90.0


def test_the_status_page_quotes_the_bf16_pair():
    pilots = {p["name"]: p for p in json.loads((DOCS / "multilingual-v4-pilots.json").read_text())["pilots"]}
    bf16, fp32 = pilots["warm-new-vocabulary-bf16"], pilots["warm-new-vocabulary-float32"]
    text = " ".join((DOCS / "multilingual-v4.md").read_text().split())
    assert bf16["updates"] == fp32["updates"] and f"to {bf16['updates']} updates" in text
    ratio = bf16["tokens_per_s"] / fp32["tokens_per_s"]
    assert (f"bf16 at {bf16['tokens_per_s']:,} target tokens/s against float32's {fp32['tokens_per_s']:,} "
            f"({ratio:.2f}x;") in text
    assert f"the same val loss ({bf16['val_loss']:.4f} against {fp32['val_loss']:.4f})" in text
    assert abs(bf16["val_loss"] - fp32["val_loss"]) < 0.01


def test_the_status_page_describes_the_recipe_the_script_runs():
    script = " ".join((DOCS.parent / "scripts" / "train_v4.sh").read_text().split())
    text = " ".join((DOCS / "multilingual-v4.md").read_text().split())
    updates, cooldown, tokens = (int(script.split(f"--{name} ")[1].split()[0])
                                 for name in ("max-updates", "cooldown-updates", "max-tokens"))
    assert f"{updates:,} updates of {tokens:,} tokens with the rate cooling to 0 over the last {cooldown:,}" in text
    assert "--precision auto" in script and "--resume" in script and "--new-vocabulary" in script


def test_the_status_page_quotes_the_english_centric_pair():
    pilots = {p["name"]: p for p in json.loads((DOCS / "multilingual-v4-pilots.json").read_text())["pilots"]}
    centric, twelve, v3 = pilots["english-centric"], pilots["warm-new-vocabulary-beside"], pilots["v3"]
    text = " ".join((DOCS / "multilingual-v4.md").read_text().split())
    for domain, said in (("catalogs", "BLEU better on the catalogs' val"), ("help", "worse on help"),
                         ("captions", "worse on captions")):
        a, b = mean_bleu(centric, domain), mean_bleu(twelve, domain)
        assert f"{abs(a - b):.2f} {said} ({a:.2f} against {b:.2f})" in text
    assert f"~{round(twelve['updates'], -2)} updates" in text
    assert f"from v3's {mean_bleu(v3, 'catalogs'):.2f} to {mean_bleu(twelve, 'catalogs'):.2f}" in text
    assert f"({mean_bleu(twelve, 'captions'):.2f} against {mean_bleu(v3, 'captions'):.2f})" in text
