"""benchmarks/benchmark.py's decode report: ratios against the naive loop, and BLEU through metrics.score."""
from types import SimpleNamespace

import pytest

from transformer_hub.training.metrics import score


@pytest.fixture
def bench():
    from benchmarks import benchmark

    return benchmark


def test_ratios_are_against_the_naive_loop_and_say_whether_the_target_is_met(bench):
    results = {"naive": {"sentences_per_second": 4.0}, "greedy_batched": {"sentences_per_second": 100.0},
               "beam4_batched": {"sentences_per_second": 36.0}}
    bench.add_ratios(results, {"greedy_batched": 30.0, "beam4_batched": 10.0})
    assert [r["ratio_vs_naive"] for r in results.values()] == [1.0, 25.0, 9.0]
    assert results["greedy_batched"]["meets_target"] is False and "target_ratio" not in results["naive"]


def test_output_checks_score_with_the_library_metrics(bench):
    class Best(SimpleNamespace):
        def __len__(self):
            return len(self.tokens)

    def res(text, tokens, finished=True):
        return SimpleNamespace(text=text, best=Best(tokens=tokens, finished=finished))

    references = ["ein hund rennt .", "zwei katzen schlafen ."]
    greedy = [res("ein hund rennt .", [5, 6, 7]), res("zwei hunde .", [8, 9], finished=False)]
    beam = [res("ein hund rennt .", [5, 6, 7]), res("zwei katzen schlafen .", [8, 10, 11])]
    outputs = {"naive": [[5, 6, 7, 2], [8, 4]], "greedy_batched": greedy, "beam4_batched": beam}
    checks = bench.output_checks(outputs, references, eos=2, beam_key="beam4_batched")
    assert checks["bleu"] == {"greedy_batched": score([r.text for r in greedy], references, lowercase=False)["bleu"],
                              "beam4_batched": score([r.text for r in beam], references, lowercase=False)["bleu"]}
    assert checks["naive_agrees_with_our_greedy"] == 0.5 and checks["greedy_finished_with_eos"] == 0.5
    assert checks["greedy_mean_output_tokens"] == 2.5 and checks["model_looks_trained"] is True
