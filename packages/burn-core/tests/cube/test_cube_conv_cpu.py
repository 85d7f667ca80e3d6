"""The cpu runtime's own convolution paths against torch: im2col by column rows (contiguous or
strided reads, with and without padding), col2im by planes, the per-sample forward product
whose bias rides in the saved columns' row of ones, batch-last columns for short output rows,
and a LeNet-style network's gradients through autodiff."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF
from cube_testing import backend as _backend
from cube_testing import record_launches
from cube_testing import upload_view as _up

import burn
import burn.functional as bF
from burn import nn
from burn.backend.options import ConvOptions
from burn.backends.cube import CubeTensor
from burn.backends.cube.module.conv import BATCH_LAST_WIDTH
from burn.backends.cube.tensor import host_array
from burn.dtype import DType

#: (x shape, weight shape, stride, padding, dilation, groups): LeNet's two convs, and cases
#: for strided windows, padding, dilation, groups and a 1x1 kernel.
CASES = [
    ((4, 1, 28, 28), (6, 1, 5, 5), 1, 0, 1, 1),
    ((4, 6, 12, 12), (16, 6, 5, 5), 1, 0, 1, 1),
    ((2, 3, 9, 11), (4, 3, 3, 3), 2, 1, 1, 1),
    ((2, 4, 8, 7), (6, 2, 3, 2), 1, (2, 1), (2, 1), 2),
    ((2, 3, 6, 5), (5, 3, 1, 1), 1, 0, 1, 1),
    ((2, 2, 7, 9), (3, 2, 3, 3), (1, 3), (0, 2), 2, 1),
]
LAYOUTS = ["contiguous", "transposed", "strided"]


def _pair(v: Any) -> tuple[int, int]:
    return v if isinstance(v, tuple) else (v, v)


def _check(got: CubeTensor | None, want: torch.Tensor, tol: float = 1e-4) -> None:
    """Shape, then dtype, then values."""
    assert got is not None
    assert got.shape == tuple(want.shape)
    assert got.dtype is DType.float32
    np.testing.assert_allclose(np.array(host_array(got)), want.detach().numpy(), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_cpu_conv_and_gradients_match_torch(case: tuple[Any, ...], bias: bool, layout: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Forward, gradients from the saved columns and `conv_backward` against torch, on the
    cpu runtime's row and plane kernels."""
    bk = _backend("cpu")
    launched = record_launches(monkeypatch, bk)
    xs, ws, stride, padding, dilation, groups = case
    o = ConvOptions(_pair(stride), _pair(padding), _pair(dilation), groups)
    rng = np.random.default_rng(len(xs) + ws[0])
    x = rng.uniform(-1, 1, xs).astype(np.float32)
    w = rng.uniform(-1, 1, ws).astype(np.float32)
    b = rng.uniform(-1, 1, ws[0]).astype(np.float32) if bias else None
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tb = None if b is None else torch.tensor(b, requires_grad=True)
    ty = tF.conv2d(tx, tw, tb, o.stride, o.padding, o.dilation, groups)
    g = rng.uniform(-1, 1, tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(g))
    px, pw = _up(bk, x, layout), _up(bk, w)
    pb = None if b is None else _up(bk, b)
    y, cols = bk.conv_saving_columns(px, pw, pb, o)
    _check(y, ty)
    assert cols is not None
    gx, gw, gb = bk.conv_backward_from_columns(cols, x.shape, DType.float32, pw, pb,
                                               _up(bk, g, layout), o, True)
    _check(gx, tx.grad)
    _check(gw, tw.grad)
    if tb is None:
        assert gb is None
    else:
        _check(gb, tb.grad)
    for got, want in zip(bk.conv_backward(px, pw, pb, _up(bk, g), o), (tx.grad, tw.grad, tb),
                         strict=True):
        if want is None:
            assert got is None
        else:
            _check(got, want if want is not tb else tb.grad)
    names = {kernel.kernel.name for kernel, _ in launched.values()}
    # one group and output rows shorter than BATCH_LAST_WIDTH: batch-last columns
    last = groups == 1 and ty.shape[-1] < BATCH_LAST_WIDTH
    assert ({"conv_im2col_batch_last", "conv_col2im_batch_last"} if last
            else {"conv_im2col_rows", "conv_col2im_planes"}) <= names
    assert not {"conv_im2col", "conv_col2im"} & names


@pytest.mark.parametrize(("dtype", "bias", "groups", "width", "ones"), [
    (np.float32, True, 1, 6, True), (np.float32, False, 1, 6, False),
    (np.float32, True, 2, 6, False), (np.float16, True, 1, 6, True),
    (np.float32, True, 1, 18, True), (np.float16, True, 1, 18, False)])
def test_saved_columns_end_with_the_bias_row_of_ones(dtype: Any, bias: bool, groups: int,
                                                     width: int, ones: bool) -> None:
    """One group and a bias, with batch-last columns (output rows of 6) or a float32 input:
    the forward multiplies the bias in through a row of ones that the saved columns keep (the
    weight gradient's product then gives the bias gradient); otherwise the columns are x's
    windows alone."""
    bk = _backend("cpu")
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 4, 6, width)).astype(dtype)
    w = rng.uniform(-1, 1, (4, 4 // groups, 3, 3)).astype(dtype)
    b = rng.uniform(-1, 1, 4).astype(dtype) if bias else None
    o = ConvOptions((1, 1), (1, 1), (1, 1), groups)
    pb = None if b is None else bk.upload(b)
    y, cols = bk.conv_saving_columns(bk.upload(x), bk.upload(w), pb, o)
    assert cols is not None
    assert cols.shape == (2, 4 * 9 + int(ones), 6 * width)
    t = [None if a is None else torch.tensor(a.astype(np.float32), requires_grad=True)
         for a in (x, w, b)]
    ty = tF.conv2d(t[0], t[1], t[2], 1, 1, 1, groups)
    ty.backward(torch.ones_like(ty))
    tol = 1e-4 if dtype is np.float32 else 2e-2
    assert y.dtype.numpy == np.dtype(dtype)
    np.testing.assert_allclose(np.array(host_array(y)).astype(np.float32),
                               ty.detach().numpy(), rtol=tol, atol=tol)
    grads = bk.conv_backward_from_columns(cols, x.shape, y.dtype, bk.upload(w), pb,
                                          bk.upload(np.ones(y.shape, dtype)), o, True)
    for got, want in zip(grads, (t[0].grad, t[1].grad, None if t[2] is None else t[2].grad),
                         strict=True):
        if want is None:
            assert got is None
            continue
        assert got is not None and got.shape == tuple(want.shape)
        assert got.dtype.numpy == np.dtype(dtype)
        np.testing.assert_allclose(np.array(host_array(got)).astype(np.float32),
                                   want.numpy(), rtol=tol, atol=tol * 10)


def _torch_lenet() -> torch.nn.Sequential:
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(256, 10))


def test_lenet_gradients_match_torch() -> None:
    """A LeNet-style network on cpu+autodiff (weights copied from torch): loss and every
    parameter's gradient as torch's."""
    torch.manual_seed(0)
    reference = _torch_lenet()
    device = burn.Device("cpu+autodiff")
    model = nn.Sequential(
        nn.Conv2d(1, 6, 5, device=device), nn.Relu(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5, device=device), nn.Relu(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(256, 10, device=device))
    convs = [model[0], model[3]]
    linear = model[7]
    # (param, torch's, whether burn stores it transposed: Linear's weight is [in, out])
    copies = [(convs[0].weight, reference[0].weight, False),
              (convs[0].bias, reference[0].bias, False),
              (convs[1].weight, reference[3].weight, False),
              (convs[1].bias, reference[3].bias, False),
              (linear.weight, reference[7].weight, True), (linear.bias, reference[7].bias, False)]
    for param, ref, flip in copies:
        value = ref.detach().numpy()
        param.set_(burn.tensor(np.ascontiguousarray(value.T if flip else value), device=device))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    loss = bF.cross_entropy(model(burn.tensor(x, device=device)),
                            burn.tensor(y, device=device))
    grads = loss.backward()
    t_loss = tF.cross_entropy(reference(torch.tensor(x)), torch.tensor(y))
    t_loss.backward()
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-5)
    for param, ref, flip in copies:
        got = param.grad(grads)
        assert got is not None and ref.grad is not None
        want = ref.grad.numpy().T if flip else ref.grad.numpy()
        assert tuple(got.shape) == want.shape and got.dtype == burn.float32
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-4, atol=1e-5)


def test_im2col_and_col2im_kernels_weigh_their_units_by_the_elements_they_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cpu conv's column kernels give each unit a whole column row (every window, and on
    batch-last columns every sample), so they name those elements as `unit_work` and the
    batch-last ones take a cube per unit: the cpu runtime spreads them over its threads
    (LeNet's first conv's im2col 172 -> 118 us on 2 threads, its second's 123 -> 64 us).
    Values and gradients as torch's, for a batch-inner and a batch-last layout."""
    from burn_cube.runtime.cpu import CpuRuntime

    planned: dict[str, tuple[Any, ...]] = {}
    plan = CpuRuntime.plan

    def recording(self: Any, compiled: Any, kernel: Any, cube_count: Any, *args: Any) -> Any:
        planned[kernel.name] = (kernel.unit_work, cube_count, kernel.cube_dim)
        return plan(self, compiled, kernel, cube_count, *args)

    monkeypatch.setattr(CpuRuntime, "plan", recording)
    burn.Device("cpu").backend.plans.clear()  # (plans other tests made are not made again)
    rng = np.random.default_rng(5)
    device = burn.Device("cpu+autodiff")
    for xs, ws in (((5, 2, 29, 31), (3, 2, 5, 4)), ((6, 3, 11, 13), (4, 3, 5, 5))):
        xd, wd = (rng.standard_normal(s).astype(np.float32) for s in (xs, ws))
        x = burn.tensor(xd, device=device).require_grad()
        w = burn.tensor(wd, device=device).require_grad()
        out = bF.conv2d(x, w)
        tx, tw = torch.tensor(xd, requires_grad=True), torch.tensor(wd, requires_grad=True)
        t_out = tF.conv2d(tx, tw)
        assert tuple(out.shape) == tuple(t_out.shape) and out.dtype == burn.float32
        np.testing.assert_allclose(out.to_numpy(), t_out.detach().numpy(), rtol=1e-4, atol=1e-4)
        grads = (out * out).sum().backward()
        (t_out * t_out).sum().backward()
        for ours, theirs in ((x, tx), (w, tw)):
            got = ours.grad(grads)
            assert got is not None and theirs.grad is not None
            np.testing.assert_allclose(got.to_numpy(), theirs.grad.numpy(), rtol=1e-3,
                                       atol=1e-3)
    assert planned["conv_im2col_rows"][0] == "work"
    for name in ("conv_im2col_batch_last", "conv_col2im_batch_last"):
        work, cubes, dims = planned[name]
        assert work == "work" and dims == (1, 1, 1) and cubes[0] > 1, (name, planned[name])
