"""The playground tab's handlers: settings -> run configs, the training stream, Stop, and "try your own input"."""
from __future__ import annotations

import queue
import time
from typing import Dict, Iterator, List, Optional, Protocol, Sequence, Tuple

import gradio as gr

from transformer_hub.playground import LESSONS, MAX_BUDGET_SECONDS, RunConfig, predict

from ..hosting.limits import Limits, RequestError
from ..pictures.playground import RunCurves, attention_figure, curves_figure
from .runs import PlaygroundRunner

SWITCHES = ("positions", "causal_mask", "n_heads", "norm", "residual", "warmup", "label_smoothing")
RENDER_SECONDS = 1.0  # at most one new picture a second: drawing costs the server's CPU, not the trainer's
DEFAULTS = RunConfig()


class Host(Protocol):
    """What the handlers read of the Space's context (``SpaceContext`` is one): the limits and the runner."""
    limits: Limits
    playground: PlaygroundRunner


def switch_values(config: RunConfig) -> List:
    """The values of the switch components for ``config``, in ``SWITCHES`` order."""
    return [getattr(config, name) for name in SWITCHES]


def _number(value, name: str, kind=float):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ValueError(f"{name} must be a number, got {value!r}")
    if kind is int and value != int(value):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return kind(value)


def build_configs(ctx: Host, task: str, seed, budget, peak_lr, ab: bool,
                  switches: Sequence) -> List[RunConfig]:
    """A (and B when ``ab``) from the page's settings; the budget is capped at ``SPACE_PLAYGROUND_SECONDS``."""
    if len(switches) != 2 * len(SWITCHES):
        raise ValueError(f"expected {2 * len(SWITCHES)} switch values, got {len(switches)}")
    cap = float(min(ctx.limits.playground_seconds, MAX_BUDGET_SECONDS))
    budget = _number(budget, "budget")
    if not 0 < budget <= cap:
        raise ValueError(f"the time budget must be between 1 and {cap:g} seconds on this server, got {budget:g}")
    shared = dict(task=task, seed=_number(seed, "seed", int), budget_seconds=budget,
                  peak_lr=_number(peak_lr, "peak lr"))
    runs = [switches[:len(SWITCHES)], switches[len(SWITCHES):]][: 2 if ab else 1]
    configs = []
    for values in runs:
        values = dict(zip(SWITCHES, values))
        if isinstance(values["n_heads"], (int, float, str)) and str(values["n_heads"]).isdigit():
            values["n_heads"] = int(values["n_heads"])  # a radio's value may come as a string
        values["label_smoothing"] = _number(values["label_smoothing"], "label smoothing")
        configs.append(RunConfig(**shared, **values))
    return configs


def labels(configs: Sequence[RunConfig]) -> List[str]:
    """"A (positions=sinusoidal)" / "B (positions=none)": each run named by what sets it apart."""
    if len(configs) == 1:
        return ["A"]
    a, b = configs[0].to_dict(), configs[1].to_dict()
    differ = [k for k in SWITCHES if a[k] != b[k]]
    name = lambda letter, c: f"{letter} ({', '.join(f'{k}={c[k]}' for k in differ)})" if differ else letter  # noqa
    return [name("A", a), name("B", b)]


def _run_line(run: RunCurves, config: RunConfig, stopping: bool, ended: bool, turn: bool) -> str:
    """One run's line of the status: done, training, stopped, starting, waiting its turn or not run."""
    last = (run.train or [{}])[-1]
    if run.done:
        d = run.done
        return (f"**{run.label}**: done ({d['reason']}) at step {d['step']}, exact match {d['exact_match']:.0%}, "
                f"token accuracy {d['token_accuracy']:.0%}")
    if run.parameters is not None or run.train:  # it has started
        if stopping or ended:
            after = "ended before its last evaluation" if ended else "measuring the held-out set one last time…"
            return f"**{run.label}**: stopped at step {last.get('step', 0)} ({after})"
        if not run.train:
            return f"**{run.label}**: started, first steps…"
        e = (run.evals or [{}])[-1]
        em = f", exact match {e['exact_match']:.0%}" if e else ""
        return (f"**{run.label}**: training, step {last['step']}, loss {last['loss']:.3f}{em} "
                f"(budget {config.budget_seconds:g} s)")
    if stopping or ended:
        return f"**{run.label}**: did not run (stopped before it started)"
    return f"**{run.label}**: starting its training process…" if turn else f"**{run.label}**: waiting for A to end"


def _status(curves: List[RunCurves], configs: List[RunConfig], note: str = "", stopping: bool = False,
            ended: bool = False) -> str:
    """Every run's line (B's too, before it starts), under ``note``; the run whose turn it is: the first not done."""
    turn = next((i for i, run in enumerate(curves) if not run.done), len(curves))
    parts = [_run_line(run, config, stopping, ended, i == turn) for i, (run, config) in enumerate(zip(curves, configs))]
    return "  \n".join(([note] if note else []) + parts)


def _end_note(curves: List[RunCurves], stopped: bool) -> str:
    """What the page says when a job ends: stopped or finished, which runs did not run, what to do next."""
    skipped = [run.label.split(" ")[0] for run in curves if not run.done and run.parameters is None]
    trained = any(run.done for run in curves)
    note = "Stopped." if stopped else "Finished."
    if skipped:
        note += f" {' and '.join(skipped)} did not run" + (": press Train again to train it." if stopped else ".")
    if trained:
        note += " Type your own input below to try the trained model" + ("s." if sum(r.done is not None for r in
                                                                                    curves) > 1 else ".")
    return note


def stop(ctx: Host, session: str, shown: str = "") -> str:
    """Stop's answer, at once: every run's line with the one training marked stopped (the process needs a moment
    for its last evaluation; the stream's next status says done).  Nothing training: the page's status as it was."""
    job = ctx.playground.stop(session)
    if job is None:
        return shown if isinstance(shown, str) and shown.strip() else "Nothing is training."
    curves = [RunCurves(label) for label in labels(job.configs)]
    for run, reports in zip(curves, job.reports):  # the runner's record: ahead of what the stream has drawn
        for kind in ("start", "train", "eval", "done"):
            if kind in reports:
                run.add(reports[kind])
    return _status(curves, job.configs, "Stopping…", stopping=True)


def _pictures(curves: List[RunCurves], configs: List[RunConfig]):
    title = f"{configs[0].task}, seed {configs[0].seed}"
    return curves_figure(curves, title), attention_figure(curves), [run.summary() for run in curves]


def train_stream(ctx: Host, configs: List[RunConfig], session: str) -> Iterator[Tuple]:
    """Yield (status, curves, attention, summary) while the job waits and trains; ends when it does."""
    runner = ctx.playground
    job = runner.submit(session, configs)
    curves = [RunCurves(label) for label in labels(configs)]
    drawn = 0.0
    try:
        while True:
            job.seen = time.monotonic()
            place = runner.position(job)
            if place > 0:
                yield (f"⏳ Waiting in line: {place} run{'s' if place > 1 else ''} ahead of yours "
                       "(one training at a time on this server).", gr.skip(), gr.skip(), gr.skip())
            try:
                kind, index, payload = job.updates.get(timeout=0.5)
            except queue.Empty:
                if place == 0 and time.monotonic() - drawn > RENDER_SECONDS:
                    drawn = time.monotonic()
                    yield (_status(curves, configs, stopping=job.stop.is_set()), gr.skip(), gr.skip(), gr.skip())
                continue
            if kind == "end":
                stopped = job.stop.is_set()
                yield (_status(curves, configs, _end_note(curves, stopped), ended=True), *_pictures(curves, configs))
                return
            if kind == "error":
                raise RequestError(f"The training run failed: {payload}")
            curves[index].add(payload)
            if payload.kind in ("start", "eval", "done") or time.monotonic() - drawn > RENDER_SECONDS:
                drawn = time.monotonic()
                yield (_status(curves, configs, stopping=job.stop.is_set()), *_pictures(curves, configs))
    finally:
        job.stop.set()  # the visitor left or the stream ended: nothing more is read


def try_input(ctx: Host, text: str, session: str) -> Tuple[str, object]:
    """The trained models' outputs for a visitor's digits, and their attention on those outputs."""
    trained = ctx.playground.models(session)
    if not trained:
        raise ValueError("train a model first (press Train), then try your own input")
    if not isinstance(text, str) or len(text) > 64:
        raise ValueError("type at most 20 digits")
    lines, curves = [], []
    for (config, model, steps), label in zip(trained, labels([c for c, _, _ in trained])):
        result = predict(model, config.task, text)
        mark = "right" if result["right"] else f"wrong; expected {result['expected']}"
        lines.append(f"**{label}**: `{result['output'] or '(nothing)'}` ({mark})")
        run = RunCurves(label, trained_steps=steps)
        run.attention = result["attention"]
        curves.append(run)
    return "  \n".join(lines), attention_figure(curves, "Attention on your input")


def lesson_values(name: Optional[str]) -> Dict:
    """What a preset sets: task, peak lr, A/B on, and both runs' switches; plus its explanation."""
    lesson = LESSONS[name]
    return dict(task=lesson.a.task, peak_lr=lesson.a.peak_lr, ab=True, a=switch_values(lesson.a),
                b=switch_values(lesson.b), text=f"**{lesson.title}.** A: {lesson.a_label}; B: {lesson.b_label}. "
                                                f"{lesson.expect}")
