"""docs/benchmarks.md quotes ``python -m benchmarks train --bf16``'s results file (docs/train_bf16.json)."""
import json
from pathlib import Path

from helpers.docs import page

ROOT = Path(__file__).resolve().parents[1]


def test_the_page_quotes_the_bf16_ratio_and_its_tokens_per_second():
    results = json.loads((ROOT / "docs" / "train_bf16.json").read_text())
    text = " ".join(page("benchmarks.md").split())
    bf16, fp32 = (results[name]["target_tokens_per_s"] for name in ("ours, bf16 autocast", "ours"))
    assert f"**{results['bf16_over_float32']:.2f}x** ours in float32 ({bf16:,} against {fp32:,} target tokens/s)" in text
    assert results["bf16_over_float32"] == round(bf16 / fp32, 2)  # tokens counted alike: the ratio of the rates
    assert results["bf16_units"] == ["avx512_bf16"] and "`avx512_bf16`" in text
    assert "--out docs/train_bf16.json" in text and f"--threads {results['threads']}" in text
