"""The playground's runner and status with scripted training processes (no torch run): warm spares, Stop during
B, Stop just as A ends.  The real processes are tested in test_space_playground.py."""
from __future__ import annotations

import threading
from typing import Callable, List, Optional

import pytest

pytest.importorskip("gradio")

from space.hosting.limits import Limits  # noqa: E402
from space.playground import service  # noqa: E402
from space.playground.runs import PlaygroundRunner  # noqa: E402
from transformer_hub.playground import Event, RunConfig  # noqa: E402

A, B = RunConfig(task="reverse", budget_seconds=5), RunConfig(task="reverse", positions="none", budget_seconds=5)


class Scripted:
    """A stand-in for ``TrainingProcess``: start, a train report per poll until ``steps``, then done; ``hook(self,
    step)`` runs before each report (the test's visitor presses Stop there)."""

    made: List["Scripted"] = []
    hook: Callable[["Scripted", int], None] = staticmethod(lambda process, step: None)

    def __init__(self, threads: int = 1) -> None:
        self.config: Optional[RunConfig] = None
        self.ready, self.alive, self.finished, self.model, self.closed = True, True, None, object(), False
        self.step, self.stopped, self.steps = -1, threading.Event(), 5
        Scripted.made.append(self)

    def start(self, config: RunConfig) -> None:
        assert self.config is None and self.ready
        self.config = config

    def stop(self) -> None:
        self.stopped.set()

    def close(self) -> None:
        self.closed, self.alive = True, False

    def poll(self, timeout: float = 0.25) -> Optional[Event]:
        self.step += 1
        Scripted.hook(self, self.step)
        if self.step == 0:
            return Event("start", 0, 0.0, parameters=10)
        if self.stopped.is_set() or self.step > self.steps:
            reason = "stopped" if self.stopped.is_set() else "budget"
            self.finished = Event("done", self.step, 1.0, token_accuracy=0.5, exact_match=0.25, reason=reason)
            return self.finished
        return Event("train", self.step, 0.1 * self.step, loss=1.0, token_accuracy=0.5, lr=0.001)


class Host:
    def __init__(self, runner: PlaygroundRunner) -> None:
        self.limits, self.playground = Limits(), runner


@pytest.fixture
def runner():
    Scripted.made, Scripted.hook = [], staticmethod(lambda process, step: None)
    return PlaygroundRunner(process=Scripted)


def statuses(host: Host, session: str = "me") -> List[str]:
    return [update[0] for update in service.train_stream(host, [A, B], session)]


def test_stop_during_b_answers_at_once_with_b_stopped_and_b_ends_stopped(runner):
    host, answers = Host(runner), []

    def press_stop(process, step):  # the visitor presses Stop at B's third report
        if process.config is B and step == 3 and not answers:
            answers.append(service.stop(host, "me"))

    Scripted.hook = staticmethod(press_stop)
    seen = statuses(host)
    (answer,) = answers  # Stop's own answer: no wait for the training process
    assert answer.startswith("Stopping…")
    assert "**A (positions=sinusoidal)**: done (budget) at step 6" in answer
    assert "**B (positions=none)**: stopped at step 2 (measuring the held-out set one last time…)" in answer
    final = seen[-1]
    assert final.startswith("Stopped. Type your own input below to try the trained models.")
    assert "**B (positions=none)**: done (stopped) at step 4" in final and "Finished" not in final
    assert len(runner.models("me")) == 2  # B's model, stopped early, can still be tried


def test_stop_just_as_a_ends_says_that_b_did_not_run(runner):
    host = Host(runner)

    def press_stop(process, step):  # Stop arrives as A reports its budget's end
        if process.config is A and step == process.steps + 1:
            runner.stop("me")

    Scripted.hook = staticmethod(press_stop)
    final = statuses(host)[-1]
    assert final.startswith("Stopped. B did not run: press Train again to train it. Type your own input below "
                            "to try the trained model.")
    assert "**A (positions=sinusoidal)**: done (budget)" in final
    assert "**B (positions=none)**: did not run (stopped before it started)" in final
    assert "Finished" not in final
    assert [p.config for p in Scripted.made[:2]] == [A, None] and Scripted.made[1].closed  # B's process let go


def test_status_before_b_starts_names_b_and_nothing_training_keeps_the_page_status(runner):
    curves = [service.RunCurves(label) for label in service.labels([A, B])]
    assert service._status(curves, [A, B]).split("  \n") == [
        "**A (positions=sinusoidal)**: starting its training process…", "**B (positions=none)**: waiting for A to end"]
    assert service.stop(Host(runner), "me", "**A**: done (budget)") == "**A**: done (budget)"
    assert service.stop(Host(runner), "me", "") == "Nothing is training."


def test_a_job_starts_on_warm_spares_and_the_runner_refills_them(runner):
    assert runner.warm() == 2 and len(Scripted.made) == 2
    assert runner.warm() == 2 and len(Scripted.made) == 2  # no more than ``spares``
    spares = list(Scripted.made)
    final = statuses(Host(runner))[-1]
    assert final.startswith("Finished. Type your own input")
    assert [p.config for p in spares] == [A, B]  # both runs on the processes started before the job
    assert runner.spare_count() == (2, 2) and len(Scripted.made) == 4  # refilled for the next visitor
    runner.close_spares()
    assert runner.spare_count() == (0, 0) and all(p.closed for p in Scripted.made)
