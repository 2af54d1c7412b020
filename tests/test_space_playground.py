"""The Playground tab through its API (gradio_client): it trains, streams, queues, stops and keeps its budget."""
from __future__ import annotations

import tempfile
import time

import pytest

gr = pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from helpers.space_fixtures import launch_local  # noqa: E402
from space.hosting.limits import Limits  # noqa: E402
from space.playground.service import build_configs, labels, lesson_values  # noqa: E402
from transformer_hub.playground import LESSONS  # noqa: E402
from transformer_hub.playground import RunConfig  # noqa: E402

slow = pytest.mark.slow  # a server and real training processes: seconds per test
BUDGET = 6   # what a run asks for
CAP = 60     # the server's cap: the Stop tests' runs end by Stop, however slow the machine is
A = ["sinusoidal", True, 4, "post", True, True, 0.1]
B = ["none", True, 4, "post", True, True, 0.1]


@pytest.fixture(scope="module")
def app():
    with tempfile.TemporaryDirectory() as empty:
        url, demo = launch_local(models_dir=empty, limits=Limits(playground_seconds=CAP))
        demo.space_context.playground.abandoned_seconds = 10.0  # drawing under load can take seconds
        try:
            yield url, demo.space_context.playground
        finally:
            demo.close()
            demo.space_context.close()


def submit(url, task="reverse", budget=BUDGET, ab=False, a=A, b=B):
    client = gradio_client.Client(url, verbose=False)
    return client, client.submit(task, 0, budget, 0.003, ab, *a, *b, api_name="/playground_train")


def wait_for(job, text: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        outputs = job.outputs()
        if outputs and text in outputs[-1][0]:
            return outputs[-1][0]
        time.sleep(0.2)
    raise AssertionError(f"no status with {text!r}; last: {job.outputs()[-1:] or None}")


@slow
def test_a_run_streams_its_curves_keeps_its_budget_and_then_decodes_input(app):
    url, runner = app
    client, job = submit(url)
    status, curves, attention, summary = job.result(timeout=120)
    assert len(job.outputs()) >= 4  # streamed: waiting for the process, training, evaluations, the end
    assert "Finished" in status and "done (budget)" in status
    assert curves["type"] == "matplotlib" and attention["type"] == "matplotlib"
    (run,) = summary
    assert run["finished"]["reason"] == "budget" and BUDGET <= run["finished"]["seconds"] < BUDGET + 3
    assert run["curve"]["train"][0]["step"] == RunConfig().report_every
    assert 0.0 <= run["exact_match"] <= 1.0
    text, _ = client.predict("12345", api_name="/playground_predict")
    assert text.startswith("**A**: `") and runner.in_line() == 0


@slow
@pytest.mark.parametrize("changes, message", [  # Gradio's own checks of the components answer first
    (dict(budget=CAP + 1), f"Value {CAP + 1} is greater than maximum value {CAP}"),
    (dict(budget=1e9), f"greater than maximum value {CAP}"),
    (dict(task="translate-klingon"), "translate-klingon"),
    (dict(a=["alibi", *A[1:]]), "alibi"),
])
def test_hostile_requests_are_refused_with_a_message(app, changes, message):
    _, job = submit(app[0], **changes)
    with pytest.raises(Exception, match=message):
        job.result(timeout=30)
    assert app[1].in_line() == 0


@slow
def test_a_second_visitor_waits_with_their_place_shown_and_stop_ends_a_run(app):
    url, runner = app
    first_client, first = submit(url, budget=CAP)
    wait_for(first, "training, step")
    second_client, second = submit(url, task="copy", budget=CAP)
    assert "Waiting in line: 1 run ahead of yours" in wait_for(second, "Waiting in line")
    answer = first_client.predict("", api_name="/playground_stop")  # at once: A stopped (or just done)
    assert answer.startswith("Stopping…  \n**A**: ") and ("stopped at step" in answer or "done (" in answer), answer
    status, _, _, summary = first.result(timeout=60)
    assert "done (stopped)" in status and summary[0]["finished"]["reason"] == "stopped"
    wait_for(second, "training, step")  # the line moved on
    second_client.predict("", api_name="/playground_stop")
    assert second.result(timeout=60)[3][0]["finished"]["reason"] == "stopped"
    assert first_client.predict("", api_name="/playground_stop") == "Nothing is training."


@slow
def test_stop_during_b_answers_with_b_stopped_then_b_ends_stopped_and_spares_start_the_runs(app):
    """Before: 6 s after Stop the page still said "B: training"; each run began with seconds of
    "starting a fresh training process"."""
    url, runner = app
    runner.warm()
    # A ends by its budget, B by Stop: B's budget leaves the Stop 24 s to arrive, as a loaded machine's client
    # sees the stream's statuses late
    client, job = submit(url, ab=True, budget=4 * BUDGET)
    wait_for(job, "B (positions=none)**: training, step", timeout=120)
    answer = client.predict("", api_name="/playground_stop")  # Stop's own answer, not the stream's next status
    assert "**A (positions=sinusoidal)**: done (budget)" in answer, answer
    assert "**B (positions=none)**: stopped at step" in answer, answer
    status, _, _, summary = job.result(timeout=60)
    assert status.startswith("Stopped. Type your own input") and "**B (positions=none)**: done (stopped)" in status
    assert [run["finished"]["reason"] for run in summary] == ["budget", "stopped"]
    deadline = time.monotonic() + 60
    while runner.spare_count()[1] < runner.spares and time.monotonic() < deadline:
        time.sleep(0.2)
    assert runner.spare_count() == (runner.spares, runner.spares)  # refilled, ready for the next visitor
    runner.close_spares()


@slow
def test_a_visitor_who_leaves_gives_the_server_back(app):
    url, runner = app
    client, job = submit(url, ab=True)
    wait_for(job, "training, step")
    job.cancel()
    client.close()
    deadline = time.monotonic() + 30
    while runner.in_line() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert runner.in_line() == 0


class Settings:
    limits = Limits(playground_seconds=BUDGET)


def test_the_budget_is_capped_by_the_server_and_settings_are_checked():
    with pytest.raises(ValueError, match=f"between 1 and {BUDGET} seconds on this server, got 7"):
        build_configs(Settings, "reverse", 0, BUDGET + 1, 0.003, False, A + B)
    with pytest.raises(ValueError, match="seed must be a whole number"):
        build_configs(Settings, "reverse", 0.5, BUDGET, 0.003, False, A + B)
    with pytest.raises(ValueError, match="expected 14 switch values"):
        build_configs(Settings, "reverse", 0, BUDGET, 0.003, False, A)
    a, b = build_configs(Settings, "sort", 3, BUDGET, 0.01, True, A + ["none", False, "2", "pre", False, False, 0])
    assert a == RunConfig(task="sort", seed=3, budget_seconds=BUDGET, peak_lr=0.01)
    assert (b.positions, b.causal_mask, b.n_heads, b.norm, b.residual, b.warmup, b.label_smoothing) == \
        ("none", False, 2, "pre", False, False, 0.0)
    assert len(build_configs(Settings, "sort", 3, BUDGET, 0.01, False, A + B)) == 1


def test_runs_are_named_by_what_sets_them_apart():
    assert labels([RunConfig(), RunConfig(positions="none")]) == ["A (positions=sinusoidal)", "B (positions=none)"]
    assert labels([RunConfig()]) == ["A"]


def test_each_preset_sets_a_and_b_to_its_lesson():
    values = lesson_values("causal-mask")
    assert values["ab"] and values["task"] == LESSONS["causal-mask"].a.task
    assert values["a"][1] is True and values["b"][1] is False  # causal_mask is the second switch


def test_attention_pictures_name_start_and_end_and_carry_their_titles():
    """Before: the pictures said <s> and </s> (the main tabs say [start] and [end]), and the page's panel
    label covered the left subplot's title: the page shows no panel label, the title is the picture's own."""
    from space.pictures.playground import RunCurves, attention_figure, curves_figure

    run = RunCurves("A")
    run.attention = {"source": ["3", "1", "</s>"], "target": ["<s>", "1", "3"],
                     "cross": [[[1.0, 0.0, 0.0]] * 3], "self": [[[1.0, 0.0, 0.0]] * 3]}
    run.evals.append(dict(step=40, seconds=1.0, token_accuracy=0.5, exact_match=0.0))
    cross, own = attention_figure([run]).axes[:2]
    assert [t.get_text() for t in cross.get_xticklabels()] == ["3", "1", "[end]"]
    assert [t.get_text() for t in cross.get_yticklabels()] == ["[start]", "1", "3"]
    assert [t.get_text() for t in own.get_xticklabels()] == ["[start]", "1", "3"]
    assert cross.get_title() == "A: cross-attention (step 40)"
    assert attention_figure([run])._suptitle.get_text() == "Attention on a fixed held-out example"
    assert curves_figure([run], "reverse, seed 0")._suptitle.get_text() == "Learning curves: reverse, seed 0"


def test_your_own_input_is_drawn_with_the_steps_the_model_trained():
    """Before: the own-input picture said "step 0" whatever the model had trained."""
    from space.playground.service import try_input
    from transformer_hub.playground import build_model

    config = RunConfig(task="reverse")
    model = build_model(config.model_config(), config.positions, config.causal_mask, config.residual).eval()

    class Runner:
        def models(self, session):
            return [(config, model, 1234)] if session == "me" else []

    host = type("Host", (), {"limits": Limits(), "playground": Runner()})
    text, figure = try_input(host, "3141", "me")
    assert text.startswith("**A**: `")
    assert figure.axes[0].get_title() == "A: cross-attention (trained 1234 steps)"
    assert figure._suptitle.get_text() == "Attention on your input"
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == ["3", "1", "4", "1", "[end]"]
    with pytest.raises(ValueError, match="train a model first"):
        try_input(host, "3141", "someone else")
