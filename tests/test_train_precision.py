"""bf16 autocast in training: a step agrees with float32 within bf16's rounding, and a run resumes exactly across
the two precisions (weights and Adam's moments stay float32 in both)."""
import pytest
import torch
from safetensors.torch import load_file

from helpers.training import args_for, checkpoint_weights
from transformer_hub.training import checkpoint as ckpt
from transformer_hub.training.data import iterate_batches
from transformer_hub.training.options import parse_config
from transformer_hub.training.precision import autocast, resolve_precision
from transformer_hub.training.trainer import Trainer, main

# bfloat16 keeps 8 significant bits: a value rounded to it moves by at most BF16_UNIT = 2**-8 of itself.  Autocast
# rounds the inputs of every matrix product (accumulating in float32); layer norms keep each sub-layer's input at
# the scale of 1, so to first order each product moves its output by at most 2 BF16_UNIT of the outputs' scale and
# the products' errors add up: the loss and the gradients move by at most 2 * matrices * BF16_UNIT of their scale
# (the tiny model: about 30 weight matrices; measured, they move by far less, the roundings' signs mostly cancel).
BF16_UNIT = 2.0 ** -8
COMMON = ("--bleu-every", "100", "--keep-last", "20", "--average-last", "1")


def test_auto_is_bf16_only_where_the_cpu_has_bf16_units():
    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu, frozenset({"avx2", "fma"})) == "float32"
    assert resolve_precision("auto", cpu, frozenset({"avx512f", "avx512_bf16"})) == "bf16"
    assert resolve_precision("auto", cpu, frozenset({"amx_tile", "amx_bf16"})) == "bf16"
    assert resolve_precision("bf16", cpu, frozenset()) == "bf16"  # asked for: runs on any CPU, slower
    assert resolve_precision("float32", cpu, frozenset({"amx_bf16"})) == "float32"


@pytest.mark.parametrize("kernels", [(), ("--speed-kernels",)], ids=["reference", "speed-kernels"])
def test_a_bf16_training_step_agrees_with_float32_within_bf16_rounding(tmp_path, kernels):
    trainer = Trainer(parse_config(args_for(tmp_path, "run", "--max-updates", "1", *COMMON, *kernels)))
    net, model = trainer.run.net, trainer.run.model
    net.train()
    _, (src, tgt_in, tgt_out) = next(iter(iterate_batches(trainer.run.epoch_examples(0), 300, 1, 0,
                                                          trainer.run.config.pad_id, 0, 0, 1)))
    results = {}
    for precision in ("float32", "bf16"):
        torch.manual_seed(0)  # the same dropout masks in both
        model.zero_grad(set_to_none=True)
        with autocast(precision, torch.device("cpu")):
            loss = net(src, tgt_in, tgt_out, 0.1)
        assert loss.dtype == torch.float32
        loss.backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        assert all(p.dtype == torch.float32 for p in model.parameters())  # autocast leaves the weights float32
        results[precision] = (loss.item(), grads)
    matrices = sum(1 for p in model.parameters() if p.dim() == 2)
    tolerance = 2 * matrices * BF16_UNIT
    (loss32, grads32), (loss16, grads16) = results["float32"], results["bf16"]
    assert abs(loss16 - loss32) <= tolerance * abs(loss32)
    assert (grads16 - grads32).norm() <= tolerance * grads32.norm()
    assert loss16 != loss32  # bf16 did run: its rounding shows


def saved_state(run, step):
    tensors = load_file(str(ckpt.step_dir(run / "checkpoints", step) / ckpt.STATE_TENSORS))
    return checkpoint_weights(run, step), {k: v for k, v in tensors.items() if k.startswith("optim.")}


def assert_resumed_exactly(trainer, run, step):
    weights, optim = saved_state(run, step)
    assert trainer.run.state.step == step
    model = trainer.run.model.state_dict()
    for name, value in weights.items():
        assert model[name].dtype == torch.float32 and torch.equal(model[name], value), name
    live, _ = ckpt.optimizer_to_tensors(trainer.run.optimizer)
    assert live.keys() == optim.keys()
    for name, value in optim.items():
        assert value.dtype == torch.float32 and torch.equal(live[name], value), name


@pytest.mark.slow  # three short runs: ~12 s
def test_a_run_resumes_exactly_from_float32_into_bf16_and_back(tmp_path):
    run = tmp_path / "run"
    main(args_for(tmp_path, "run", "--max-updates", "3", "--save-every", "3", *COMMON))  # float32
    bf16 = Trainer(parse_config(args_for(tmp_path, "run", "--max-updates", "6", "--save-every", "3",
                                         "--precision", "bf16", "--resume", *COMMON)))
    assert bf16.precision == "bf16"
    assert_resumed_exactly(bf16, run, 3)
    bf16.train()  # three bf16 updates; the checkpoint keeps float32 weights and moments
    back = Trainer(parse_config(args_for(tmp_path, "run", "--max-updates", "8", "--resume", *COMMON)))
    assert back.precision == "float32"
    assert_resumed_exactly(back, run, 6)
