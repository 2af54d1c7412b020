"""transformer_hub.decoding.vocab: block-maxima max / top-k, the projection to log-probabilities in reused buffers."""
import pytest
import torch
from torch import nn

from transformer_hub.decoding import vocab
from transformer_hub.decoding.vocab import BLOCK, MIN_ROWS, Projection, max_and_argmax, prepared, topk

SIZES = [7, 2 * BLOCK, 5 * BLOCK, 5 * BLOCK + 37, 10_000]


@pytest.mark.parametrize("V", SIZES)
def test_max_and_argmax_equal_torch_max_ties_included(V):
    g = torch.Generator().manual_seed(V)
    logits = torch.randn(MIN_ROWS + 3, V, generator=g)  # enough rows for the block search
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
    logits = torch.randn(MIN_ROWS + 1, V, generator=g)
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
            assert torch.allclose(got, linear(hidden).log_softmax(dim=-1), atol=1e-5, rtol=0)
            assert torch.allclose(got.exp().sum(dim=-1), torch.ones(rows), atol=1e-5)
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
        assert first.transposed.is_contiguous() and torch.equal(first.transposed, linear.weight.t())
        assert first.packed is not None
        hidden = torch.randn(rows, 16)
        before = project(linear, hidden).clone()
        assert torch.allclose(before, linear(hidden).log_softmax(dim=-1), atol=1e-5, rtol=0)
    with torch.no_grad():
        linear.weight.mul_(2.0)  # an optimizer step or load_state_dict changes the weight in place
    with torch.inference_mode():
        assert prepared(linear.weight) is not first
        again = project(linear, hidden)
        assert not torch.allclose(again, before)
        assert torch.allclose(again, linear(hidden).log_softmax(dim=-1), atol=1e-5, rtol=0)
        assert prepared(torch.randn(300, 16)) is None  # an inference tensor: no version counter, no copies
        assert prepared(linear.weight.double()) is None
    linear.weight = nn.Parameter(torch.randn(300, 16))  # a new weight: a new copy, the old one is dropped
    with torch.inference_mode():
        assert torch.allclose(project(linear, hidden), linear(hidden).log_softmax(dim=-1), atol=1e-5, rtol=0)
    key = id(linear.weight)
    assert key in vocab._PREPARED
    del linear
    assert key not in vocab._PREPARED


def test_projection_without_onednn_uses_mm_into_a_reused_buffer(monkeypatch):
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    torch.manual_seed(0)
    linear = nn.Linear(16, 300, bias=False)
    project = Projection()
    with torch.inference_mode():
        hidden = torch.randn(3, 16)
        assert torch.allclose(project(linear, hidden), linear(hidden).log_softmax(dim=-1), atol=1e-5, rtol=0)
        assert project.logits is not None and project.logits.numel() == 3 * 300
        assert prepared(linear.weight).packed is None


def test_projection_calls_other_output_layers_as_they_are():
    torch.manual_seed(0)
    with_bias = nn.Linear(16, 50)
    other = nn.Sequential(nn.Linear(16, 50, bias=False), nn.Tanh())
    hidden = torch.randn(4, 16)
    with torch.inference_mode():
        for layer in (with_bias, other):
            assert torch.allclose(Projection()(layer, hidden), layer(hidden).log_softmax(dim=-1), atol=1e-6, rtol=0)
    with torch.enable_grad():  # outside inference mode it still works, without the buffers
        got = Projection()(with_bias, hidden)
        assert got.requires_grad and torch.allclose(got, with_bias(hidden).log_softmax(dim=-1))
    with torch.inference_mode():
        assert Projection()(with_bias.double(), hidden.double()).dtype == torch.float32
