"""The figures README.md and docs/ quote in their sentences (not their tables: tests/test_stated_numbers.py and its
siblings check those) are read back from the records that the named commands wrote: the results files, the
cards' model-index and training facts, the training runs' metrics.jsonl, the pilot table, the JSON beside a doc.
Each check finds the figure by the words around it and compares it with the record, rounded as the prose rounds
it, so a retrain or a re-run that changes a record fails here until the sentence is rewritten."""
import json
import math
import re
import struct
from pathlib import Path
from typing import Dict, List

import pytest

from scripts import multilingual_results as mr
from transformer_hub.hub import card_data_from_file
from transformer_hub.hub.results import load

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "space" / "models"
MULTI = MODELS / "multilingual"
STAGE1 = ROOT / "docs" / "multilingual-stage1"
README = (ROOT / "README.md").read_text(encoding="utf-8")


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
    with open(folder / "model.safetensors", "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    return sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")


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
MULTI_SECTION = section(README, "### `space/models/multilingual`", "#### The quality mode")


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
    """Stage 1's log is its folder's at the commit README names (docs/multilingual-stage1), stage 2's the shipped."""
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
