"""transformer_hub.model.kernels: each speed-only kernel against the plain reference it must equal, the switch that
swaps them into a model, and the guard around PyTorch's private oneDNN operators."""
import ast
from pathlib import Path

import pytest
import torch
from torch import nn

from helpers.tolerances import f32_close, f64, magnitude, sum_close
from transformer_hub import Transformer, TransformerConfig
from transformer_hub.model import Dropout, kernels, no_dropout, onednn
from transformer_hub.model.kernels import BLOCK, Projection, max_and_argmax, output_logits, prepared, topk
from transformer_hub.model.model import dropout_disabled

SIZES = [7, 2 * BLOCK, 5 * BLOCK, 5 * BLOCK + 37, 10_000]


@pytest.mark.parametrize("V", SIZES)
def test_max_and_argmax_equal_torch_max_ties_included(V):
    g = torch.Generator().manual_seed(V)
    logits = torch.randn(35, V, generator=g)
    logits[1] = 0.0  # all tied: the first index
    logits[2, [3, V - 1]] = 50.0  # tie between the first block and the tail
    logits[3, V - 1] = 60.0  # the tail alone wins
    logits[4, [V // 2, V // 2 + 1]] = -1.0
    logits[4] -= 100.0
    logits[5, 0] = float("-inf")
    values, index = max_and_argmax(logits)
    expected = logits.max(dim=-1)
    assert torch.equal(values, expected.values) and torch.equal(index, expected.indices)


@pytest.mark.parametrize("V", SIZES)
@pytest.mark.parametrize("k", [1, 3, 8])
def test_topk_values_equal_torch_topk_and_indices_point_at_them(V, k):
    k = min(k, V)
    g = torch.Generator().manual_seed(k * V)
    logits = torch.randn(33, V, generator=g)
    logits[1, :k] = 9.0  # the best k all in the first block
    logits[2, -k:] = 9.0 + torch.arange(k, dtype=torch.float)  # the best k in the tail
    logits[3, torch.arange(k) * (V // k)] = 20.0  # one per block, spread out
    expected = logits.topk(k, dim=-1)
    values, index = topk(logits, k)
    assert torch.equal(values, expected.values)
    assert torch.equal(logits.gather(1, index), values)  # indices point at those values
    assert all(len(set(row)) == k for row in index.tolist())  # distinct


def test_projection_gives_log_probabilities_and_reuses_its_buffers():
    torch.manual_seed(0)
    linear = nn.Linear(16, 300, bias=False)
    project = Projection()
    with torch.inference_mode():
        for rows in (5, 1, 12, 3):
            hidden = torch.randn(rows, 16)
            got = project(linear, hidden)
            assert got.shape == (rows, 300) and got.is_contiguous()
            expected = linear(hidden).log_softmax(dim=-1)
            assert f32_close(got, expected, scale=magnitude(expected))
            assert sum_close(got.exp().sum(dim=-1), torch.ones(rows), terms=got.size(-1))
        buffers = project.logits, project.log_probs
        project(linear, torch.randn(2, 16))
        assert (project.logits, project.log_probs) == buffers  # grown once to the largest batch, then reused


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="PyTorch built without oneDNN")
@pytest.mark.parametrize("rows", [1, 4])
def test_prepared_weight_is_made_once_and_follows_the_weight(rows):
    torch.manual_seed(0)
    linear = nn.Linear(16, 300, bias=False)
    project = Projection()
    with torch.inference_mode():
        first = prepared(linear.weight)
        assert prepared(linear.weight) is first  # made once
        assert first.packed is not None
        hidden = torch.randn(rows, 16)
        before = project(linear, hidden).clone()
        expected = linear(hidden).log_softmax(dim=-1)
        assert f32_close(before, expected, scale=magnitude(expected))
    with torch.no_grad():
        linear.weight.mul_(2.0)  # an optimizer step or load_state_dict changes the weight in place
    with torch.inference_mode():
        assert prepared(linear.weight) is not first
        again = project(linear, hidden)
        assert not f32_close(again, before, scale=magnitude(before))
        expected = linear(hidden).log_softmax(dim=-1)
        assert f32_close(again, expected, scale=magnitude(expected))
        assert prepared(torch.randn(300, 16)) is None  # an inference tensor: no version counter, no copies
        assert prepared(linear.weight.double()) is None
    linear.weight = nn.Parameter(torch.randn(300, 16))  # a new weight: a new copy, the old one is dropped
    with torch.inference_mode():
        expected = linear(hidden).log_softmax(dim=-1)
        assert f32_close(project(linear, hidden), expected, scale=magnitude(expected))
    key = id(linear.weight)
    assert linear.weight in kernels._PREPARED
    del linear
    assert key not in kernels._PREPARED.entries


def test_projection_without_onednn_uses_mm_into_a_reused_buffer(monkeypatch):
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    torch.manual_seed(0)
    linear = nn.Linear(16, 300, bias=False)
    project = Projection()
    with torch.inference_mode():
        hidden = torch.randn(3, 16)
        expected = linear(hidden).log_softmax(dim=-1)
        assert f32_close(project(linear, hidden), expected, scale=magnitude(expected))
        assert project.logits is not None and project.logits.numel() == 3 * 300
        assert prepared(linear.weight) is None


def test_projection_calls_other_output_layers_as_they_are():
    torch.manual_seed(0)
    with_bias = nn.Linear(16, 50)
    other = nn.Sequential(nn.Linear(16, 50, bias=False), nn.Tanh())
    hidden = torch.randn(4, 16)
    with torch.inference_mode():
        for layer in (with_bias, other):
            expected = layer(hidden).log_softmax(dim=-1)
            assert f32_close(Projection()(layer, hidden), expected, scale=magnitude(expected))
    with torch.enable_grad():  # outside inference mode it still works, without the buffers
        got = Projection()(with_bias, hidden)
        expected = with_bias(hidden).log_softmax(dim=-1)
        assert got.requires_grad and f32_close(got, expected, scale=magnitude(expected))
    with torch.inference_mode():
        assert Projection()(with_bias.double(), hidden.double()).dtype == torch.float32


@pytest.mark.parametrize("V", SIZES)
def test_max_and_top_k_of_a_row_do_not_depend_on_the_other_rows(V):
    """One algorithm for every row count: a row alone gives what it gives inside a batch, ties included."""
    g = torch.Generator().manual_seed(V + 1)
    logits = torch.randn(40, V, generator=g).round(decimals=1)  # many exact ties
    values, index = max_and_argmax(logits)
    top_values, top_index = topk(logits, 3) if V >= 3 else topk(logits, 1)
    for row in (0, 7, 39):
        one = logits[row:row + 1]
        assert torch.equal(max_and_argmax(one)[1], index[row:row + 1])
        k = top_index.size(1)
        assert torch.equal(topk(one, k)[1], top_index[row:row + 1])
        assert torch.equal(topk(one, k)[0], top_values[row:row + 1])


def test_output_logits_equal_linear_and_a_row_does_not_depend_on_the_batch():
    torch.manual_seed(0)
    weight = nn.Linear(128, 10_000, bias=False).weight
    hidden = torch.randn(128, 128)
    with torch.inference_mode():
        full = output_logits(weight, hidden)
        expected = nn.functional.linear(hidden, weight)  # oneDNN against torch's GEMM: other kernels
        assert f32_close(full, expected, scale=magnitude(expected))
        for n in (1, 2, 3, 5, 8, 31, 64):  # bit for bit: the same kernel for every row count
            assert torch.equal(output_logits(weight, hidden[:n]), full[:n])
        assert torch.equal(output_logits(weight, hidden[77:78]), full[77:78])


# --------------------------------------------------------------------------- the private oneDNN operators
def test_missing_or_broken_onednn_operators_fall_back_to_mm(monkeypatch):
    def missing(*args):
        raise AttributeError("_reorder_linear_weight")  # what torch.ops says of an operator it lacks

    torch.manual_seed(0)
    weight, hidden = nn.Linear(16, 300, bias=False).weight, torch.randn(3, 16)
    expected = nn.functional.linear(hidden, weight)
    for name, broken in (("_pack", missing), ("_linear", lambda hidden, packed: hidden[:, :1])):  # absent, wrong
        onednn._works.cache_clear()
        monkeypatch.setattr(onednn, name, broken)
        try:
            assert not onednn.available()
            with torch.inference_mode():
                assert prepared(weight) is None
                assert f32_close(output_logits(weight, hidden), expected, scale=magnitude(expected))
        finally:
            monkeypatch.undo()
            onednn._works.cache_clear()
    assert onednn.available() == torch.backends.mkldnn.is_available()


# --------------------------------------------------------------------------- dropout
def test_dropout_kernel_equals_the_reference_given_its_mask_and_keeps_one_minus_p():
    torch.manual_seed(0)
    x = torch.randn(300, 500, requires_grad=True)
    drop = kernels.Dropout16(0.3)
    torch.manual_seed(1)
    y = drop(x)
    torch.manual_seed(1)
    keep = kernels.keep_mask16(x.shape, 0.3)
    assert f32_close(y, x * keep / 0.7, scale=magnitude(x))  # what nn.Dropout computes given its keep mask
    assert abs(float(keep.float().mean()) - 0.7) < 0.005  # 150k draws: the standard error is ~0.0012
    reference_keep = Dropout(0.3)(torch.ones(300, 500)) != 0
    assert abs(float(keep.float().mean()) - float(reference_keep.float().mean())) < 0.01
    y.sum().backward()
    assert f32_close(x.grad, keep / 0.7, scale=1 / 0.7)


@pytest.mark.parametrize("kind", [Dropout, kernels.Dropout16])
def test_no_dropout_is_thread_local_and_leaves_module_flags_alone(kind):
    import threading

    drop = kind(0.5).train()
    x = torch.ones(1000)
    seen = {}
    inside, go_on = threading.Event(), threading.Event()

    def other_thread():
        inside.wait(5)
        seen["other"] = bool((drop(x) == 0).any())  # the switch is on in the main thread only
        go_on.set()

    worker = threading.Thread(target=other_thread)
    worker.start()
    with no_dropout():
        assert drop.training and dropout_disabled()
        assert drop(x) is x
        inside.set()
        go_on.wait(5)
    worker.join(5)
    assert seen["other"] is True and not dropout_disabled()
    assert bool((drop(x) == 0).any())


# --------------------------------------------------------------------------- the switch
def test_use_speed_kernels_swaps_dropout_and_loss_and_nothing_else():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.preset("tiny", dropout=0.1)).double().train()
    model.body.extra = nn.Dropout(0.2)  # not the model's own Dropout: left alone
    before = {name: t.clone() for name, t in model.state_dict().items()}
    kinds = lambda: sorted({type(m).__name__ for m in model.modules()})  # noqa: E731
    reference = kinds()
    assert "Dropout16" not in reference and "FusedSmoothedLoss" not in reference
    src, tgt = torch.randint(4, 64, (3, 7)), torch.randint(4, 64, (3, 6))
    tgt[2, 3:] = 0  # padding
    with no_dropout():
        expected = model(src, tgt[:, :-1], tgt[:, 1:], label_smoothing=0.1)
        assert kernels.use_speed_kernels(model) is model
        got = model(src, tgt[:, :-1], tgt[:, 1:], label_smoothing=0.1)
    assert type(model.loss) is kernels.FusedSmoothedLoss and type(model.body.extra) is nn.Dropout
    assert all(type(m) is not Dropout for m in model.modules()) and all(m.training for m in model.modules())
    assert got.item() == f64(expected.item(), scale=expected.item())  # the model in float64
    assert kernels.use_speed_kernels(model, on=False) is model and kinds() == reference
    assert all(torch.equal(before[name], t) for name, t in model.state_dict().items())


def test_the_papers_model_never_imports_the_kernels():
    import transformer_hub.model as package

    root = Path(package.__file__).parent
    for path in [*root.glob("*.py"), *root.glob("variants/*.py")]:
        if path.name in ("kernels.py", "onednn.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [alias.name for alias in node.names]
                assert not any(n.split(".")[-1] in ("kernels", "onednn") for n in names), (path, names)
