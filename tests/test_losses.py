"""Label-smoothed cross-entropy (section 5.4): the speed kernels (the fused loss, the fused projection + loss)
against the reference, PyTorch's ``F.cross_entropy``."""
import pytest
import torch
import torch.nn.functional as F

from helpers.tolerances import f32, f64, f64_close, magnitude
from transformer_hub.model.kernels import fused_label_smoothed_cross_entropy as label_smoothed_cross_entropy
from transformer_hub.model.kernels import linear_label_smoothed_cross_entropy


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_fused_label_smoothing_equals_torch(eps):
    torch.manual_seed(0)
    logits = torch.randn(4, 9, 50, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, 50, (4, 9))
    target[0, 5:] = 0  # padding
    ours = label_smoothed_cross_entropy(logits, target, pad_id=0, eps=eps)
    ref = F.cross_entropy(logits.reshape(-1, 50), target.reshape(-1), ignore_index=0, label_smoothing=eps)
    assert ours.item() == f64(ref.item(), scale=ref.item())  # float64 throughout
    g1, = torch.autograd.grad(ours, logits)
    g2, = torch.autograd.grad(ref, logits)
    assert f64_close(g1, g2)
    total = label_smoothed_cross_entropy(logits, target, 0, eps, reduction="sum")
    expected = ref.item() * int((target != 0).sum())
    assert total.item() == f64(expected, scale=expected)
    with pytest.raises(ValueError, match="reduction"):
        label_smoothed_cross_entropy(logits, target, 0, eps, reduction="none")


@pytest.mark.parametrize("rows", [1, 7, 64, 10_000])  # one row a slab, uneven slabs, one slab
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_linear_loss_equals_projection_then_torch_loss(rows, eps):
    torch.manual_seed(1)
    hidden = torch.randn(3, 11, 16, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(40, 16, dtype=torch.float64, requires_grad=True)
    target = torch.randint(1, 40, (3, 11))
    target[1, 4:] = 0  # padding
    target[2, :] = 0
    ours = linear_label_smoothed_cross_entropy(hidden, weight, target, pad_id=0, eps=eps, rows=rows)
    ref = F.cross_entropy((hidden @ weight.t()).reshape(-1, 40), target.reshape(-1), ignore_index=0,
                          label_smoothing=eps)
    assert ours.item() == f64(ref.item(), scale=ref.item())
    upstream = torch.tensor(2.5, dtype=torch.float64)  # backward scales by the incoming gradient
    g_ours = torch.autograd.grad(ours * upstream, (hidden, weight))
    g_ref = torch.autograd.grad(ref * upstream, (hidden, weight))
    for a, b in zip(g_ours, g_ref):
        assert f64_close(a, b, scale=magnitude(b))
    assert (g_ours[0][2] == 0).all()  # an all-padding sentence gets no gradient


def test_linear_loss_float32_large_logits_stay_finite():
    torch.manual_seed(2)
    hidden = torch.randn(50, 8) * 30  # logits in the thousands: exp would overflow without the max shift
    weight = torch.randn(300, 8, requires_grad=True)
    target = torch.randint(1, 300, (50,))
    ours = linear_label_smoothed_cross_entropy(hidden, weight, target, 0, 0.1, rows=16)
    ref = F.cross_entropy(hidden @ weight.t(), target, label_smoothing=0.1)
    assert torch.isfinite(ours) and ours.item() == f32(ref.item(), scale=ref.item())  # float32, logits in the thousands
    ours.backward()
    assert torch.isfinite(weight.grad).all()
