"""The training loop of a playground run, as a generator of events a page can draw as they come.

It trains the project's ``Transformer`` with its label-smoothed loss (section 5.4), Adam with the
paper's betas and the warm-up schedule of section 5.3, on batches of a synthetic task, and yields:

* ``start``: the parameter count and the fixed example whose attention is shown;
* ``train`` every ``report_every`` steps: mean loss, teacher-forced token accuracy on the training
  batches since the last report, learning rate;
* ``eval`` every ``eval_every`` steps (and at the end): on the held-out set, teacher-forced token
  accuracy and free-running (greedy) exact match, plus the cross- and decoder self-attention of the
  fixed example;
* ``done``: why it stopped (``budget``, ``steps`` or ``stopped``) and the final held-out figures.

Curves are indexed by step, so a run with ``max_steps`` and a seed gives the same curve every time.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import torch

from ._compat import Transformer, decode_ids, label_smoothed_cross_entropy, lr_factor, noam_lr
from .parts import build_model, record_self_attention
from .run import RunConfig
from .tasks import EOS, PAD, Batch, TaskData, decode, encode, get_task, pad_rows


@dataclass
class Event:
    """One report of a run; fields a kind does not fill stay None."""

    kind: str  # "start", "train", "eval" or "done"
    step: int
    seconds: float
    loss: Optional[float] = None
    token_accuracy: Optional[float] = None  # teacher-forced: training batches ("train"), held-out ("eval")
    lr: Optional[float] = None
    exact_match: Optional[float] = None  # greedy decoding, whole sequence right, held-out
    attention: Optional[Dict] = None  # see ``snapshot``
    reason: Optional[str] = None
    parameters: Optional[int] = None

    def to_dict(self) -> Dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def learning_rate(config: RunConfig, step: int) -> float:
    """Section 5.3's schedule scaled to peak at ``peak_lr``; without warm-up: the peak from step 1, the same decay."""
    factor = lr_factor(config.peak_lr, config.d_model, config.warmup_steps)
    if config.warmup or step >= config.warmup_steps:
        return noam_lr(step, config.d_model, config.warmup_steps, factor)
    return config.peak_lr


def token_accuracy(logits: torch.Tensor, tgt_out: torch.Tensor) -> Tuple[int, int]:
    """(right, total) over the non-padding targets of teacher-forced ``logits``."""
    keep = tgt_out != PAD
    return int(((logits.argmax(-1) == tgt_out) & keep).sum()), int(keep.sum())


def greedy(model: Transformer, sources: torch.Tensor, max_target: int, return_attention: bool = False):
    """Free-running decoding with the project's greedy search: its hypotheses, one per source row."""
    hyps = decode_ids(model, sources, strategy="greedy", max_length=max_target + 1, batch_size=256,
                      return_attention=return_attention)
    return [h[0] for h in hyps]


@torch.no_grad()
def evaluate(model: Transformer, held_out: Batch, max_target: int) -> Tuple[float, float]:
    """(teacher-forced token accuracy, greedy exact match) on the held-out set."""
    model.eval()
    right, total = token_accuracy(model(held_out.src, held_out.tgt_in), held_out.tgt_out)
    outputs = greedy(model, held_out.src, max_target)
    exact = sum(list(h.tokens) == t for h, t in zip(outputs, held_out.targets))
    model.train()
    return right / max(total, 1), exact / len(held_out.targets)


@torch.no_grad()
def snapshot(model: Transformer, source: List[int], target: List[int]) -> Dict:
    """Teacher-forced attention on one example, each layer averaged over its heads.

    ``{"source": tokens + </s>, "target": <s> + tokens, "cross": [layer][target row][source col],
    "self": [layer][target row][target col]}``, rounded to 3 decimals.
    """
    was_training = model.training
    model.eval()
    kernels = record_self_attention(model, True)
    src, tgt_in = torch.tensor([source + [EOS]]), torch.tensor([[1] + target])
    out = model.decode(tgt_in, model.encode(src), need_weights=True)
    cross = [w[0].mean(0) for w in out.cross_attention]
    self_attention = [k.weights[0].mean(0) for k in kernels]
    record_self_attention(model, False)
    model.train(was_training)
    rounded = lambda ws: [[[round(float(x), 3) for x in row] for row in w] for w in ws]  # noqa: E731
    return {"source": decode(source) + ["</s>"], "target": ["<s>"] + decode(target),
            "cross": rounded(cross), "self": rounded(self_attention)}


def fixed_example(data: TaskData) -> Tuple[List[int], List[int]]:
    """The held-out example whose attention is shown: the first one with the longest source."""
    source, target = max(data.held_out_pairs, key=lambda pair: len(pair[0]))
    return encode(source), encode(target)


def train(config: RunConfig, should_stop: Callable[[], bool] = lambda: False,
          clock: Callable[[], float] = time.monotonic) -> Iterator[Event]:
    """Train one run, yielding its events; the trained model is the ``done`` event's ``.model`` attribute."""
    torch.manual_seed(config.seed)
    task = get_task(config.task)
    data = TaskData(task, config.min_len, config.max_len, config.seed, config.held_out)
    model = build_model(config.model_config(), config.positions, config.causal_mask, config.residual)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate(config, 1), betas=(0.9, 0.98), eps=1e-9)
    max_target, example = task.target_length(config.max_len), fixed_example(data)
    start, step = clock(), 0
    elapsed = lambda: clock() - start  # noqa: E731
    yield Event("start", 0, 0.0, parameters=model.num_parameters(), attention=snapshot(model, *example))
    losses: List[float] = []
    right = total = 0
    while True:
        reason = ("stopped" if should_stop() else "budget" if elapsed() >= config.budget_seconds
                  else "steps" if config.max_steps is not None and step >= config.max_steps else None)
        if reason is not None or step and step % config.eval_every == 0:
            accuracy, exact = evaluate(model, data.held_out, max_target)
            yield Event("eval", step, elapsed(), token_accuracy=accuracy, exact_match=exact,
                        attention=snapshot(model, *example))
        if reason is not None:
            done = Event("done", step, elapsed(), token_accuracy=accuracy, exact_match=exact, reason=reason,
                         parameters=model.num_parameters())
            done.model = model  # type: ignore[attr-defined]  (not a field: events travel between processes)
            yield done
            return
        step += 1
        lr = learning_rate(config, step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        batch = data.train_batch(config.batch_size)
        logits = model(batch.src, batch.tgt_in)
        loss = label_smoothed_cross_entropy(logits, batch.tgt_out, PAD, config.label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        hit, count = token_accuracy(logits.detach(), batch.tgt_out)
        right, total = right + hit, total + count
        if step % config.report_every == 0:
            mean = sum(losses) / len(losses)
            yield Event("train", step, elapsed(), loss=mean if math.isfinite(mean) else float("nan"),
                        token_accuracy=right / max(total, 1), lr=lr)
            losses, right, total = [], 0, 0


def parse_source(task_name: str, text: str) -> List[int]:
    """A visitor's input for ``task_name`` (digits, spaces allowed) -> source ids; a clear ``ValueError`` otherwise."""
    task = get_task(task_name)
    if not isinstance(text, str):
        raise ValueError("the input must be text")
    digits = text.replace(" ", "").strip()
    if not digits or not digits.isascii() or not digits.isdigit():
        raise ValueError(f"type digits only, e.g. 31415 (got {text[:40]!r})")
    if len(digits) > task.max_length:
        raise ValueError(f"{task.name} reads at most {task.max_length} digits, got {len(digits)}")
    if task.name == "number-to-words":
        digits = str(int(digits))  # the task's numbers have no leading zeros
    return encode(list(digits))


def predict(model: Transformer, task_name: str, text: str) -> Dict:
    """The trained model's greedy output for a visitor's input, and its attention on that output."""
    source = parse_source(task_name, text)
    hyp = greedy(model, pad_rows([source + [EOS]]), get_task(task_name).target_length(len(source)))[0]
    output = [int(t) for t in hyp.tokens]
    expected = encode(get_task(task_name).target(decode(source)))
    return {"output": " ".join(decode(output)), "expected": " ".join(decode(expected)), "right": output == expected,
            "attention": snapshot(model, source, output)}
