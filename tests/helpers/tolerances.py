"""Float tolerances for the whole suite, justified once, by dtype and magnitude (tokens are compared exactly).

The same float32 computation can come out differently in its last bits on another machine or setting: another
thread count splits a reduction differently, another CPU (or ``ONEDNN_MAX_CPU_ISA``) picks other kernels, a
batch of another size takes another matrix-product path.  A reduction of n float32 terms done in another order
moves by up to about n ulps of its magnitude (eps = 2**-23, about 1.2e-7).  The models under test reduce over
at most a few hundred terms per step (d_model, d_ff, heads' dimensions) through a few layers, so:

* ``F32_REL = 2**-16`` (128 ulps, about 1.5e-5): relative tolerance for a float32 result computed by
  different kernels; results near zero get an absolute floor of ``F32_REL`` times the magnitude of the
  quantities they were computed from (``scale``: 1 for probabilities and log-probabilities of moderate size).
* A score is a float64 sum of float32 log-probabilities: each term carries its own float32 error, so the
  tolerance is relative to the sum of the terms' magnitudes, with a floor of 1 per term (``score``).
* ``F64_REL = 2**-32`` (about 2.3e-10): float64 results of reductions over up to ~1e6 terms, in another
  order (n * 2**-52 is about 2.2e-10 for n = 1e6).
* ``RUNTIME_REL = 2**-10`` (about 1e-3): another runtime (CTranslate2) computes the same equations with its own
  GEMM and fused softmax, in float32; its log-probabilities agree with ours to a few 1e-4 on these models.
* ``F16_UNIT = 2**-11`` (about 4.9e-4): float16's unit roundoff; a weight stored in float16 is its float32 value
  moved by at most this much of itself.  A model run in float32 on weights rounded so (``half_weights_close``):
  to first order each weight matrix's rounding moves an output by at most ``F16_UNIT`` of the outputs' scale
  (layer norms keep every sub-layer's input at the scale of 1), and the roundings of the model's ``matrices``
  add up, so outputs move by at most ``matrices * F16_UNIT`` of their largest magnitude (the tiny test models,
  with 30-odd matrices, move by about 1.5 ``F16_UNIT``: the roundings' signs mostly cancel).

Where two results come from the same code on the same data in the same process and thread setting, they are
bit for bit equal and the tests say so (``exactly``): determinism is what those tests check.
"""
from __future__ import annotations

import math
import struct
from typing import Union

import pytest
import torch

F32_REL = 2.0 ** -16
F64_REL = 2.0 ** -32
RUNTIME_REL = 2.0 ** -10
F16_UNIT = 2.0 ** -11
Number = Union[float, int]


def f32(expected, scale: float = 1.0):
    """``pytest.approx`` for float32 results of other kernels: relative ``F32_REL``, floor ``F32_REL * scale``."""
    return pytest.approx(expected, rel=F32_REL, abs=F32_REL * scale)


def f64(expected, scale: float = 1.0):
    """``pytest.approx`` for float64 results of a reduction in another order."""
    return pytest.approx(expected, rel=F64_REL, abs=F64_REL * scale)


def runtime(expected, scale: float = 1.0):
    """``pytest.approx`` for the same float32 quantity computed by another runtime (CTranslate2)."""
    return pytest.approx(expected, rel=RUNTIME_REL, abs=RUNTIME_REL * scale)


def score(expected: float, n_terms: int, rel: float = F32_REL):
    """``pytest.approx`` for a score: a float64 sum of ``n_terms`` float32 log-probabilities (all <= 0, so the sum
    of their magnitudes is ``|expected|``), or such a sum divided by a length penalty >= 1."""
    return pytest.approx(expected, rel=0, abs=rel * (abs(expected) + n_terms) + F64_REL * abs(expected))


def sum_close(a: torch.Tensor, b: torch.Tensor, terms: int, magnitude: float = 1.0) -> bool:
    """Sums of ``terms`` float32 values of at most ``magnitude``: worst case ``terms`` ulps of it apart."""
    return torch.allclose(a, b, rtol=F32_REL, atol=F32_REL * magnitude + terms * torch.finfo(torch.float32).eps * magnitude)


def half_weights_close(a: torch.Tensor, b: torch.Tensor, matrices: int) -> bool:
    """Outputs ``b`` of a model whose ``matrices`` weight matrices were rounded to float16, against the float32
    model's ``a``: within ``matrices * F16_UNIT`` of ``a``'s largest magnitude (module docstring)."""
    return torch.allclose(a, b, rtol=0, atol=matrices * F16_UNIT * magnitude(a))


def f32_close(a: torch.Tensor, b: torch.Tensor, scale: float = 1.0) -> bool:
    """``torch.allclose`` for float32 tensors of other kernels (same rule as :func:`f32`)."""
    return torch.allclose(a, b, rtol=F32_REL, atol=F32_REL * float(scale))


def magnitude(t: torch.Tensor) -> float:
    """The scale of a tensor's values (its largest magnitude, at least 1): what a float32 result is relative to."""
    return max(1.0, float(t.detach().abs().max())) if t.numel() else 1.0


def f64_close(a: torch.Tensor, b: torch.Tensor, scale: float = 1.0) -> bool:
    """``torch.allclose`` for float64 tensors of a reduction in another order."""
    return torch.allclose(a, b, rtol=F64_REL, atol=F64_REL * scale)


def runtime_close(a: torch.Tensor, b: torch.Tensor, scale: float = 1.0) -> bool:
    return torch.allclose(a, b, rtol=RUNTIME_REL, atol=RUNTIME_REL * scale)


def rounded(expected, decimals: int, roundings: int = 1):
    """A value shown rounded to ``decimals`` (``roundings`` times in a chain): half a unit of the last place each."""
    return pytest.approx(expected, rel=0, abs=roundings * 0.5 * 10.0 ** -decimals + F32_REL * abs(expected))


class _Exactly:
    """Compares equal to a value of the same structure whose floats have the same bits (NaN equals NaN)."""

    def __init__(self, expected):
        self.expected = expected

    def __eq__(self, actual) -> bool:
        return _same_bits(actual, self.expected)

    def __repr__(self) -> str:
        return f"exactly({self.expected!r})"


def _same_bits(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_bits(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_bits(a[k], b[k]) for k in a)
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    return a == b


def exactly(expected) -> _Exactly:
    """Bit-for-bit equality, for results of the same code on the same data and threads (determinism); nested
    lists, tuples and dicts compare item by item (``pytest.approx`` refuses nested data)."""
    return _Exactly(expected)
