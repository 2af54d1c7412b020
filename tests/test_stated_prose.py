"""The figures docs/ quotes in their sentences (not their tables: tests/test_stated_numbers.py and its
siblings check those) are read back from the records that the named commands wrote: the results files, the
cards' model-index and training facts, the training runs' metrics.jsonl, the pilot table, the JSON beside a doc.
Each check finds the figure by the words around it and compares it with the record, rounded as the prose rounds
it, so a retrain or a re-run that changes a record fails here until the sentence is rewritten."""
import json
import math
import re
from pathlib import Path
from typing import Dict, List


from helpers.docs import page
from helpers.shipped import safetensors_header
from scripts import multilingual_v2 as mr
from transformer_hub.hub import card_data_from_file
from transformer_hub.hub.results import load

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "space" / "models"
MULTI = MODELS / "multilingual"
STAGE1 = ROOT / "docs" / "multilingual-stage1"
RESULTS = page("results.md")  # the shipped models


def section(text: str, start: str, end: str) -> str:
    """The part of ``text`` from ``start`` up to ``end`` (both must be there)."""
    begin = text.index(start)
    return text[begin:text.index(end, begin)]


def flat(text: str) -> str:
    """Line breaks as spaces, so a pattern may cross the prose's wrapping."""
    return re.sub(r"\s*\n\s*", " ", text)


def stated(text: str, pattern: str) -> tuple:
    """The groups of ``pattern`` in ``text`` (line breaks read as spaces); the wording must be there."""
    found = re.search(pattern, flat(text))
    assert found, f"no sentence matches {pattern!r}"
    return found.groups()


def arrow(direction: str) -> str:
    return direction.replace("-", "→")


def lowercased(path: Path, model: str = "multilingual", split: str = "test_2016_flickr") -> Dict[str, float]:
    return {s.direction: s.value for s in load(path).results
            if s.model == model and s.split == split and s.metric == "bleu_lowercase"}


def parameters(folder: Path) -> int:
    """The number of values in ``model.safetensors``, read from its header (tied weights are stored once)."""
    return sum(math.prod(v["shape"]) for v in safetensors_header(folder / "model.safetensors").values())


def metrics(path: Path) -> List[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def epochs(path: Path, updates: int) -> str:
    """Updates as epochs, one decimal: an epoch is the number of updates before the log's first record of epoch 1."""
    records = metrics(path)
    per_epoch = min(r["step"] for r in records if r["epoch"] >= 1)
    return f"{updates / per_epoch:.1f}"


def val_losses(path: Path) -> Dict[int, float]:
    return {r["step"]: r["val_loss"] for r in metrics(path) if r["kind"] == "val"}


# ----------------------------------------------------------------------------- the multilingual model
MULTI_SECTION = section(RESULTS, "## `space/models/multilingual`", "### The quality mode")


def test_the_multilingual_models_size_and_training_are_its_files():
    config = json.loads((MULTI / "config.json").read_text())
    shown = stated(MULTI_SECTION, r"d_model (\d+), (\d+) heads, (\d+) \+ (\d+) layers, .*?SwiGLU with d_ff (\d+)\), "
                                  r"dropout ([\d.]+), a joint (\d+)k SentencePiece")
    assert shown == tuple(str(v) for v in (config["d_model"], config["n_heads"], config["n_encoder_layers"],
                                          config["n_decoder_layers"], config["d_ff"], config["dropout"],
                                          config["src_vocab_size"] // 1000))
    count, size = stated(MULTI_SECTION, r"all embeddings tied: ([\d,]+) parameters \(([\d.]+) MB\)")
    assert count == f"{parameters(MULTI):,}"
    assert size == f"{(MULTI / 'model.safetensors').stat().st_size / 1e6:.1f}"
    assert stated(MULTI_SECTION, r"more updates of this ([\d.]+)M-parameter model") == (f"{parameters(MULTI) / 1e6:.1f}",)
    stage1 = card_data_from_file(str(STAGE1 / "card.md"))["training"]
    stage2 = card_data_from_file(str(MULTI / "README.md"))["training"]
    shown = stated(MULTI_SECTION, r"warm-up ([\d,]+) updates to lr ([\d.]+), then the paper's inverse square root; "
                                  r"(\d+) minutes of wall time on the 2-core CPU, ([\d,]+) updates, ([\d.]+) epochs")
    assert shown == (f"{stage1['warmup']:,}", f"{stage1['peak_lr']}", f"{stage1['train_wall_minutes']:.0f}",
                     f"{stage1['updates']:,}", epochs(STAGE1 / "metrics.jsonl", stage1["updates"]))
    shown = stated(MULTI_SECTION, r"--peak-lr ([\d.]+) --warmup (\d+) --max-minutes (\d+)`.*? (\d+) minutes of wall "
                                  r"time, ([\d,]+) updates, ([\d.]+) epochs")
    assert shown == (f"{stage2['peak_lr']}", f"{stage2['warmup']}", f"{stage2['train_wall_minutes']:.0f}",
                     f"{stage2['train_wall_minutes']:.0f}", f"{stage2['updates']:,}",
                     epochs(MULTI / "metrics.jsonl", stage2["updates"]))
    assert stated(MULTI_SECTION, r"average of its last (\d+) checkpoints") == (f"{stage2['averaged_checkpoints']}",)
    assert stage1["averaged_checkpoints"] == stage2["averaged_checkpoints"]  # "each ending with"
    history = load(MULTI / "multilingual_results.json").settings["command"]  # what the card's provenance says
    assert (f"{stage1['train_wall_minutes']:.0f} minutes of wall time, {stage1['updates']:,} updates, "
            f"{epochs(STAGE1 / 'metrics.jsonl', stage1['updates'])} epochs") in history


def test_the_validation_losses_are_the_two_runs_logs():
    """Stage 1's log is its folder's at the commit docs/results.md names (docs/multilingual-stage1), stage 2's the shipped."""
    first, second = val_losses(STAGE1 / "metrics.jsonl"), val_losses(MULTI / "metrics.jsonl")
    end1, end2 = first[max(first)], second[max(second)]
    assert stated(MULTI_SECTION, r"at the last validation of each stage, ([\d.]+) and ([\d.]+)\.") == (
        f"{end1:.3f}", f"{end2:.3f}")
    shown = stated(MULTI_SECTION, r"fell from ([\d.]+) to ([\d.]+) in stage 2's first (\d+) updates but only from "
                                  r"([\d.]+) to ([\d.]+) over its last ([\d,]+)")
    first_steps, last_steps = int(shown[2]), int(shown[5].replace(",", ""))
    assert shown[0] == f"{end1:.3f}" and shown[4] == f"{end2:.3f}"
    assert shown[1] == f"{second[first_steps]:.3f}"
    start_of_last = max(s for s in second if s <= max(second) - last_steps)  # the validation there or before
    assert shown[3] == f"{second[start_of_last]:.3f}", start_of_last


def test_stage_2s_gains_over_stage_1_are_the_two_results_files():
    before, after = lowercased(STAGE1 / "multilingual_results.json"), lowercased(MULTI / "multilingual_results.json")
    gains = {d: round(after[d] - before[d], 2) for d in after}
    low, high = min(gains, key=gains.get), max(gains, key=gains.get)
    assert min(gains.values()) > 0  # "raised every direction"
    shown = stated(MULTI_SECTION, r"Stage 2 raised every direction, by ([\d.]+) \((\w\w-\w\w)\) to ([\d.]+) \((\w\w-\w\w)\)")
    assert shown == (f"{gains[low]:.2f}", low, f"{gains[high]:.2f}", high)


def test_the_targets_paragraph_is_the_results_file():
    saved = load(MULTI / "multilingual_results.json")
    lc = lowercased(MULTI / "multilingual_results.json")
    pivot = lowercased(MULTI / "multilingual_results.json", "multilingual via en")
    above = {d: round(lc[d] - pivot[d], 2) for d in pivot}
    beat = sorted(v for v in above.values() if v > mr.PIVOT_MARGIN)
    short = [d for d, v in above.items() if v <= mr.PIVOT_MARGIN]
    paragraph = section(MULTI_SECTION, "**Against the targets**", "**Against the literature.**")
    shown = stated(paragraph, r"(\w+) of the six directions between two non-English languages beat their pivot "
                              r"through English by more than the ([\d.]+) asked \(by ([\d.]+) to ([\d.]+)\); "
                              r"(\w\w)→(\w\w) is ([\d.]+) above its pivot, so it misses by ([\d.]+)\.")
    assert shown[0] == {5: "Five"}.get(len(beat)) and len(short) == 1
    assert shown[1:4] == (f"{mr.PIVOT_MARGIN}", f"{beat[0]:.2f}", f"{beat[-1]:.2f}")
    assert f"{shown[4]}-{shown[5]}" == short[0]
    assert shown[6:] == (f"{above[short[0]]:.2f}", f"{mr.PIVOT_MARGIN - above[short[0]]:.2f}")
    missed = {d: round(t - lc[d], 2) for d, t in mr.TARGETS.items()}
    assert all(v > 0 for v in missed.values())  # "The six directions to and from English miss"
    quoted = dict(re.findall(r"(\w\w→\w\w) by (\d+\.\d\d)", flat(section(paragraph, "The six directions", "What limits"))))
    assert quoted == {arrow(d): f"{v:.2f}" for d, v in missed.items()}
    assert {s.direction for s in saved.results} >= set(mr.TARGETS)


def test_the_literature_paragraph_is_the_anchors_and_the_results_file():
    lc = lowercased(MULTI / "multilingual_results.json")
    paragraph = flat(section(MULTI_SECTION, "**Against the literature.**", "**How stage 2 was chosen"))
    for direction, (value, _) in mr.ANCHORS.items():
        name = direction[:2].capitalize() + "→" + direction[3:].capitalize()
        assert f"{name} {value:g}" in paragraph, name
    order = list(mr.ANCHORS)
    shown = stated(paragraph, r"This model has ([\d.]+), ([\d.]+) and ([\d.]+) \(lowercased\): below the first two "
                              r"\(by ([\d.]+) and ([\d.]+)\), above the third \(by ([\d.]+)\)")
    assert shown[:3] == tuple(f"{lc[d]:.2f}" for d in order)
    gaps = [round(mr.ANCHORS[d][0] - lc[d], 2) for d in order]
    assert gaps[0] > 0 and gaps[1] > 0 and gaps[2] < 0
    assert shown[3:] == (f"{gaps[0]:.2f}", f"{gaps[1]:.2f}", f"{-gaps[2]:.2f}")


def test_an_epoch_is_what_the_results_page_says():
    per_epoch = {min(r["step"] for r in metrics(p) if r["epoch"] >= 1) for p in (STAGE1 / "metrics.jsonl",
                                                                              MULTI / "metrics.jsonl")}
    assert stated(MULTI_SECTION, r"updates over the (\d+) of one epoch in `metrics.jsonl`") == tuple(map(str, per_epoch))


# ----------------------------------------------------------------------------- the pilots
def pilot_table() -> Dict[str, dict]:
    """docs/multilingual-pilots.md (written by ``python -m scripts.pilot_table`` from the pilots' pilot.json)."""
    text = (ROOT / "docs" / "multilingual-pilots.md").read_text(encoding="utf-8")
    header = next(line for line in text.splitlines() if line.startswith("| pilot |"))
    names = [c.strip() for c in header.strip("|").split("|")]
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == len(names) and cells[0] not in ("pilot",):
            row = dict(zip(names, cells))
            rows[row["pilot"]] = {"updates": int(row["updates"].replace(",", "")),
                                  "bleu": float(row["BLEU lc (mean)"].split()[0]),
                                  "chrf": float(row["chrF (mean)"].split()[0])}
    return rows


def test_the_pilot_sentences_are_the_pilot_table():
    pilots = pilot_table()
    fresh = {k: v for k, v in pilots.items() if not k.startswith(("continue", "shipped"))}
    base = pilots["baseline"]
    low, high = min(p["bleu"] for p in fresh.values()), max(p["bleu"] for p in fresh.values())
    span = f"{round(low, 1):g} to {round(high, 1):g} BLEU"
    assert flat(MULTI_SECTION).count(span) == 2, span
    assert stated(MULTI_SECTION, r"Fresh starts reach [\d.]+ to [\d.]+ BLEU in 15 minutes \((\d+) to (\d+) updates\)") \
        == (str(min(p["updates"] for p in fresh.values())), str(max(p["updates"] for p in fresh.values())))
    others = [p["updates"] for k, p in fresh.items() if k != "baseline"]
    assert stated(MULTI_SECTION, r"\((\d+) updates against (\d+) to (\d+) for the others\)") == (
        str(base["updates"]), str(min(others)), str(max(others)))

    def delta(name: str, metric: str = "bleu") -> str:
        return f"{pilots[name][metric] - base[metric]:+.2f}"

    shown = stated(MULTI_SECTION, r"learned fastest \(mean ([\d.]+) lowercased BLEU against the baseline's ([\d.]+), "
                                  r"chrF ([+-][\d.]+)\), then the 8k vocabulary \(([+-][\d.]+),")
    assert shown == (f"{pilots['tag-decoder']['bleu']:.2f}", f"{base['bleu']:.2f}", delta("tag-decoder", "chrf"),
                     delta("vocab8k"))
    assert stated(MULTI_SECTION, r"source-side sampling \(([+-][\d.]+) BLEU,\s*([+-][\d.]+) chrF\)") == (
        delta("sampling"), delta("sampling", "chrf"))
    assert stated(MULTI_SECTION, r"encoder-heavy model \(([+-][\d.]+): at (\d+) updates") == (
        delta("deep-enc"), str(pilots["deep-enc"]["updates"]))
    assert stated(MULTI_SECTION, r"lost ground \(([\d.]+) against stage 1's ([\d.]+)\)") == (
        f"{pilots['continue']['bleu']:.2f}", f"{pilots['shipped']['bleu']:.2f}")
    assert stated(MULTI_SECTION, r"it gained \(([\d.]+), chrF ([\d.]+) against ([\d.]+)\)") == (
        f"{pilots['continue-lr2']['bleu']:.2f}", f"{pilots['continue-lr2']['chrf']:.2f}",
        f"{pilots['shipped']['chrf']:.2f}")
    assert pilots["shipped"]["updates"] == card_data_from_file(str(STAGE1 / "card.md"))["training"]["updates"]


# ----------------------------------------------------------------------------- the quality mode
QUALITY = section(RESULTS, "### The quality mode", "## `space/models/en-de`")


def quality_scores(split: str, metric: str) -> Dict[str, Dict[str, float]]:
    out: Dict[str, Dict[str, float]] = {}
    for s in load(MULTI / "rerank_results.json").results:
        if s.split == split and s.metric == metric:
            out.setdefault(s.model, {})[s.direction] = s.value
    return out


def test_the_quality_mode_sentences_are_its_results_and_weights_files():
    saved = load(MULTI / "rerank_results.json")
    tuned = json.loads((MULTI / "rerank.json").read_text())["directions"]
    assert stated(QUALITY, r"tuned per direction on all ([\d,]+)\s*val sentences") == tuple(
        {f"{w['val']['sentences']:,}" for w in tuned.values()})
    assert stated(QUALITY, r"Over all ([\d,]+) test sentences") == (f"{saved.models[0].decoding['sentences']:,}",)
    lc = quality_scores("test_2016_flickr", "bleu_lowercase")
    beam, best = lc["beam 5"], lc["quality best"]
    pivot = lowercased(MULTI / "multilingual_results.json", "multilingual via en")
    target = {d: mr.TARGETS.get(d, round(pivot.get(d, 0) + mr.PIVOT_MARGIN, 2)) for d in best}
    gap = {d: round(best[d] - target[d], 2) for d in best}
    met = stated(QUALITY, r"(\w+) directions meet their targets with it \(([^)]*)\)")
    assert met[0] == {5: "Five"}.get(sum(g >= 0 for g in gap.values()))
    assert met[1].split(", ") == [arrow(d) for d in best if gap[d] >= 0]
    near = stated(QUALITY, r"meet their targets with it \([^)]*\); ([^;]*?) miss by less than ([\d.]+) and "
                           r"(\w\w→\w\w) by ([\d.]+);")
    close = [d for d in best if -float(near[1]) < gap[d] < 0]
    assert near[0].replace(" and ", ", ").split(", ") == [arrow(d) for d in close]
    assert near[3] == f"{-gap[near[2].replace('→', '-')]:.2f}"
    val = stated(QUALITY, r"(\w\w→\w\w) and (\w\w→\w\w) stay about where beam 5 is \(the val gains of\s*"
                          r"\+([\d.]+) and \+([\d.]+) did not carry over\)")
    for direction, shown in zip(val[:2], val[2:]):
        v = tuned[direction.replace("→", "-")]["val"]
        assert shown == f"{v['reranked_bleu_lowercase'] - v['beam_bleu_lowercase']:.2f}", direction
    below = stated(QUALITY, r"(\w+) directions \(([^)]*)\) end up below beam 5 in\s*lowercased BLEU")
    assert below[1].split(", ") == [arrow(d) for d in best if best[d] < beam[d]]
    assert below[0] == {4: "four"}.get(len(below[1].split(", ")))
    chrf = [(s, d) for s in ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")
            for d, v in quality_scores(s, "chrf")["quality best"].items() if v > quality_scores(s, "chrf")["beam 5"][d]]
    assert stated(QUALITY, r"chrF rises in all (\d+) rows") == (str(len(chrf)),)
    assert len(chrf) == len([s for s in saved.results if s.metric == "chrf"]) // 2
    shown = stated(QUALITY, r"en→de \+([\d.]+) on\s*test_2016_flickr, \+([\d.]+) on test_2017_mscoco")
    mscoco = quality_scores("test_2017_mscoco", "bleu_lowercase")
    assert shown == (f"{best['en-de'] - beam['en-de']:.2f}",
                     f"{mscoco['quality best']['en-de'] - mscoco['beam 5']['en-de']:.2f}")
    features = saved.settings["features"]
    assert stated(QUALITY, r"the reverse score is in (\d+) of the (\d+) directions' weights") == (
        str(sum("reverse" in f for f in features.values())), str(len(features)))


# ----------------------------------------------------------------------------- the bilingual model
def test_the_en_de_paragraph_is_its_config_and_card():
    text = section(RESULTS, "## `space/models/en-de`", "**Against the literature.** The best published")
    folder = MODELS / "en-de"
    config = json.loads((folder / "config.json").read_text())
    training = card_data_from_file(str(folder / "README.md"))["training"]
    shown = stated(text, r"\(d_model (\d+), (\d+) heads, d_ff (\d+), (\d+) \+ (\d+)\s*layers, a joint (\d+)k "
                         r"SentencePiece vocabulary, all embeddings tied, dropout ([\d.]+), ([\d,]+) parameters\)")
    assert shown == tuple(str(v) for v in (config["d_model"], config["n_heads"], config["d_ff"],
                                          config["n_encoder_layers"], config["n_decoder_layers"],
                                          config["src_vocab_size"] // 1000, config["dropout"])) + (
        f"{parameters(folder):,}",)
    shown = stated(text, r"for (\d+)\s*minutes of wall time \(([\d,]+) updates of <= ([\d,]+) tokens, (\d+) epochs\), "
                         r"then the last (\d+) epoch checkpoints averaged")
    assert shown == (f"{training['train_wall_minutes']:.0f}", f"{training['updates']:,}",
                     f"{training['max_tokens_per_batch']:,}", str(training["epochs"]),
                     str(training["averaged_checkpoints"]))
