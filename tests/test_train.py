"""The training recipe: schedule, fused loss, exact resume, SIGTERM, non-finite losses, averaging, DDP."""
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from helpers.training import args_for, checkpoint_weights
from helpers.tolerances import f32_close, f64, magnitude
from transformer_hub import Transformer
from transformer_hub.training import checkpoint as ckpt
from transformer_hub.errors import UserError
from transformer_hub.training.schedule import cooldown_scale, lr_factor, noam_lr, scheduled_lr
from transformer_hub.training.options import build_parser, parse_config
from transformer_hub.training.trainer import Trainer, main
from transformer_hub.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
def test_noam_schedule_matches_the_paper():
    d, warmup, factor = 512, 4000, 1.0
    for step in (1, 100, 4000, 10000):
        expected = factor * d ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
        assert noam_lr(step, d, warmup, factor) == f64(expected, scale=expected)  # Python floats
    peak = 0.005
    factor = peak * math.sqrt(128) * math.sqrt(2000)  # what --peak-lr sets
    assert noam_lr(2000, 128, 2000, factor) == f64(peak, scale=peak)
    assert noam_lr(1999, 128, 2000, factor) < peak and noam_lr(2001, 128, 2000, factor) < peak



def test_cooldown_falls_linearly_to_the_last_update():
    assert [cooldown_scale(step, 10, 4) for step in (1, 6, 7, 8, 9, 10)] == [1.0, 1.0, 1.0, 0.75, 0.5, 0.25]
    assert cooldown_scale(5, 10, 0) == 1.0 and cooldown_scale(5, 0, 4) == 1.0  # no cool-down, no known end
    assert scheduled_lr(9, 128, 4, 2.0, last=10, cooldown=4) == f64(0.5 * noam_lr(9, 128, 4, 2.0), scale=1e-3)


def test_a_run_with_a_cooldown_logs_the_cooled_rate_and_records_it(tmp_path):
    main(args_for(tmp_path, "run", "--max-updates", "20", "--cooldown-updates", "15", "--bleu-every", "100",
                  "--average-last", "1"))
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    logged = {r["step"]: r["lr"] for r in records if r["kind"] == "train"}
    d_model = json.loads((tmp_path / "run" / "final" / "config.json").read_text())["d_model"]
    factor = lr_factor(0.003, d_model, 4)
    for step in (10, 20):  # update 10 at 11/15 of the schedule's rate, the last at 1/15
        expected = noam_lr(step, d_model, 4, factor) * (20 - step + 1) / 15
        assert logged[step] == f64(expected, scale=expected)
    card = (tmp_path / "run" / "final" / "README.md").read_text()
    assert "cooldown_updates: 15" in card

SAMPLING = ("--subword-sampling-alpha", "0.2", "--subword-sampling-side", "both")


@pytest.mark.parametrize("extra, updates, stop_at", [
    ((), 14, 4),
    (SAMPLING, 34, 30),  # an epoch is 28 updates: stopped inside the second epoch, whose pieces differ from the first's
], ids=["plain", "subword-sampling"])
def test_interrupted_and_resumed_run_ends_with_identical_weights(tmp_path, monkeypatch, extra, updates, stop_at):
    common = ["--max-updates", str(updates), "--save-every", str(updates // 2), "--bleu-every", "100",
              "--keep-last", "20", *extra]
    main(args_for(tmp_path, "straight", *common))

    original_loss = Trainer._loss

    def loss_then_sigterm(self, *batch):  # a SIGTERM arrives during update stop_at + 1
        if self.run.state.step == stop_at:
            os.kill(os.getpid(), signal.SIGTERM)
        return original_loss(self, *batch)

    monkeypatch.setattr(Trainer, "_loss", loss_then_sigterm)
    main(args_for(tmp_path, "interrupted", *common))
    run = tmp_path / "interrupted"
    saved = [p.name for p in ckpt.list_checkpoints(run / "checkpoints")]
    assert saved[-1] == f"step_{stop_at + 1:07d}", "SIGTERM must checkpoint the finished update and stop"
    assert not (run / "final").exists()
    last = ckpt.step_dir(run / "checkpoints", stop_at + 1) / ckpt.STATE_JSON  # written as before TrainingConfig:
    old = {("args" if k == "options" else k): v for k, v in json.loads(last.read_text()).items()}  # its options
    last.write_text(json.dumps(old, indent=1))  # under "args", which a resume still reads
    monkeypatch.setattr(Trainer, "_loss", original_loss)
    main(args_for(tmp_path, "interrupted", *common, "--resume"))

    a, b = checkpoint_weights(tmp_path / "straight", updates), checkpoint_weights(run, updates)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    state = json.loads((ckpt.step_dir(run / "checkpoints", updates) / ckpt.STATE_JSON).read_text())
    assert state["step"] == updates
    losses = [r["step"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["kind"] == "train"]
    assert losses == list(range(10, updates + 1, 10))  # the resumed run dropped nothing, repeated nothing
    final = Transformer.from_pretrained(tmp_path / "straight" / "final")
    assert final.tokenizer is not None and final.card_data["training"]["updates"] == updates
    assert (tmp_path / "straight" / "final" / "training_curves.png").stat().st_size > 1000


def test_subword_sampling_changes_training_pieces_each_epoch_and_never_decoding(tmp_path):
    trainer = Trainer(parse_config(args_for(tmp_path, "run", *SAMPLING)))
    tok = trainer.run.model.tokenizer
    epochs = [trainer.run.epoch_examples(e) for e in (0, 1, 0)]
    assert [e.src for e in epochs[0]] == [e.src for e in epochs[2]]  # fixed by (seed, epoch): resumable
    changed = [(a.src != b.src, a.tgt != b.tgt) for a, b in zip(epochs[0], epochs[1])]
    assert sum(s for s, _ in changed) > len(changed) // 10 and sum(t for _, t in changed) > len(changed) // 10, changed
    for example, fixed in zip(epochs[1], trainer.run.train_examples):  # other pieces, the same text
        assert tok.decode(example.src, side="source") == tok.decode(fixed.src, side="source")
    plain = [list(e.src) for e in trainer.run.valid_examples]
    sources = [s for s, _ in trainer.run.valid_pairs]
    assert plain == [tok.encode(s) + [2] for s in sources]  # validation is not sampled
    assert [tok.encode(s) + [2] for s in sources] == plain  # and neither is encode (what decoding uses)


def test_speed_kernels_are_opt_in(tmp_path):
    """The paper's model trains on its references (nn.Dropout, F.cross_entropy) unless --speed-kernels asks."""
    for flag, loss, dropout in (((), "SmoothedLoss", "Dropout"),
                                (("--speed-kernels",), "FusedSmoothedLoss", "Dropout16")):
        model = Trainer(parse_config(args_for(tmp_path, f"run{len(flag)}", "--dropout", "0.1", *flag))).run.model
        assert type(model.loss).__name__ == loss
        assert {type(m).__name__ for m in model.modules() if isinstance(m, torch.nn.Dropout)} == {dropout}


def test_subword_sampling_is_saved_with_the_model_and_kept_on_resume(tmp_path):
    main(args_for(tmp_path, "run", "--max-updates", "3", "--bleu-every", "100", *SAMPLING))
    final = Transformer.from_pretrained(tmp_path / "run" / "final")
    assert (final.tokenizer.sampling.alpha, final.tokenizer.sampling.side, final.tokenizer.sampling.nbest) == \
        (0.2, "both", -1)
    assert final.card_data["training"]["subword_sampling"] == "alpha 0.2, nbest -1, both sides"
    with pytest.raises(UserError, match=r"this run was trained with subword sampling alpha 0.2, nbest -1, both "
                                        r"sides: resume it with the same --subword-sampling-\* options \(they say none\)"):
        main(args_for(tmp_path, "run", "--max-updates", "4", "--bleu-every", "100", "--resume"))
    with pytest.raises(UserError, match=r"--subword-sampling-alpha/--subword-sampling-side: .*alpha must be a number"):
        main(args_for(tmp_path, "other", "--subword-sampling-alpha", "2"))


def test_loss_falls_and_best_and_pruning(tmp_path):
    main(args_for(tmp_path, "run", "--max-updates", "60", "--keep-last", "2", "--bleu-every", "1"))
    run = tmp_path / "run"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in records if r["kind"] == "val"]
    assert val[-1]["val_loss"] < val[0]["val_loss"] - 0.5
    assert len(ckpt.list_checkpoints(run / "checkpoints")) == 2
    assert (run / "best" / "model.safetensors").is_file()
    assert {"bleu", "chrf", "bleu_lowercase"} <= set(val[-1])


def test_non_finite_losses_are_skipped_then_abort(tmp_path, monkeypatch, caplog):
    original_loss = Trainer._loss
    calls = {"n": 0}

    def sometimes_nan(self, *batch):
        calls["n"] += 1
        loss = original_loss(self, *batch)
        return loss * float("nan") if calls["n"] == 2 else loss

    monkeypatch.setattr(Trainer, "_loss", sometimes_nan)
    main(args_for(tmp_path, "one_nan", "--max-updates", "4", "--bleu-every", "100"))
    assert "non-finite loss" in caplog.text
    state = json.loads((ckpt.list_checkpoints(tmp_path / "one_nan" / "checkpoints")[-1] / ckpt.STATE_JSON).read_text())
    assert state["step"] == 4  # the bad batch was skipped, training went on

    monkeypatch.setattr(Trainer, "_loss", lambda self, *b: original_loss(self, *b) * float("inf"))
    with pytest.raises(RuntimeError, match="non-finite losses in a row"):
        main(args_for(tmp_path, "all_nan", "--max-updates", "20", "--bleu-every", "100"))


def test_average_checkpoints_is_the_mean(tmp_path):
    main(args_for(tmp_path, "avg", "--max-updates", "6", "--save-every", "2", "--bleu-every", "100"))
    paths = ckpt.list_checkpoints(tmp_path / "avg" / "checkpoints")[-3:]
    model = Transformer.from_pretrained(paths[0])
    ckpt.average_checkpoints(paths, model)
    weights = [load_file(str(p / "model.safetensors")) for p in paths]
    for name, value in model.state_dict().items():
        if name in weights[0]:
            expected = sum(w[name].double() for w in weights).float() / 3
            assert f32_close(value, expected, scale=magnitude(expected)), name


def test_cli_help_lists_the_recipe():
    text = build_parser().format_help()
    for flag in ("--label-smoothing", "--warmup", "--peak-lr", "--average-last", "--push-to-hub", "--resume"):
        assert flag in text


DDP_SCRIPT = """
import json, os, signal, sys, torch
from safetensors.torch import save_file
from transformer_hub.training.options import parse_config
from transformer_hub.training.trainer import Trainer

rank, inject = int(os.environ["RANK"]), os.environ.get("INJECT", "")
original_loss, calls = Trainer._loss, [0]

def loss(self, *batch):  # faults on rank 1 only: what the other rank must not be left waiting for
    calls[0] += 1
    value = original_loss(self, *batch)
    if rank == 1 and "nan" in inject and calls[0] == 2:
        value = value * float("nan")
    if rank == 1 and "clock" in inject:
        self.run.state.wall_seconds += 10 ** 6  # rank 1's clock says the time is long up; rank 0's decides
    if rank == 1 and "sigterm" in inject and self.run.state.step == 1:
        os.kill(os.getpid(), signal.SIGTERM)
    return value

Trainer._loss = loss
trainer = Trainer(parse_config(sys.argv[1:]))
trainer.train()
out = trainer.config.out
save_file({k: v.detach().clone() for k, v in trainer.run.model.state_dict().items()},  # tied tensors: copies
          f"{out}/replica{rank}.safetensors")
with open(f"{out}/replica{rank}.json", "w") as fh:
    json.dump({"skipped": trainer.skipped, "step": trainer.run.state.step, "stopped": trainer.stop.requested}, fh)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_ddp(tmp_path: Path, out: str, *extra: str, inject: str = "", timeout: float = 300) -> Path:
    """Train on 2 CPU processes (gloo, the environment torchrun would set); a run that hangs is killed and fails.

    The two ranks are started here rather than by torchrun, which puts its workers in sessions of their own:
    holding both processes is what lets a hung run be killed whole.
    """
    script = tmp_path / "ddp_train.py"
    script.write_text(DDP_SCRIPT)
    args = args_for(tmp_path, out, "--bleu-every", "100", "--final-beam", "0", "--average-last", "1", *extra)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "TRANSFORMER_HUB_DISABLE_PLUGINS": "1",
           "INJECT": inject, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2"}
    logs = [tmp_path / f"{out}-rank{rank}.log" for rank in (0, 1)]
    procs = [subprocess.Popen([sys.executable, str(script), *args], env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                              stdout=subprocess.DEVNULL, stderr=open(logs[r], "w")) for r in (0, 1)]
    deadline = time.monotonic() + timeout
    try:
        for proc in procs:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        pytest.fail(f"2-process training did not finish within {timeout} s: a rank is waiting for the other")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for proc, log in zip(procs, logs):
        assert proc.returncode == 0, log.read_text()[-3000:]
    return tmp_path / out


def replicas(run: Path) -> tuple:
    """Each rank's final weights and its record (skipped batches, step, stopped)."""
    weights = [load_file(str(run / f"replica{r}.safetensors")) for r in (0, 1)]
    records = [json.loads((run / f"replica{r}.json").read_text()) for r in (0, 1)]
    return weights, records


def assert_identical(weights: list) -> None:
    r0, r1 = weights
    assert r0.keys() == r1.keys() and len(r0) > 10
    for name in r0:
        assert torch.equal(r0[name], r1[name]), name


@pytest.mark.slow
def test_two_process_ddp_replicas_stay_identical(tmp_path):
    run = run_ddp(tmp_path, "ddp", "--max-updates", "3")
    weights, records = replicas(run)
    assert_identical(weights)  # rank 0 averaged the last 1 checkpoint: the same weights
    assert records[0] == records[1] == {"skipped": [], "step": 3, "stopped": False}
    state = json.loads((ckpt.list_checkpoints(run / "checkpoints")[-1] / ckpt.STATE_JSON).read_text())
    assert state["step"] == 3


@pytest.mark.slow
def test_ddp_non_finite_loss_on_one_rank_is_skipped_by_both(tmp_path):
    # rank 1 alone meets a NaN at its 2nd batch, and its clock is far past --max-minutes: only rank 0's counts
    run = run_ddp(tmp_path, "nan", "--max-updates", "4", "--max-minutes", "30", inject="nan,clock")
    weights, records = replicas(run)
    assert records[0]["skipped"] == records[1]["skipped"] == [{"step": 2, "epoch": 0, "batch": 1}]
    assert records[0]["step"] == records[1]["step"] == 4  # four updates on five batches, on both ranks
    assert_identical(weights)
    assert [p.name for p in ckpt.list_checkpoints(run / "checkpoints")] == ["step_0000004"]


@pytest.mark.slow
def test_ddp_stop_signal_on_one_rank_stops_both_after_the_same_update(tmp_path):
    run = run_ddp(tmp_path, "stop", "--max-updates", "50", inject="sigterm")
    weights, records = replicas(run)
    assert records[0] == records[1] == {"skipped": [], "step": 2, "stopped": True}
    assert [p.name for p in ckpt.list_checkpoints(run / "checkpoints")] == ["step_0000002"]
    assert not (run / "final").exists()  # interrupted: resume later
    assert_identical(weights)


def test_the_run_state_round_trips_and_refuses_fields_it_does_not_know():
    from transformer_hub.training.checkpoint import RunState

    state = RunState(step=7, epoch=1, batch=3, tokens=900, best_bleu=12.5, validations=2, options={"seed": 1},
                     init={"source": "m", "sha256": "0" * 64})
    assert RunState.from_dict(json.loads(json.dumps(state.to_dict()))) == state
    with pytest.raises(ValueError, match="training_state.json has fields this version does not know: bleu_best"):
        RunState.from_dict({**state.to_dict(), "bleu_best": 1.0})


def test_the_training_config_refuses_bad_values_in_one_line(tmp_path, capsys):
    from transformer_hub.training.config import TrainingConfig

    assert TrainingConfig(out="run") == parse_config(["--out", "run"])  # the command line's defaults are the config's
    for bad, reason in (({"max_tokens": 0}, "max_tokens must be an integer >= 1, got 0"),
                        ({"label_smoothing": 1.0}, "label_smoothing must be >= 0 and < 1.0, got 1.0"),
                        ({"peak_lr": -1.0}, "peak_lr must be > 0.0, got -1.0"),
                        ({"bleu_every": 0}, "bleu_every must be an integer >= 1, got 0"),
                        ({"subword_sampling_side": "target"}, "subword_sampling_side must be one of source, both"),
                        ({"directions": "en-de"}, "directions choose among the languages of langs")):
        with pytest.raises(ValueError, match=reason):
            TrainingConfig(out="run", **bad)
    with pytest.raises(ValueError, match=r"unknown training options \['max_token'\]"):
        TrainingConfig(out="run").replace(max_token=3)
    assert cli_main(["train", "--out", str(tmp_path / "run"), "--warmup", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "warmup must be an integer >= 1, got 0" in err
    with pytest.raises(TypeError, match="Trainer takes a TrainingConfig"):
        Trainer(build_parser().parse_args(["--out", str(tmp_path / "run")]))


def test_a_run_state_written_before_the_training_config_still_reads():
    """Checkpoints kept the options as "args" (the same names, as JSON); they resume as "options"."""
    from transformer_hub.training.checkpoint import RunState

    old = {"step": 3, "epoch": 0, "batch": 2, "args": {"out": "run", "seed": 1}}
    assert RunState.from_dict(old) == RunState(step=3, batch=2, options={"out": "run", "seed": 1})
