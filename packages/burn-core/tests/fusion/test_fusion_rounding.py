"""A value a fused kernel computes in several places rounds one way: the cpu runtime compiles
its kernels without contracting ``a * b + c`` into FMAs (`burn_cube.runtime.cpu.KERNEL_FLAGS`),
so every op rounds as its own kernel would. Contracted in some columns only, ``x * w + 0.5``
under a fused ``amax(0)`` equalled no element of those columns, and autodiff's max mask gave
them no gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, check

import burn

pytestmark = pytest.mark.usefixtures("empty_stream")

#: rows of x and w whose x * w + 0.5 rounds differently as one FMA and as a product, then a sum
X_ROWS = np.array([[0.49588007], [-0.72841775], [-0.12880114]], np.float32)
W_ROWS = np.array([[-0.18805651], [0.45515975], [-0.7090505]], np.float32)


def _inputs(columns: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """x and w of shape [3 + 5, columns]: the rows above repeated, then random rows."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([np.repeat(X_ROWS, columns, 1),
                        rng.standard_normal((5, columns)).astype(np.float32)])
    w = np.concatenate([np.repeat(W_ROWS, columns, 1),
                        rng.standard_normal((5, columns)).astype(np.float32)])
    return x, w


@pytest.mark.parametrize("base", DEVICES)
@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("columns", [16, 37])
def test_max_gradients_of_a_fused_multiply_add(base: str, reduce: str, columns: int) -> None:
    """The gradient of (x * w + 0.5).amax(0) (and amin) reaches each column's extreme element,
    as torch's, over repeated steps (the plan cached, then reused)."""
    dev = burn.Device(base).fusion().autodiff()
    xd, wd = _inputs(columns, seed=columns)
    tx = torch.from_numpy(xd).requires_grad_()
    getattr(tx * torch.from_numpy(wd) + 0.5, reduce)(0).sum().backward()
    assert tx.grad is not None
    for _ in range(4):
        x = burn.tensor(xd, device=dev).require_grad()
        w = burn.tensor(wd, device=dev)
        loss = getattr(x * w + 0.5, reduce)(0).sum()
        grad = x.grad(loss.backward())
        assert grad is not None
        check(grad, tx.grad, rtol=0, atol=0)


@pytest.mark.parametrize("base", DEVICES)
def test_a_value_read_twice_in_one_kernel_rounds_one_way(base: str) -> None:
    """Each column of (x * w + 0.5) holds its max once, where the max and the comparison are
    one fused kernel."""
    dev = f"{base}+fusion"
    xd, wd = _inputs(16, seed=1)
    for _ in range(4):
        a = burn.tensor(xd, device=dev) * burn.tensor(wd, device=dev) + 0.5
        hits = (a == a.amax(0, keepdim=True)).int().sum(0)
        ta = torch.from_numpy(xd) * torch.from_numpy(wd) + 0.5
        check(hits, (ta == ta.amax(0, keepdim=True)).int().sum(0))


@pytest.mark.parametrize("base", ["cpu"])
@pytest.mark.parametrize("columns", [3, 16, 1000])
def test_fused_multiply_adds_equal_the_unfused_ops_on_the_cpu(base: str, columns: int) -> None:
    """On the cpu runtime fused chains of products and sums (an elementwise block, and a reduce
    block computing them on read) give the unfused ops' values bit for bit (a sum, in its own
    order of additions, within rounding)."""
    xd, wd = _inputs(columns, seed=2)
    results = {}
    for dev in (base, f"{base}+fusion"):
        x, w = burn.tensor(xd, device=dev), burn.tensor(wd, device=dev)
        a = x * w + 0.5
        b = (a * 1.25 - x) * w
        results[dev] = [t.to_numpy() for t in (a, b, (a * a + b).amax(1), b.sum(0))]
    *exact, total = results[f"{base}+fusion"]
    *want, want_total = results[base]
    for fused, plain in zip(exact, want, strict=True):
        assert fused.dtype == plain.dtype and fused.shape == plain.shape
        np.testing.assert_array_equal(fused.view(np.uint32), plain.view(np.uint32))
    assert total.dtype == want_total.dtype and total.shape == want_total.shape
    np.testing.assert_allclose(total, want_total, rtol=1e-6, atol=1e-6)
