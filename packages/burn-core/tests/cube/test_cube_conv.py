"""Convolution kernels of the cube backends (conv, conv_transpose with backward, unfold4d)
against torch on cpu and wgpu (and cuda where there is one): strided, transposed and broadcast
inputs, every spatial rank, stride/padding/dilation/groups, empty batches, NaN/inf,
low-precision dtypes; each op must run on kernels (no host fallback) and its kernels must also
generate CUDA C."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
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
from burn.backend.options import ConvOptions, ConvTransposeOptions, DeformConvOptions, window_out
from burn.backends.cube import CubeTensor
from burn.backends.cube.backend import CudaBackend
from burn.backends.cube.tensor import host_array
from burn.dtype import DType
from burn.errors import ShapeError

ref = importlib.import_module("burn.backends.numpy.module.conv")

DEVICES = ["cpu", "wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
LAYOUTS = ["contiguous", "transposed", "strided", "broadcast"]
OPS = ("conv", "conv_backward", "conv_transpose", "conv_transpose_backward", "unfold4d",
       "deform_conv2d", "deform_conv2d_backward")
SPATIAL = {1: (9,), 2: (6, 7), 3: (4, 5, 4)}
KERNEL = {1: (3,), 2: (3, 2), 3: (2, 3, 2)}
#: (stride, padding, dilation, groups) per case, one entry per spatial dim where a tuple.
CONFIGS = [(1, 0, 1, 1), (2, 1, 1, 2), ((2, 1, 1), (1, 0, 2), (1, 2, 1), 1), (1, 2, 2, 2)]
#: (stride, padding, padding_out, dilation, groups) of the transposed convolutions.
T_CONFIGS = [(1, 0, 0, 1, 1), (2, 1, 1, 1, 2), ((2, 3, 2), (1, 0, 1), (1, 2, 0), (1, 2, 1), 1)]


def _dims(value: Any, nd: int) -> tuple[int, ...]:
    return tuple(value[:nd]) if isinstance(value, tuple) else (value,) * nd


def _options(cfg: tuple[Any, ...], nd: int) -> ConvOptions:
    stride, padding, dilation, groups = cfg
    return ConvOptions(_dims(stride, nd), _dims(padding, nd), _dims(dilation, nd), groups)


def _t_options(cfg: tuple[Any, ...], nd: int) -> ConvTransposeOptions:
    stride, padding, padding_out, dilation, groups = cfg
    return ConvTransposeOptions(_dims(stride, nd), _dims(padding, nd), _dims(padding_out, nd),
                                _dims(dilation, nd), groups)



def _host(t: CubeTensor) -> np.ndarray:
    return np.array(host_array(t))


def _check(got: CubeTensor | None, want: torch.Tensor | None, dtype: np.dtype,
           tol: float = 1e-4) -> None:
    """Shape, then dtype, then values (NaN where torch has NaN)."""
    if want is None:
        assert got is None
        return
    assert got is not None
    assert got.shape == tuple(want.shape)
    assert got.dtype.numpy == dtype
    np.testing.assert_allclose(_host(got), want.detach().numpy(), rtol=tol, atol=tol)


@pytest.fixture
def no_fallback(request: pytest.FixtureRequest) -> Iterator[Callable[[Any, str], None]]:
    """`watch(backend, op)`: the op must not run on the host fallback during the test."""
    watched: list[tuple[Any, str, int]] = []
    yield lambda bk, op: watched.append((bk, op, bk.fallbacks[op]))
    for bk, op, before in watched:
        assert bk.fallbacks[op] == before, f"{op} ran on the host fallback"


def _rand(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-1, 1, shape).astype(np.float32)


def _conv_case(rng: np.random.Generator, nd: int, groups: int, transpose: bool = False,
               batch: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cin, cout = 4, 6
    x = _rand(rng, (batch, cin, *SPATIAL[nd]))
    wshape = (cin, cout // groups) if transpose else (cout, cin // groups)
    return x, _rand(rng, (*wshape, *KERNEL[nd])), _rand(rng, (cout,))


def _torch_conv(nd: int, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None,
                o: ConvOptions) -> torch.Tensor:
    fn = getattr(tF, f"conv{nd}d")
    return fn(x, w, b, o.stride, o.padding, o.dilation, o.groups)


def _torch_conv_t(nd: int, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None,
                  o: ConvTransposeOptions) -> torch.Tensor:
    fn = getattr(tF, f"conv_transpose{nd}d")
    return fn(x, w, b, o.stride, o.padding, o.padding_out, o.groups, o.dilation)


def _torch_grads(fn: Callable[..., torch.Tensor], arrays: list[np.ndarray | None],
                 grad: np.ndarray) -> list[torch.Tensor | None]:
    leaves = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    fn(*leaves).backward(torch.tensor(grad))
    return [None if t is None else t.grad for t in leaves]


# --------------------------------------------------------------------------------- conv
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("ci", range(len(CONFIGS)))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_conv_matches_torch(device: str, nd: int, ci: int, layout: str,
                            no_fallback: Any) -> None:
    bk, o = _backend(device), _options(CONFIGS[ci], nd)
    no_fallback(bk, "conv")
    rng = np.random.default_rng(nd * 10 + ci)
    x, w, b = _conv_case(rng, nd, o.groups)
    xt = _up(bk, x, layout)
    x = _host(xt)  # broadcast rewrote the batch
    for bias in (b, None):
        got = bk.conv(xt, _up(bk, w, "transposed"), None if bias is None else _up(bk, bias), o)
        want = _torch_conv(nd, torch.tensor(x), torch.tensor(w),
                           None if bias is None else torch.tensor(bias), o)
        _check(got, want, np.dtype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("ci", range(len(CONFIGS)))
def test_conv_backward_matches_torch(device: str, nd: int, ci: int, no_fallback: Any) -> None:
    bk, o = _backend(device), _options(CONFIGS[ci], nd)
    no_fallback(bk, "conv_backward")
    rng = np.random.default_rng(nd * 10 + ci)
    x, w, b = _conv_case(rng, nd, o.groups)
    for bias in (b, None):
        out = _torch_conv(nd, torch.tensor(x), torch.tensor(w), None, o)
        grad = _rand(rng, tuple(out.shape))
        wants = _torch_grads(lambda x_, w_, b_: _torch_conv(nd, x_, w_, b_, o), [x, w, bias],
                             grad)
        gots = bk.conv_backward(_up(bk, x, "transposed"), _up(bk, w),
                                None if bias is None else _up(bk, bias),
                                _up(bk, grad, "strided"), o)
        for got, expected in zip(gots, wants, strict=True):
            _check(got, expected, np.dtype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("ci", [0, 1])
def test_backward_from_the_saved_columns_matches_torch(device: str, nd: int, ci: int,
                                                       no_fallback: Any) -> None:
    """`conv_saving_columns` gives conv's output and its columns; `conv_backward_from_columns`
    gives torch's gradients from them (the input's only when asked), with and without bias,
    from a strided and from a stride-0 (expanded) output gradient."""
    bk, o = _backend(device), _options(CONFIGS[ci], nd)
    no_fallback(bk, "conv")
    rng = np.random.default_rng(nd * 10 + ci + 5)
    x, w, b = _conv_case(rng, nd, o.groups)
    for bias, need_x in ((b, True), (None, False), (b, False)):
        pb = None if bias is None else _up(bk, bias)
        y, cols = bk.conv_saving_columns(_up(bk, x, "transposed"), _up(bk, w), pb, o)
        fn = lambda x_, w_, b_: _torch_conv(nd, x_, w_, b_, o)  # noqa: E731
        _check(y, fn(torch.tensor(x), torch.tensor(w), None if bias is None else
                     torch.tensor(bias)), np.dtype(np.float32))
        assert cols is not None
        grads = {"strided": _rand(rng, y.shape), "broadcast": np.full(y.shape, 0.5, np.float32)}
        for layout, grad in grads.items():
            wants = _torch_grads(fn, [x, w, bias], grad)
            gots = bk.conv_backward_from_columns(cols, x.shape, DType.float32, _up(bk, w), pb,
                                                 _up(bk, grad, layout), o, need_x)
            for got, expected in zip(gots, [wants[0] if need_x else None, *wants[1:]],
                                     strict=True):
                _check(got, expected, np.dtype(np.float32))
    with pytest.raises(ShapeError, match="conv_backward"):
        bk.conv_backward_from_columns(cols, (3, *x.shape[1:]), DType.float32, _up(bk, w), None,
                                      _up(bk, grads["strided"]), o, True)


@pytest.mark.parametrize("device", DEVICES)
def test_autodiff_weight_grad_reuses_the_forward_columns(device: str,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A conv step whose input needs no gradient unfolds x once (forward), as torch's result."""
    from burn.backends.cube.module.conv import CubeConvOps

    calls: list[int] = []
    real = CubeConvOps._conv_columns

    def counted(self: Any, *args: Any) -> Any:
        calls.append(1)
        return real(self, *args)

    monkeypatch.setattr(CubeConvOps, "_conv_columns", counted)
    rng = np.random.default_rng(9)
    x, w = _rand(rng, (3, 2, 7, 6)), _rand(rng, (5, 2, 3, 3))
    grad_device = burn.Device(f"{device}+autodiff")
    leaf = burn.tensor(w, device=grad_device).require_grad()
    grads = bF.conv2d(burn.tensor(x, device=grad_device), leaf, padding=1).sum().backward()
    t_leaf = torch.tensor(w, requires_grad=True)
    tF.conv2d(torch.tensor(x), t_leaf, padding=1).sum().backward()
    got = leaf.grad(grads)
    assert got is not None and t_leaf.grad is not None
    assert tuple(got.shape) == tuple(t_leaf.grad.shape) and got.dtype == burn.float32
    np.testing.assert_allclose(got.to_numpy(), t_leaf.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert len(calls) == 1


# ----------------------------------------------------------------------- conv_transpose
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("ci", range(len(T_CONFIGS)))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "broadcast"])
def test_conv_transpose_matches_torch(device: str, nd: int, ci: int, layout: str,
                                      no_fallback: Any) -> None:
    bk, o = _backend(device), _t_options(T_CONFIGS[ci], nd)
    no_fallback(bk, "conv_transpose")
    rng = np.random.default_rng(nd * 10 + ci)
    x, w, b = _conv_case(rng, nd, o.groups, transpose=True)
    xt = _up(bk, x, layout)
    x = _host(xt)
    for bias in (b, None):
        got = bk.conv_transpose(xt, _up(bk, w, "strided"),
                                None if bias is None else _up(bk, bias, "strided"), o)
        want = _torch_conv_t(nd, torch.tensor(x), torch.tensor(w),
                             None if bias is None else torch.tensor(bias), o)
        _check(got, want, np.dtype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("ci", range(len(T_CONFIGS)))
def test_conv_transpose_backward_matches_torch(device: str, nd: int, ci: int,
                                               no_fallback: Any) -> None:
    bk, o = _backend(device), _t_options(T_CONFIGS[ci], nd)
    no_fallback(bk, "conv_transpose_backward")
    rng = np.random.default_rng(nd * 10 + ci)
    x, w, b = _conv_case(rng, nd, o.groups, transpose=True)
    for bias in (b, None):
        out = _torch_conv_t(nd, torch.tensor(x), torch.tensor(w), None, o)
        grad = _rand(rng, tuple(out.shape))
        wants = _torch_grads(lambda x_, w_, b_: _torch_conv_t(nd, x_, w_, b_, o),
                             [x, w, bias], grad)
        gots = bk.conv_transpose_backward(_up(bk, x, "strided"), _up(bk, w, "transposed"),
                                          None if bias is None else _up(bk, bias),
                                          _up(bk, grad, "transposed"), o)
        for got, expected in zip(gots, wants, strict=True):
            _check(got, expected, np.dtype(np.float32))


# ----------------------------------------------------------------------------- unfold4d
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ci", range(3))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_unfold4d_matches_torch(device: str, ci: int, layout: str, no_fallback: Any) -> None:
    bk, o = _backend(device), _options(CONFIGS[ci], 2)
    no_fallback(bk, "unfold4d")
    x = _rand(np.random.default_rng(ci), (2, 3, 6, 7))
    xt = _up(bk, x, layout)
    want = tF.unfold(torch.tensor(_host(xt)), (3, 2), o.dilation, o.padding, o.stride)
    _check(bk.unfold4d(xt, (3, 2), o), want, np.dtype(np.float32), 0)


# ------------------------------------------------------------------------ deform_conv2d
#: (stride, padding, dilation, weight_groups, offset_groups, mask, bias).
DEFORM_CONFIGS = [((1, 1), (1, 1), (1, 1), 1, 1, False, True),
                  ((2, 1), (1, 2), (1, 2), 1, 2, True, False),
                  ((1, 2), (0, 1), (2, 1), 2, 2, True, True)]


def _deform_case(rng: np.random.Generator, ci: int, batch: int = 2, dtype: Any = np.float32
                 ) -> tuple[list[np.ndarray | None], DeformConvOptions]:
    stride, padding, dilation, wg, og, mask, bias = DEFORM_CONFIGS[ci]
    o = DeformConvOptions(stride, padding, dilation, wg, og)
    n, c, h, w, cout = batch, 4, 5, 6, 4
    ho, wo = window_out((h, w), (3, 3), stride, padding, dilation)
    x = rng.uniform(-1, 1, (n, c, h, w))
    offset = rng.uniform(-2.5, 2.5, (n, 2 * og * 9, ho, wo))  # some points fall outside
    weight = rng.uniform(-1, 1, (cout, c // wg, 3, 3))
    m = rng.uniform(0, 1, (n, og * 9, ho, wo)) if mask else None
    b = rng.uniform(-1, 1, (cout,)) if bias else None
    return [None if a is None else a.astype(dtype) for a in (x, offset, weight, m, b)], o


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ci", range(len(DEFORM_CONFIGS)))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_deform_conv2d_and_backward_match_the_numpy_backend(device: str, ci: int, layout: str,
                                                            no_fallback: Any) -> None:
    """torchvision's semantics as the NumPy backend has them (tested there against torch)."""
    bk = _backend(device)
    no_fallback(bk, "deform_conv2d")
    no_fallback(bk, "deform_conv2d_backward")
    rng = np.random.default_rng(ci)
    arrays, o = _deform_case(rng, ci)
    x, offset, weight, mask, bias = arrays
    assert x is not None and offset is not None and weight is not None
    ts = [None if a is None else _up(bk, a, layout) for a in arrays]
    y = ref.deform_conv2d(x, offset, weight, mask, bias, o)
    got = bk.deform_conv2d(*ts, o)
    assert got.shape == y.shape and got.dtype == burn.float32
    np.testing.assert_allclose(_host(got), y, rtol=1e-4, atol=1e-4)
    grad = _rand(rng, y.shape)
    wants = ref.deform_conv2d_backward(x, offset, weight, mask, bias, grad, o)
    gots = bk.deform_conv2d_backward(*ts, _up(bk, grad, layout), o)
    for g, want in zip(gots, wants, strict=True):
        if want is None:
            assert g is None
            continue
        assert g is not None and g.shape == want.shape and g.dtype == burn.float32
        np.testing.assert_allclose(_host(g), want, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ dtypes, edges, errors
def _dtypes(device: str) -> list[str]:
    return ["float16", "float64", "bfloat16"] if device == "cpu" else ["float16"]


@pytest.mark.parametrize("device", DEVICES)
def test_low_precision_and_float64_match_the_numpy_backend(device: str,
                                                             no_fallback: Any) -> None:
    """float16/bfloat16 compute in float32 and round once, float64 stays float64: results of
    the NumPy backend's dtype, within a rounding of it."""
    bk = _backend(device)
    for op in OPS:
        no_fallback(bk, op)
    rng = np.random.default_rng(3)
    o, to = _options(CONFIGS[1], 2), _t_options(T_CONFIGS[1], 2)
    for name in _dtypes(device):
        dtype = burn.DType(name).numpy
        tol = 1e-12 if name == "float64" else 2e-2
        x, w, b = (a.astype(dtype) for a in _conv_case(rng, 2, o.groups))
        y = ref.conv(x, w, b, o)
        grad = _rand(rng, y.shape).astype(dtype)
        xt, wt, bt = (_up(bk, a, "transposed") for a in (x, w, b))
        pairs = [(bk.conv(xt, wt, bt, o), y),
                 (bk.unfold4d(xt, (3, 2), o), ref.unfold4d(x, (3, 2), o)),
                 *zip(bk.conv_backward(xt, wt, bt, _up(bk, grad), o),
                      ref.conv_backward(x, w, b, grad, o), strict=True)]
        tx, tw, tb = (a.astype(dtype) for a in _conv_case(rng, 2, to.groups, transpose=True))
        y = ref.conv_transpose(tx, tw, tb, to)
        grad = _rand(rng, y.shape).astype(dtype)
        tt = [_up(bk, a) for a in (tx, tw, tb)]
        pairs += [(bk.conv_transpose(*tt, to), y),
                  *zip(bk.conv_transpose_backward(*tt, _up(bk, grad), to),
                       ref.conv_transpose_backward(tx, tw, tb, grad, to), strict=True)]
        deform, do = _deform_case(rng, 2, dtype=dtype)
        dt = [None if a is None else _up(bk, a) for a in deform]
        y = ref.deform_conv2d(*deform, do)
        grad = _rand(rng, y.shape).astype(dtype)
        pairs += [(bk.deform_conv2d(*dt, do), y),
                  *zip(bk.deform_conv2d_backward(*dt, _up(bk, grad), do),
                       ref.deform_conv2d_backward(*deform, grad, do), strict=True)]
        for got, want in pairs:
            assert got.shape == want.shape and got.dtype.numpy == want.dtype, name
            np.testing.assert_allclose(_host(got).astype(np.float64), want.astype(np.float64),
                                       rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_batch_gives_empty_outputs_and_zero_weight_grads(device: str,
                                                               no_fallback: Any) -> None:
    bk = _backend(device)
    for op in OPS:
        no_fallback(bk, op)
    rng = np.random.default_rng(4)
    o, to = _options(CONFIGS[1], 2), _t_options(T_CONFIGS[1], 2)
    x, w, b = _conv_case(rng, 2, o.groups, batch=0)
    y = bk.conv(_up(bk, x), _up(bk, w), _up(bk, b), o)
    assert y.shape == (0, 6, 3, 4) and y.dtype == burn.float32
    assert bk.unfold4d(_up(bk, x), (3, 2), o).shape == (0, 24, 12)
    grads = bk.conv_backward(_up(bk, x), _up(bk, w), _up(bk, b), _up(bk, _host(y)), o)
    assert [g.shape for g in grads] == [x.shape, w.shape, b.shape]
    assert not _host(grads[1]).any() and not _host(grads[2]).any()
    deform, do = _deform_case(rng, 2, batch=0)
    dt = [None if a is None else _up(bk, a) for a in deform]
    y = bk.deform_conv2d(*dt, do)
    assert y.shape == (0, 4, *window_out((5, 6), (3, 3), do.stride, do.padding, do.dilation))
    grads = bk.deform_conv2d_backward(*dt, _up(bk, _host(y)), do)
    assert [g.shape for g in grads if g is not None] == [a.shape for a in deform
                                                         if a is not None]
    assert not _host(grads[2]).any() and not _host(grads[4]).any()
    x, w, b = _conv_case(rng, 2, to.groups, transpose=True, batch=0)
    y = bk.conv_transpose(_up(bk, x), _up(bk, w), _up(bk, b), to)
    assert y.shape == (0, 6, 12, 13)
    grads = bk.conv_transpose_backward(_up(bk, x), _up(bk, w), _up(bk, b), _up(bk, _host(y)),
                                       to)
    assert [g.shape for g in grads] == [x.shape, w.shape, b.shape]
    assert not _host(grads[1]).any() and not _host(grads[2]).any()


@pytest.mark.parametrize("device", DEVICES)
def test_nan_and_inf_propagate_as_in_torch(device: str, no_fallback: Any) -> None:
    bk, o = _backend(device), _options(CONFIGS[1], 2)
    no_fallback(bk, "conv")
    no_fallback(bk, "conv_backward")
    x, w, b = _conv_case(np.random.default_rng(5), 2, o.groups)
    x[0, 0, 0, 0], x[1, 2, 3, 3], x[1, 3, 5, 6] = np.nan, np.inf, -np.inf
    want = _torch_conv(2, torch.tensor(x), torch.tensor(w), torch.tensor(b), o)
    _check(bk.conv(_up(bk, x), _up(bk, w), _up(bk, b), o), want, np.dtype(np.float32))
    grad = np.ones(tuple(want.shape), np.float32)
    wants = _torch_grads(lambda x_, w_, b_: _torch_conv(2, x_, w_, b_, o), [x, w, b], grad)
    gots = bk.conv_backward(_up(bk, x), _up(bk, w), _up(bk, b), _up(bk, grad), o)
    for got, expected in zip(gots, wants, strict=True):
        _check(got, expected, np.dtype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_public_api_and_autodiff_run_on_the_kernels(device: str, no_fallback: Any) -> None:
    """burn.functional.conv2d / conv_transpose1d / unfold4d forward on the device and backward
    through `<device>+autodiff`, against torch."""
    bk = _backend(device)
    for op in OPS:
        no_fallback(bk, op)
    rng = np.random.default_rng(6)
    x, w, b = _rand(rng, (2, 6, 5, 8)), _rand(rng, (4, 3, 3, 3)), _rand(rng, (4,))
    xs = burn.tensor(x.transpose(0, 1, 3, 2).copy(), device=device).swap_dims(2, 3)
    got = bF.conv2d(xs, burn.tensor(w, device=device), burn.tensor(b, device=device),
                    stride=(1, 2), padding="valid", groups=2)
    want = tF.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), (1, 2), 0, 1, 2)
    np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
    patches = bF.unfold4d(xs, 2, stride=2)
    np.testing.assert_array_equal(patches.to_numpy(), tF.unfold(torch.tensor(x), 2, stride=2))
    grad_device, w1 = burn.Device(f"{device}+autodiff"), _rand(rng, (6, 2, 3))
    cases: list[tuple[str, dict[str, int], tuple[np.ndarray, ...]]] = [
        ("conv2d", {"padding": 1, "groups": 2}, (x, w, b)),
        ("conv_transpose1d", {"stride": 2}, (x[:, :, 0], w1, b[:2]))]
    for name, kwargs, arrays in cases:
        leaves = [burn.tensor(a, device=grad_device).require_grad() for a in arrays]
        grads = getattr(bF, name)(*leaves, **kwargs).sum().backward()
        t_leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
        getattr(tF, name)(*t_leaves, **kwargs).sum().backward()
        for leaf, t_leaf in zip(leaves, t_leaves, strict=True):
            grad, t_grad = leaf.grad(grads), t_leaf.grad
            assert grad is not None and t_grad is not None
            np.testing.assert_allclose(grad.to_numpy(), t_grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_bad_shapes_raise_shape_errors_naming_the_op(device: str) -> None:
    bk, o = _backend(device), _options(CONFIGS[0], 2)
    rng = np.random.default_rng(7)
    x, w = _up(bk, _rand(rng, (1, 4, 5, 5))), _up(bk, _rand(rng, (6, 3, 3, 3)))
    with pytest.raises(ShapeError, match="conv"):
        bk.conv(x, w, None, o)
    w = _up(bk, _rand(rng, (6, 4, 3, 3)))
    with pytest.raises(ShapeError, match="conv_backward"):
        bk.conv_backward(x, w, None, _up(bk, _rand(rng, (1, 6, 2, 2))), o)
    with pytest.raises(ShapeError, match="kernel larger"):
        bk.conv(x, _up(bk, _rand(rng, (6, 4, 7, 7))), None, o)
    with pytest.raises(ShapeError, match="unfold4d"):
        bk.unfold4d(_up(bk, _rand(rng, (4, 5, 5))), (3, 3), o)


@pytest.mark.parametrize("path", ["cpu", "gpu"])
def test_kernels_generate_cuda_source(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Every kernel launched by the five ops (each dtype path; the cpu runtime's own kernels,
    and the GPU runtimes' ones launched here on the cpu runtime) also compiles to CUDA C."""
    bk = _backend("cpu")
    if path == "gpu":
        monkeypatch.setattr(bk, "runtime_name", "wgpu", raising=False)
    launched = record_launches(monkeypatch, bk)
    rng = np.random.default_rng(8)
    for nd in (1, 2, 3):
        for dtype in (np.float32, np.float16):
            o, to = _options(CONFIGS[1], nd), _t_options(T_CONFIGS[1], nd)
            x, w, b = (_up(bk, a.astype(dtype)) for a in _conv_case(rng, nd, o.groups))
            y = bk.conv(x, w, b, o)
            bk.conv_backward(x, w, b, y, o)
            tx, tw, tb = (_up(bk, a.astype(dtype))
                          for a in _conv_case(rng, nd, to.groups, transpose=True))
            y = bk.conv_transpose(tx, tw, tb, to)
            bk.conv_transpose_backward(tx, tw, tb, y, to)
    bk.unfold4d(_up(bk, _rand(rng, (1, 2, 5, 5))), (3, 2), _options(CONFIGS[1], 2))
    for ci in range(len(DEFORM_CONFIGS)):
        deform, do = _deform_case(rng, ci)
        dt = [None if a is None else _up(bk, a) for a in deform]
        bk.deform_conv2d_backward(*dt, bk.deform_conv2d(*dt, do), do)
    names = set()
    for kernel, args in launched.values():
        assert "__global__" in kernel.source("cuda", 256, *args)
        names.add(kernel.kernel.name)
    own = {"cpu": {"conv_im2col_rows", "conv_col2im_planes"},
           "gpu": {"conv_im2col", "conv_col2im"}}[path]
    assert {"conv_convert", "deform_im2col", "deform_point_grads", "deform_input_grad",
            *own} <= names
