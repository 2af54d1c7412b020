"""The playground library: tasks, the run config's limits, the lesson parts, and what training shows."""
from __future__ import annotations

import itertools
import random

import pytest
import torch

from transformer_hub import POSITIONAL, TransformerConfig
from transformer_hub.model import PositionalEncoding
from transformer_hub.playground import (LESSONS, RunConfig, TrainingProcess, build_model, get_task, number_words,
                                        parse_source, predict, snapshot, train)
from transformer_hub.playground.parts import DecoderSelfAttention, WithoutResidual
from transformer_hub.playground.tasks import EOS, TaskData, decode, encode
from transformer_hub.playground.trainer import fixed_example, learning_rate

# a smaller model on shorter sequences: reverse is learned in 200 steps (a few seconds on one core)
SMALL = dict(min_len=3, max_len=5, d_model=32, d_ff=64, batch_size=32, peak_lr=0.005, warmup_steps=50,
             budget_seconds=120.0, report_every=10, eval_every=50, held_out=100)


def run(**settings):
    """Every event of a run of ``settings`` (on SMALL), and its trained model."""
    events = list(train(RunConfig(**{**SMALL, **settings})))
    return events, events[-1].model


def final(events):
    return events[-1]


@pytest.fixture(scope="module")
def reverse_run():
    with torch.random.fork_rng():
        return run(task="reverse", max_steps=200)


# ---------------------------------------------------------------------------- tasks
@pytest.mark.parametrize("number, words", [
    (0, "zero"), (7, "seven"), (13, "thirteen"), (40, "forty"), (99, "ninety nine"), (100, "one hundred"),
    (312, "three hundred twelve"), (1000, "one thousand"), (1207, "one thousand two hundred seven"),
    (20013, "twenty thousand thirteen"), (100000, "one hundred thousand"),
    (999999, "nine hundred ninety nine thousand nine hundred ninety nine")])
def test_number_words(number, words):
    assert " ".join(number_words(number)) == words


@pytest.mark.parametrize("name, source, target", [
    ("copy", "30471", "3 0 4 7 1"), ("reverse", "30471", "1 7 4 0 3"), ("sort", "30471", "0 1 3 4 7"),
    ("number-to-words", "312", "three hundred twelve")])
def test_each_task_maps_digits_to_its_target(name, source, target):
    assert " ".join(get_task(name).target(list(source))) == target


def test_held_out_sources_never_appear_in_training_and_the_seed_fixes_the_data():
    data = TaskData(get_task("reverse"), 3, 4, seed=5, held_out=300)  # 11,000 possible sources: collisions happen
    held = {tuple(s) for s, _ in data.held_out_pairs}
    assert len(held) == 300
    for _ in range(20):
        batch = data.train_batch(64)
        assert not {tuple(decode(row.tolist())) for row in batch.src} & held
    again = TaskData(get_task("reverse"), 3, 4, seed=5, held_out=300)
    assert again.held_out_pairs == data.held_out_pairs
    assert torch.equal(again.train_batch(8).src, TaskData(get_task("reverse"), 3, 4, 5, 300).train_batch(8).src)
    assert TaskData(get_task("reverse"), 3, 4, seed=6, held_out=300).held_out_pairs != data.held_out_pairs


# ---------------------------------------------------------------------------- the run config
@pytest.mark.parametrize("settings, message", [
    (dict(d_model=10_000), "d_model=10000 is out of range: it must be between 8 and 256"),
    (dict(n_layers=1000), "n_layers=1000 is out of range: it must be between 1 and 4"),
    (dict(budget_seconds=1e9), "budget_seconds=1000000000.0 is out of range"),
    (dict(budget_seconds=0), "budget_seconds and peak_lr must be greater than 0"),
    (dict(min_len=0), "min_len=0 is out of range: it must be between 1 and 20"),
    (dict(max_len=0), "max_len=0 is out of range"),
    (dict(task="number-to-words", max_len=12), "max_len=12 is out of range: it must be between 1 and 6"),
    (dict(min_len=9, max_len=4), "min_len=9 is more than max_len=4"),
    (dict(task="translate-klingon"), "unknown task 'translate-klingon'; tasks: copy, reverse, sort, number-to-words"),
    (dict(positions="alibi"), "unknown positions 'alibi'"),
    (dict(n_heads=3), "n_heads=3 must be one of"),
    (dict(d_model=256, d_ff=1024, n_layers=4), "over the playground's cap of 1,000,000"),
    (dict(budget_seconds=float("nan")), "budget_seconds must be a number"),
    (dict(causal_mask="no"), "causal_mask must be true or false"),
    (dict(batch_size=True), "batch_size must be an integer"),
])
def test_hostile_settings_are_refused_with_a_clear_message(settings, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        RunConfig(**settings)


def test_from_dict_refuses_unknown_keys_and_fills_the_task_lengths():
    with pytest.raises(ValueError, match=r"unknown settings \['d_models'\]"):
        RunConfig.from_dict({"d_models": 64})
    assert (RunConfig(task="number-to-words").min_len, RunConfig(task="number-to-words").max_len) == (3, 6)
    assert RunConfig.from_dict(RunConfig(task="sort").to_dict()) == RunConfig(task="sort", min_len=3, max_len=12)


# ---------------------------------------------------------------------------- the lesson parts
def test_no_positions_and_no_mask_are_not_registered_variants():
    assert "none" not in POSITIONAL
    with pytest.raises(ValueError, match="unknown positional encoding 'none'"):
        TransformerConfig(positional="none")
    model = build_model(RunConfig().model_config(), "none")
    assert type(model.body.positional) is PositionalEncoding  # the base class adds nothing
    assert model.num_parameters() == build_model(RunConfig().model_config()).num_parameters()


def _first_logits(model, tgt_in):
    src = torch.tensor([encode("31415") + [EOS]])
    with torch.no_grad():
        return model.eval()(src, tgt_in)[0, 0]


@pytest.mark.parametrize("causal", [True, False])
def test_without_the_causal_mask_the_first_output_reads_later_inputs(causal):
    torch.manual_seed(0)
    model = build_model(RunConfig().model_config(), causal_mask=causal)
    assert all(isinstance(layer.self_attn.kernel, DecoderSelfAttention) for layer in model.body.decoder)
    first = _first_logits(model, torch.tensor([[1, 5, 6, 7]]))
    changed = _first_logits(model, torch.tensor([[1, 9, 9, 9]]))
    assert torch.equal(first, changed) == causal


def test_without_residual_a_block_passes_on_only_its_sublayer():
    torch.manual_seed(0)
    for norm in ("post", "pre"):
        model = build_model(RunConfig(norm=norm).model_config(), residual=False)
        block = model.body.encoder[0].residuals[0]
        assert isinstance(block, WithoutResidual)
        x = torch.randn(2, 3, 64)
        sublayer = torch.nn.Linear(64, 64)
        expected = sublayer(block.block.norm(x)) if norm == "pre" else block.block.norm(sublayer(x))
        torch.testing.assert_close(block.eval()(x, sublayer), expected, rtol=0, atol=0)


def test_warm_up_off_starts_at_the_peak_and_decays_alike():
    on, off = RunConfig(peak_lr=0.01), RunConfig(peak_lr=0.01, warmup=False)
    assert learning_rate(on, 1) == pytest.approx(0.01 / 100) and learning_rate(off, 1) == 0.01
    assert learning_rate(on, 100) == pytest.approx(0.01) == learning_rate(off, 100)
    assert learning_rate(on, 400) == learning_rate(off, 400) == pytest.approx(0.005)


# ---------------------------------------------------------------------------- training
def test_the_same_seed_gives_the_same_curve_twice():
    settings = dict(task="copy", max_steps=30, report_every=5, eval_every=15, held_out=20)
    first, _ = run(**settings)
    second, _ = run(**settings)
    curve = lambda events: [(e.kind, e.step, e.loss, e.token_accuracy, e.lr, e.exact_match, e.attention)  # noqa: E731
                            for e in events]
    assert curve(first) == curve(second)
    assert [e.step for e in first if e.kind == "train"] == [5, 10, 15, 20, 25, 30]
    assert curve(first) != curve(run(**settings, seed=1)[0])


def test_the_time_budget_ends_a_run():
    ticks = itertools.count()
    events = list(train(RunConfig(**{**SMALL, "budget_seconds": 10.0}), clock=lambda: float(next(ticks))))
    assert final(events).kind == "done" and final(events).reason == "budget"
    assert final(events).seconds >= 10.0 and final(events).step < 10


@pytest.mark.slow
def test_reverse_with_positions_beats_reverse_without(reverse_run):
    events, _ = reverse_run
    without, _ = run(task="reverse", max_steps=200, positions="none")
    assert final(events).exact_match >= 0.9
    assert final(without).exact_match <= 0.2
    assert final(events).token_accuracy - final(without).token_accuracy >= 0.3


@pytest.mark.slow
def test_without_the_causal_mask_training_looks_perfect_and_decoding_fails(reverse_run):
    events, _ = run(task="reverse", max_steps=150, causal_mask=False)
    assert final(events).token_accuracy >= 0.95  # teacher forcing: the answer is the next input
    assert final(events).exact_match <= 0.1      # free running: there is no next input
    assert final(reverse_run[0]).exact_match >= 0.9 and final(reverse_run[0]).token_accuracy >= 0.95


@pytest.mark.slow
def test_a_trained_reverse_model_attends_on_the_anti_diagonal(reverse_run):
    events, model = reverse_run
    data = TaskData(get_task("reverse"), SMALL["min_len"], SMALL["max_len"], 0, SMALL["held_out"])
    picture = snapshot(model, *fixed_example(data))
    assert picture == final(events[:-1]).attention  # the last eval event shows the same example
    n = len(picture["source"]) - 1  # digits; the last column is </s>
    cross = torch.tensor(picture["cross"]).mean(0)[:n, :n]  # rows <s>, d1..: row i writes output digit i
    assert cross.argmax(dim=1).tolist() == list(range(n - 1, -1, -1))
    assert torch.tensor(picture["self"]).shape == (2, n + 1, n + 1)
    self_attention = torch.tensor(picture["self"])  # causal: no row looks ahead
    assert float(self_attention.triu(diagonal=1).abs().max()) == 0.0


@pytest.mark.slow
def test_predict_decodes_a_visitors_input(reverse_run):
    _, model = reverse_run
    result = predict(model, "reverse", "1 2 3 4 5")
    assert result["expected"] == "5 4 3 2 1" and result["output"] == "5 4 3 2 1" and result["right"]
    assert result["attention"]["source"] == ["1", "2", "3", "4", "5", "</s>"]


@pytest.mark.parametrize("text, message", [
    ("", "type digits only"), ("12a", "type digits only"), ("١٢٣", "type digits only"),
    ("1" * 21, "reverse reads at most 20 digits")])
def test_a_visitors_bad_input_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_source("reverse", text)


def test_number_to_words_input_drops_leading_zeros():
    assert decode(parse_source("number-to-words", "0312")) == ["3", "1", "2"]


def test_the_lessons_differ_in_their_one_idea():
    for lesson in LESSONS.values():
        a, b = lesson.a.to_dict(), lesson.b.to_dict()
        assert len({k for k in a if a[k] != b[k]}) == 1, lesson.name


# ---------------------------------------------------------------------------- in its own process
@pytest.mark.slow
def test_a_run_in_its_own_process_streams_stops_and_returns_its_model():
    process = TrainingProcess(RunConfig(**{**SMALL, "budget_seconds": 60.0}))
    kinds = []
    for event in process.events():
        kinds.append(event.kind)
        if event.kind == "train" and event.step == 20:
            process.stop()
    assert kinds[0] == "start" and kinds[-1] == "done" and process.finished.reason == "stopped"
    assert process.finished.step <= 25 and not process.alive
    assert isinstance(predict(process.model, "reverse", "123")["output"], str)
    budget = TrainingProcess(RunConfig(**{**SMALL, "budget_seconds": 2.0}))
    done = list(budget.events())[-1]
    assert done.reason == "budget" and 2.0 <= done.seconds < 10.0


def test_the_label_smoothing_note_states_the_loss_floor():
    from transformer_hub.model.losses import smoothed_targets
    from transformer_hub.playground import SWITCH_NOTES, VOCAB

    target = smoothed_targets(torch.tensor([5]), len(VOCAB), 0.1)[0]
    floor = float(-(target * target.log()).sum())  # cross-entropy against it is at least its entropy
    assert f"below about {floor:.2f}" in SWITCH_NOTES["label_smoothing"]
