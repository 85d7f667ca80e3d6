"""Edge inputs of a second sweep, against torch: fully masked attention rows, huge grid
points, allocation failures, non-contiguous views, empty tensors, saturated integers and bad
input raising typed errors. Each case here was a difference from torch on some backend once."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
import burn.functional as F

from .reference import T, assert_same, assert_same_tree, check_backward, check_forward, held
from .test_edge_sweep import assert_signs


def _attention_ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor,
                   is_causal: bool) -> torch.Tensor:
    """torch's SDPA with burn's mask (true = masked out), the causal mask or-ed into it (torch
    refuses an explicit mask with is_causal)."""
    if is_causal:
        lq, lk = q.shape[-2], k.shape[-2]
        mask = mask | torch.ones(lq, lk, dtype=torch.bool).triu(1)
    return TF.scaled_dot_product_attention(q, k, v, attn_mask=~mask)


@pytest.mark.op("attention")
@pytest.mark.parametrize(("mask_shape", "is_causal"), [((3, 5), False), ((2, 1, 1, 5), False),
                                                       ((3, 5), True), ((2, 2, 3, 5), True)],
                         ids=["rows", "key-padding", "rows-causal", "full-causal"])
def test_attention_of_fully_masked_queries_is_zero(mask_shape: tuple[int, ...], is_causal: bool,
                                                   device: burn.Device,
                                                   grad_device: burn.Device,
                                                   rng: np.random.Generator) -> None:
    """A query whose every key is masked (by the mask, or by the mask and the causal mask
    together) gives 0 with zero gradients, as torch's SDPA (softmax of its row of -inf gave
    NaN on every backend, and NaN gradients to every input through the matmuls)."""
    mask = rng.random(mask_shape) < 0.3
    if mask_shape[-2] == 1:
        mask[1] = True  # batch 1 sees no key
    else:
        mask[..., 1, :] = True  # query 1 sees no key
    if is_causal:
        mask[..., 0, 0] = True  # the causal mask leaves key 0 to query 0 alone
    dtype = held("float64", device)
    args = [T(rng.standard_normal((2, 2, 3, 4)), dtype, "transposed"),
            T(rng.standard_normal((2, 2, 5, 4)), dtype),
            T(rng.standard_normal((2, 2, 5, 3)), dtype, "strided"), T(mask, "bool", grad=False)]

    def burn_fn(q: Any, k: Any, v: Any, m: Any) -> Any:
        return F.attention(q, k, v, mask=m, is_causal=is_causal)

    def torch_fn(q: Any, k: Any, v: Any, m: Any) -> Any:
        return _attention_ref(q, k, v, m, is_causal)

    check_forward(burn_fn, torch_fn, args, device)
    check_backward(burn_fn, torch_fn, args, grad_device, rng)


#: Grid coordinates far outside [-1, 1]: huge (the reflection's quotient rounds), large where
#: the float32 spacing passes the image's span, and moderate.
FAR_POINTS = [1e30, -1e30, 3e38, 1e20, 1e10, -7.7e8, 2.9e9, 12345.678, 1e7 + 0.3, 5.0, -3.3]


@pytest.mark.op("grid_sample_2d")
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid_sample_reflection_of_far_points(mode: str, align: bool, dtype: str,
                                              device: burn.Device, grad_device: burn.Device,
                                              rng: np.random.Generator) -> None:
    """Reflection padding of far grid points lands where torch's does: whole double spans come
    off by the truncated quotient in the grid's dtype (the exact fmod of 1e30 gave 4.5 on the
    NumPy backend and 8.75 on the cpu where torch gives 4.0 and 2.75); forward and gradient."""
    dtype = held(dtype, device)
    x = T(np.arange(1.0, 13.0).reshape(1, 1, 3, 4), dtype, "transposed")
    points = np.array([[[[v, 0.5] for v in FAR_POINTS] + [[0.25, v] for v in FAR_POINTS]]])

    def burn_fn(a: Any, g: Any) -> Any:
        return F.grid_sample_2d(a, g, mode=mode, padding_mode="reflection", align_corners=align)

    def torch_fn(a: Any, g: Any) -> Any:
        return TF.grid_sample(a, g, mode=mode, padding_mode="reflection", align_corners=align)

    check_forward(burn_fn, torch_fn, [x, T(points, dtype)], device)
    # torch's float32 backward crashes where the pixel coordinate overflows (3e38)
    finite = points[np.abs(points).max(axis=-1) < 1e38].reshape(1, 1, -1, 2)
    check_backward(burn_fn, torch_fn, [x, T(finite, dtype)], grad_device, rng)


#: Results of 1 TiB and more from inputs of a few MB (numpy and the runtimes refuse them at
#: once: nothing is touched).
HUGE_RESULTS = {
    "matmul": lambda d: burn.ones((1 << 20, 1), device=d) @ burn.ones((1, 1 << 20), device=d),
    "add": lambda d: burn.ones((1 << 20, 1), device=d) + burn.ones((1, 1 << 20), device=d),
    "mul_scalar": lambda d: burn.ones((1 << 20, 1), device=d).expand((1 << 20, 1 << 20)) * 2,
    "repeat_dim": lambda d: burn.ones((1 << 20,), device=d).repeat_dim(0, 1 << 20),
    "cat": lambda d: burn.cat([burn.ones((1, 1 << 20), device=d).expand((1 << 19, 1 << 20))] * 2),
    # rows of a broadcast view: the result is refused before the rows are reduced (the NumPy
    # backend's softmax reduced the max of 2**40 elements first, for minutes)
    "softmax": lambda d: F.softmax(_broadcast_rows(d), 1),
    "log_softmax": lambda d: F.log_softmax(_broadcast_rows(d), 1),
    "sort": lambda d: _broadcast_rows(d).sort(1),  # (not the op-table's sort_with_indices)
    "cumsum": lambda d: _broadcast_rows(d).cumsum(1),
}


def _broadcast_rows(device: burn.Device) -> burn.Tensor:
    """2**20 rows of 2**20 ones: a 4 TiB float32 broadcast view of one 4 MiB row."""
    return burn.ones((1, 1 << 20), device=device).expand((1 << 20, 1 << 20))


@pytest.mark.op("matmul")
@pytest.mark.parametrize("op", list(HUGE_RESULTS))
def test_results_larger_than_memory_raise_allocation_error(op: str,
                                                           device: burn.Device) -> None:
    """A result that does not fit raises AllocationError (a MemoryError) naming the op, shape
    and dtype on every backend (the NumPy backend raised numpy's MemoryError, as did the cpu's
    BLAS matmul), and the device works on afterwards."""
    # the op the user called (its backend method under fusion, checked when recorded)
    with pytest.raises(burn.errors.AllocationError,
                       match=rf"^(float_)?{op}: .*\(shape=\(\d+, \d+\), dtype=(float32|int64)"):
        HUGE_RESULTS[op](device).to_numpy()
    got = (burn.arange(0, 3, device=device) * 2).to_numpy()
    np.testing.assert_array_equal(got, [0, 2, 4])


@pytest.mark.parametrize("op,burn_fn,torch_fn", [
    pytest.param("log_sigmoid", F.log_sigmoid, TF.logsigmoid, marks=pytest.mark.op("log_sigmoid"),
                 id="log_sigmoid"),
    pytest.param("softplus", F.softplus, TF.softplus, marks=pytest.mark.op("softplus"),
                 id="softplus"),
    pytest.param("softplus", lambda x: F.softplus(x, 2.0, 10.0),
                 lambda x: TF.softplus(x, 2.0, 10.0), marks=pytest.mark.op("softplus"),
                 id="softplus-beta2"),
])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_softplus_family_in_float32(op: str, burn_fn: Any, torch_fn: Any,
                                                  dtype: str, device: burn.Device) -> None:
    """float16 / bfloat16 softplus and log_sigmoid compute in float32 and round once, as
    torch: the NumPy backend's float16 softplus was inf for x in [11.1, 20] (exp overflowed
    below the threshold), log_sigmoid -inf for x in [-20, -11], and its zero results had the
    wrong signs (+0.0 past 104, -0.0 where torch's float32 -tiny rounds to it)."""
    x = np.concatenate([np.linspace(-30.0, 30.0, 121), [0.0, -0.0, 65504.0, -65504.0, np.inf,
                                                         -np.inf, np.nan, 1e-5, 102.0, 110.0]])
    if device.name == "wgpu":  # llvmpipe flushes float32 subnormals: exp(-x) past 87 is 0
        x = x[~((np.abs(x) > 87) & (np.abs(x) < 104))]
    out = check_forward(burn_fn, torch_fn, [T(x, dtype, "strided")], device)
    want = torch_fn(torch.from_numpy(x).to(getattr(torch, dtype)))
    got = np.asarray(out.cast(burn.float32).to_numpy(), dtype=np.float64)
    zeros = (got == 0) & (want.to(torch.float64).numpy() == 0)
    np.testing.assert_array_equal(np.signbit(got[zeros]),
                                  np.signbit(want.to(torch.float64).numpy()[zeros]))



def _host_ones(dtype: str) -> np.ndarray:
    return np.ones(2, np.dtype(burn.DType(dtype).numpy))


#: Ways to make a tensor of a dtype on a device, by the op its error names.
MAKERS: dict[str, Any] = {
    "tensor": lambda dt, d: burn.tensor([1.0, 2.0], dtype=dt, device=d),
    "from_numpy": lambda dt, d: burn.from_numpy(_host_ones(dt), device=d),
    "from_dlpack": lambda dt, d: burn.from_dlpack(_host_ones(dt), device=d),
    "zeros": lambda dt, d: burn.zeros((2,), dtype=dt, device=d),
    "full": lambda dt, d: burn.full((2,), 3, dtype=dt, device=d),
    "full_like": lambda dt, d: burn.full_like(burn.ones((2,), device=d), 1, dtype=dt),
    "arange": lambda dt, d: burn.arange(0, 2, dtype=dt, device=d),
    "eye": lambda dt, d: burn.eye(2, dtype=dt, device=d),
    "cast": lambda dt, d: burn.ones((2,), device=d).cast(dt),
    "to_device": lambda dt, d: burn.ones((2,), dtype=dt, device="numpy").to_device(d),
}


@pytest.mark.op("cast")
@pytest.mark.parametrize("make", list(MAKERS))
@pytest.mark.parametrize("dtype", ["float64", "bfloat16", "int8", "uint8"])
def test_dtypes_a_device_cannot_hold(make: str, dtype: str, device: burn.Device) -> None:
    """Creating, importing, casting or moving to a dtype the device cannot hold (float64 and
    bfloat16 on wgpu, 8-bit ints there too) raises UnsupportedDTypeError naming the op, dtype
    and device (eye and from_dlpack named "tensor"); where it can, the tensor has that dtype."""
    if make == "from_dlpack" and dtype == "bfloat16":
        return  # numpy exports no bfloat16 through DLPack (test_edge_sweep's typed error)
    if device.backend.supports(burn.DType(dtype)):
        out = MAKERS[make](burn.DType(dtype), device)
        assert out.dtype == burn.DType(dtype) and out.device == device
        return
    with pytest.raises(burn.errors.UnsupportedDTypeError,
                       match=rf"^{make}: .*dtype={dtype}, device={device.name}"):
        MAKERS[make](burn.DType(dtype), device)


# --------------------------------------------------------------------- non-contiguous views
@dataclass(frozen=True)
class View:
    """A non-contiguous view of logical `data`: the base array it is taken from, and how burn
    and torch take it (the burn view is the op's input, its gradient flows to the base)."""

    base: Callable[[np.ndarray], np.ndarray]
    burn_view: Callable[[Any], Any]
    torch_view: Callable[[torch.Tensor], torch.Tensor]


def _stepped_base(data: np.ndarray) -> np.ndarray:
    base = np.zeros((2 * data.shape[0] + 1, *data.shape[1:-1], 3 * data.shape[-1]), data.dtype)
    base[1::2, ..., 2::3] = data
    return base


VIEWS = {
    "flipped": View(lambda d: np.ascontiguousarray(np.flip(d, (0, -1))),
                    lambda b: b[::-1, ..., ::-1], lambda t: t.flip((0, -1))),
    "expanded": View(lambda d: np.ascontiguousarray(d[:1]),  # data repeats along dim 0
                     lambda b: b.expand((3, *b.shape[1:])), lambda t: t.expand(3, *t.shape[1:])),
    "stepped": View(_stepped_base, lambda b: b[1::2, ..., 2::3], lambda t: t[1::2, ..., 2::3]),
    "transposed": View(lambda d: np.ascontiguousarray(np.swapaxes(d, 0, -1)),
                       lambda b: b.swap_dims(0, b.ndim - 1), lambda t: t.transpose(0, -1)),
}

_I = np.array([[[4, 0, 2], [1, 1, 3], [0, 4, 4], [2, 3, 0]]] * 3)  # int64 [3, 4, 3] along -1


def _index(like: Any) -> Any:
    if isinstance(like, torch.Tensor):
        return torch.from_numpy(_I)
    return burn.tensor(_I, device=like.device)


#: name -> (burn fn, torch fn, rank of the input), each along dims where an expanded view's
#: repeated values make no ties.
VIEW_OPS: dict[str, tuple[Any, Any, int]] = {
    "sum_dim": (lambda x: x.sum(0), lambda x: x.sum(0), 3),
    "mean_dim": (lambda x: x.mean(-1), lambda x: x.mean(-1), 3),
    "prod_dim": (lambda x: x.prod(1), lambda x: x.prod(1), 3),
    "var": (lambda x: x.var(-1), lambda x: x.var(-1), 3),
    "max_dim": (lambda x: x.max(-1), lambda x: x.amax(-1), 3),
    "max_dim_with_indices": (lambda x: x.max_dim_with_indices(-1),
                             lambda x: tuple(x.max(-1, keepdim=True)), 3),
    "argmin": (lambda x: x.argmin(1), lambda x: x.argmin(1), 3),
    "logsumexp": (lambda x: x.logsumexp(-1), lambda x: x.logsumexp(-1), 3),
    "cumsum": (lambda x: x.cumsum(0), lambda x: x.cumsum(0), 3),
    "cumprod": (lambda x: x.cumprod(-1), lambda x: x.cumprod(-1), 3),
    "cummax": (lambda x: x.cummax(-1), lambda x: tuple(x.cummax(-1)), 3),
    "sort": (lambda x: x.sort(-1), lambda x: x.sort(-1).values, 3),
    "sort_with_indices": (lambda x: x.sort_with_indices(1), lambda x: tuple(x.sort(1)), 3),
    "topk": (lambda x: x.topk(2, -1), lambda x: x.topk(2, -1).values, 3),
    "softmax": (lambda x: F.softmax(x, -1), lambda x: torch.softmax(x, -1), 3),
    "log_softmax": (lambda x: F.log_softmax(x, 0), lambda x: torch.log_softmax(x, 0), 3),
    "matmul": (lambda x: x @ burn.tensor(np.linspace(-1, 1, 10).reshape(5, 2),
                                         dtype=x.dtype, device=x.device),
               lambda x: x @ torch.linspace(-1, 1, 10, dtype=x.dtype).reshape(5, 2), 3),
    "gather": (lambda x: x.gather(-1, _index(x)), lambda x: x.gather(-1, _index(x)), 3),
    "scatter": (lambda x: x.scatter(-1, _index(x), x[..., :3]),
                lambda x: x.scatter(-1, _index(x), x[..., :3]), 3),
    "conv2d": (lambda x: F.conv2d(x, burn.tensor(np.linspace(-1, 1, 48).reshape(2, 4, 2, 3),
                                                 dtype=x.dtype, device=x.device), padding=1),
               lambda x: TF.conv2d(x, torch.linspace(-1, 1, 48, dtype=x.dtype)
                                   .reshape(2, 4, 2, 3), padding=1), 4),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, 1), lambda x: TF.max_pool2d(x, 2, 1), 4),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1), lambda x: TF.avg_pool2d(x, 3, 2, 1), 4),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
                            lambda x: TF.adaptive_avg_pool2d(x, (2, 3)), 4),
    "interpolate": (lambda x: F.interpolate(x, (7, 3), "bilinear"),
                    lambda x: TF.interpolate(x, (7, 3), mode="bilinear"), 4),
    "interpolate-nearest": (lambda x: F.interpolate(x, (2, 9)),
                            lambda x: TF.interpolate(x, (2, 9)), 4),
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.op(name.split("-")[0])) for name in VIEW_OPS])
def test_ops_of_non_contiguous_views(name: str, view: str, device: burn.Device,
                                     grad_device: burn.Device,
                                     rng: np.random.Generator) -> None:
    """Reductions, scans, sorts, matmul, gather / scatter, convolution, pooling and
    interpolation read flipped (negative steps), expanded (zero strides), stepped (with an
    offset) and transposed views as torch does, forward and gradient (to the view's base)."""
    burn_fn, torch_fn, rank = VIEW_OPS[name]
    shape = (3, 4, 5) if rank == 3 else (3, 4, 5, 6)
    data = (rng.permutation(math.prod(shape)).reshape(shape) / 8 - 3).astype(np.float32)
    if view == "expanded":
        data = np.broadcast_to(data[:1], shape).copy()
    way = VIEWS[view]
    base = way.base(data)
    x = burn.tensor(base, device=device)
    assert_same_tree(burn_fn(way.burn_view(x)), torch_fn(way.torch_view(torch.from_numpy(base))))

    leaf_b = burn.tensor(base, device=grad_device).require_grad()
    leaf_t = torch.from_numpy(base.copy()).requires_grad_(True)
    out_b, out_t = burn_fn(way.burn_view(leaf_b)), torch_fn(way.torch_view(leaf_t))
    out_b, out_t = (out_b[0], out_t[0]) if isinstance(out_t, tuple) else (out_b, out_t)
    if not out_t.is_floating_point():
        return  # argmin: no gradient
    g = rng.standard_normal(tuple(out_t.shape)).astype(np.float32)
    (out_t * torch.from_numpy(g)).sum().backward()
    grads = (out_b * burn.tensor(g, device=grad_device)).sum().backward()
    assert_same(leaf_b.grad(grads), leaf_t.grad, phase="backward", what="grad of the base")


# ---------------------------------------------------------------------------- empty tensors
def _ints(like: Any, shape: tuple[int, ...]) -> Any:
    """Zeros of int64 as `like`'s kind of tensor (burn on its device, or torch)."""
    if isinstance(like, torch.Tensor):
        return torch.zeros(shape, dtype=torch.int64)
    return burn.zeros(shape, dtype=burn.int64, device=like.device)


#: name -> (op, input shapes, burn fn, torch fn): each has an empty input or result.
EMPTY_CASES: dict[str, tuple[str, list[tuple[int, ...]], Any, Any]] = {
    "matmul-K0": ("matmul", [(3, 0), (0, 4)], lambda a, b: a @ b, lambda a, b: a @ b),
    "matmul-M0": ("matmul", [(0, 3), (3, 4)], lambda a, b: a @ b, lambda a, b: a @ b),
    "matmul-batch0": ("matmul", [(0, 2, 3), (3, 4)], lambda a, b: a @ b, lambda a, b: a @ b),
    "matmul-K0-batched": ("matmul", [(2, 3, 0), (2, 0, 4)], lambda a, b: a @ b,
                          lambda a, b: a @ b),
    "cat-first-empty": ("cat", [(0, 3), (2, 3)], lambda a, b: burn.cat([a, b], 0),
                        lambda a, b: torch.cat([a, b], 0)),
    "cat-dim1-empty": ("cat", [(2, 0), (2, 3)], lambda a, b: burn.cat([a, b], 1),
                       lambda a, b: torch.cat([a, b], 1)),
    "cat-all-empty": ("cat", [(0, 3), (0, 3)], lambda a, b: burn.cat([a, b], 0),
                      lambda a, b: torch.cat([a, b], 0)),
    "stack": ("stack", [(0, 3), (0, 3)], lambda a, b: burn.stack([a, b], 1),
              lambda a, b: torch.stack([a, b], 1)),
    "softmax-rows0": ("softmax", [(0, 3)], lambda a: F.softmax(a, -1),
                      lambda a: torch.softmax(a, -1)),
    "softmax-dim0": ("softmax", [(3, 0)], lambda a: F.softmax(a, -1),
                     lambda a: torch.softmax(a, -1)),
    "log_softmax-dim0": ("log_softmax", [(3, 0)], lambda a: F.log_softmax(a, -1),
                         lambda a: torch.log_softmax(a, -1)),
    "sum": ("sum", [(0, 3)], lambda a: a.sum(), lambda a: a.sum()),
    "mean_dim": ("mean_dim", [(0, 3)], lambda a: a.mean(0), lambda a: a.mean(0)),
    "prod_dim": ("prod_dim", [(0, 3)], lambda a: a.prod(0), lambda a: a.prod(0)),
    "cumsum": ("cumsum", [(0, 3)], lambda a: a.cumsum(0), lambda a: a.cumsum(0)),
    "sort": ("sort", [(3, 0)], lambda a: a.sort(-1), lambda a: a.sort(-1).values),
    "conv2d-batch0": ("conv2d", [(0, 3, 5, 5), (4, 3, 3, 3)], F.conv2d, TF.conv2d),
    "conv2d-groups-batch0": ("conv2d", [(0, 4, 5, 5), (4, 2, 3, 3)],
                             lambda a, w: F.conv2d(a, w, groups=2),
                             lambda a, w: TF.conv2d(a, w, groups=2)),
    "conv1d-batch0": ("conv1d", [(0, 3, 5), (4, 3, 2)], lambda a, w: F.conv1d(a, w, padding=1),
                      lambda a, w: TF.conv1d(a, w, padding=1)),
    "conv3d-batch0": ("conv3d", [(0, 2, 3, 3, 3), (2, 2, 2, 2, 2)], F.conv3d, TF.conv3d),
    "conv_transpose2d-batch0": ("conv_transpose2d", [(0, 3, 5, 5), (3, 4, 3, 3)],
                                F.conv_transpose2d, TF.conv_transpose2d),
    "deform_conv2d-batch0": ("deform_conv2d", [(0, 2, 5, 5), (0, 18, 3, 3), (3, 2, 3, 3)],
                             F.deform_conv2d,  # zero offsets: conv2d
                             lambda a, o, w: TF.conv2d(a, w) + o[:, :3].sum() * 0),
    "max_pool2d-batch0": ("max_pool2d", [(0, 3, 4, 4)], lambda a: F.max_pool2d(a, 2),
                          lambda a: TF.max_pool2d(a, 2)),
    "max_pool2d-overlapping-batch0": ("max_pool2d", [(0, 3, 4, 4)],
                                      lambda a: F.max_pool2d(a, 3, 1, 1),
                                      lambda a: TF.max_pool2d(a, 3, 1, 1)),
    "max_pool1d-batch0": ("max_pool1d", [(0, 3, 4)], lambda a: F.max_pool1d(a, 2),
                          lambda a: TF.max_pool1d(a, 2)),
    "avg_pool2d-batch0": ("avg_pool2d", [(0, 3, 4, 4)], lambda a: F.avg_pool2d(a, 2),
                          lambda a: TF.avg_pool2d(a, 2)),
    "adaptive_avg_pool2d-batch0": ("adaptive_avg_pool2d", [(0, 3, 4, 4)],
                                   lambda a: F.adaptive_avg_pool2d(a, 2),
                                   lambda a: TF.adaptive_avg_pool2d(a, 2)),
    "interpolate-batch0": ("interpolate", [(0, 3, 4, 4)],
                           lambda a: F.interpolate(a, (6, 6), "bilinear"),
                           lambda a: TF.interpolate(a, (6, 6), mode="bilinear")),
    "grid_sample_2d-batch0": ("grid_sample_2d", [(0, 3, 4, 4), (0, 2, 2, 2)],
                              F.grid_sample_2d,
                              lambda a, g: TF.grid_sample(a, g, align_corners=False)),
    "layer_norm-rows0": ("layer_norm", [(0, 4)], lambda a: F.layer_norm(a, (4,)),
                         lambda a: TF.layer_norm(a, (4,))),
    "cross_entropy": ("cross_entropy", [(0, 3)],
                      lambda a: F.cross_entropy(a, _ints(a, (0,))),
                      lambda a: TF.cross_entropy(a, _ints(a, (0,)))),
    "attention-keys0": ("attention", [(1, 3, 4), (1, 0, 4), (1, 0, 2)], F.attention,
                        TF.scaled_dot_product_attention),
    "gather-index0": ("gather", [(3, 4)], lambda a: a.gather(1, _ints(a, (3, 0))),
                      lambda a: a.gather(1, _ints(a, (3, 0)))),
    "embedding-index0": ("embedding", [(5, 3)], lambda w: F.embedding(w, _ints(w, (2, 0))),
                         lambda w: TF.embedding(_ints(w, (2, 0)), w)),
    "expand-to0": ("expand", [(1, 3)], lambda a: a.expand((0, 3)) * 2,
                   lambda a: a.expand(0, 3) * 2),
    "repeat_dim-0": ("repeat_dim", [(2, 3)], lambda a: a.repeat_dim(0, 0),
                     lambda a: a.repeat(0, 1)),
    "pad-empty": ("pad", [(0, 3)], lambda a: a.pad((1, 1, 0, 0), 0.0),
                  lambda a: TF.pad(a, (1, 1, 0, 0))),
}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.op(case[0])) for name, case in EMPTY_CASES.items()])
def test_empty_tensors(name: str, device: burn.Device, grad_device: burn.Device,
                       rng: np.random.Generator) -> None:
    """Empty inputs and results (a zero batch, K = 0, empty cat parts, softmax over nothing,
    empty index tensors) give torch's shapes and values, and empty or zero gradients (the
    NumPy backend's max_pool2d, grid_sample_2d and deform_conv2d backwards reshaped an empty
    batch with -1: ValueError)."""
    _, shapes, burn_fn, torch_fn = EMPTY_CASES[name]
    args = [T(rng.standard_normal(s), held("float64", device)) for s in shapes]
    check_forward(burn_fn, torch_fn, args, device)
    check_backward(burn_fn, torch_fn, args, grad_device, rng)


#: torch's form of each extreme of `test_extremes_of_an_empty_dim_are_typed_errors`
TORCH_EXTREMES: dict[str, Any] = {
    "max_dim": lambda t: t.max(0), "max_dim_with_indices": lambda t: t.max(0),
    "min_dim": lambda t: t.min(-2), "argmax": lambda t: t.argmax(0),
    "median": lambda t: t.median(0)}


@pytest.mark.parametrize(("op", "fn"), [
    pytest.param("max_dim", lambda x: x.max(0), marks=pytest.mark.op("max_dim"), id="max"),
    pytest.param("max_dim_with_indices", lambda x: x.max_dim_with_indices(0),
                 marks=pytest.mark.op("max_dim_with_indices"), id="max_dim_with_indices"),
    pytest.param("min_dim", lambda x: x.min(-2), marks=pytest.mark.op("min_dim"), id="min"),
    pytest.param("argmax", lambda x: x.argmax(0), marks=pytest.mark.op("argmax"), id="argmax"),
    pytest.param("median", lambda x: x.median(0), marks=pytest.mark.op("median"), id="median"),
])
def test_extremes_of_an_empty_dim_are_typed_errors(op: str, fn: Any,
                                                   device: burn.Device) -> None:
    """max / min / argmax / median along an empty dim raise EmptyReductionError naming the op,
    shape and dim, at the call even under fusion: a ValueRangeError, and an IndexError as
    torch raises (checked on torch too); along a non-empty dim of an empty tensor they give an
    empty result."""
    import torch

    with pytest.raises(IndexError):
        TORCH_EXTREMES[op](torch.zeros((0, 3)))
    x = burn.zeros((0, 3), device=device).exp()
    with pytest.raises(burn.errors.EmptyReductionError,
                       match=rf"^{op.split('_dim')[0]}.*shape=\(0, 3\), dim=0") as caught:
        fn(x)
    assert isinstance(caught.value, IndexError) and isinstance(caught.value, ValueError)
    out = fn(x.transpose(0, 1))  # [3, 0] along its dim of 3: empty
    for part in out if isinstance(out, tuple) else (out,):
        assert 0 in part.shape


@pytest.mark.parametrize("method", [pytest.param(m, marks=pytest.mark.op(m), id=m)
                                    for m in ("max_dim", "min_dim")])
def test_max_dim_and_min_dim_of_an_empty_dim_name_themselves(method: str,
                                                            device: burn.Device) -> None:
    """`max_dim` / `min_dim` (values only) along an empty dim raise EmptyReductionError naming
    the method called, not the op with indices it runs (torch's keepdim amax / amin: an
    IndexError too)."""
    with pytest.raises(IndexError):
        getattr(torch, method.replace("_dim", "").replace("m", "am", 1))(
            torch.zeros((2, 0)), 1, keepdim=True)
    x = burn.zeros((2, 0), device=device)
    with pytest.raises(burn.errors.EmptyReductionError,
                       match=rf"^{method}: .*shape=\(2, 0\), dim=1"):
        getattr(x, method)(1)


@pytest.mark.op("mask_where")
@pytest.mark.parametrize("call", [
    pytest.param(lambda x, m: x.mask_where(m, x), id="mask_where"),
    pytest.param(lambda x, m: x.mask_where(m, 1.0), id="mask_where-scalar"),
    pytest.param(lambda x, m: x.mask_fill(m, 1.0), id="mask_fill"),
])
def test_a_mask_that_does_not_broadcast_names_shapes_and_dtypes(call: Callable[..., Any],
                                                                device: burn.Device) -> None:
    """A mask whose shape does not broadcast with the tensor raises ShapeError at the call,
    naming the op, both shapes and both dtypes (torch: RuntimeError)."""
    with pytest.raises(RuntimeError):
        torch.zeros((2, 2)).masked_fill(torch.ones((3, 2), dtype=torch.bool), 1.0)
    x = burn.zeros((2, 2), device=device)
    mask = burn.tensor(np.ones((3, 2), bool), device=device)
    with pytest.raises(burn.errors.ShapeError, match=r"^mask_(where|fill): .*\(2, 2\).*\(3, 2\)"
                       r".*float32.*bool"):
        call(x, mask)


# ------------------------------------------------------------------------ saturated integers
INT_EDGES = {"int8": [-128, 127, -1, 0, 1, 100, -100], "uint8": [0, 255, 1, 128, 200, 7, 100],
             "int32": [-2**31, 2**31 - 1, -1, 0, 1, 65536, -65536],
             "int64": [-2**63, 2**63 - 1, -1, 0, 1, 2**40, -2**40]}


@pytest.mark.parametrize("op,fn", [
    pytest.param("add", lambda a, b: a + b, marks=pytest.mark.op("add"), id="add"),
    pytest.param("sub", lambda a, b: a - b, marks=pytest.mark.op("sub"), id="sub"),
    pytest.param("mul", lambda a, b: a * b, marks=pytest.mark.op("mul"), id="mul"),
    pytest.param("neg", lambda a, b: -a, marks=pytest.mark.op("neg"), id="neg"),
    pytest.param("abs", lambda a, b: a.abs(), marks=pytest.mark.op("abs"), id="abs"),
    pytest.param("mul", lambda a, b: a * 3, marks=pytest.mark.op("mul_scalar"), id="mul-3"),
    pytest.param("sum", lambda a, b: a.sum(), marks=pytest.mark.op("sum"), id="sum"),
    pytest.param("cumsum", lambda a, b: a.cumsum(0), marks=pytest.mark.op("cumsum"),
                 id="cumsum"),
    pytest.param("prod", lambda a, b: a.prod(), marks=pytest.mark.op("prod"), id="prod"),
    pytest.param("remainder", lambda a, b: a % 7, marks=pytest.mark.op("remainder_scalar"),
                 id="remainder-7"),
    pytest.param("floor_div", lambda a, b: a // 7, marks=pytest.mark.op("floor_div"),
                 id="floor_div-7"),
])
@pytest.mark.parametrize("dtype", list(INT_EDGES))
def test_int_overflow_wraps(op: str, fn: Any, dtype: str, device: burn.Device) -> None:
    """Sums, products, negation and abs past an int dtype's range wrap as torch (abs and neg
    of the minimum give the minimum), strided operands included."""
    a = np.array(INT_EDGES[dtype])
    check_forward(fn, fn, [T(a, dtype, "strided"), T(np.roll(a, 3), dtype)], device)


@pytest.mark.op("cast")
@pytest.mark.parametrize("source", ["float32", "float16"])
@pytest.mark.parametrize("target", ["int8", "uint8", "int32", "int64"])
def test_special_floats_cast_to_ints(source: str, target: str, device: burn.Device) -> None:
    """NaN, infinities and values past the target's range cast to ints as torch on x86 (the
    type's minimum; int8 / uint8 through int32, wrapping), quietly, on every backend
    (docs/differences.md: C leaves these casts undefined, the cube kernels write them out)."""
    x = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 300.5, -300.5, 2.9e9, -0.9, 127.9,
                  255.5])
    with np.errstate(over="ignore"):  # 1e10 is inf in float16
        arg = T(x, source, "strided")
    check_forward(lambda a: a.cast(burn.DType(target)),
                  lambda a: a.to(getattr(torch, target)), [arg], device)


# -------------------------------------------------------------------------------- bad input
def _ones(d: burn.Device, shape: tuple[int, ...], dtype: Any = burn.float32) -> Any:
    return burn.ones(shape, dtype=dtype, device=d)


def _elsewhere(d: burn.Device) -> str:
    """A device other than `d`."""
    return "numpy" if d != burn.Device("numpy") else "numpy+autodiff"


#: name -> (error type, message pattern, the bad call on a device); each is known from shapes,
#: dtypes and devices alone, so it raises at the call, before any sync, under fusion too.
BAD_CALLS: dict[str, tuple[type[Exception], str, Any]] = {
    "add": (burn.errors.ShapeError,
            r"^add: shapes cannot be broadcast.*\(2, 3\), \(4, 3\).*'float32', 'float32'",
            lambda d: _ones(d, (2, 3)).exp() * 2 + _ones(d, (4, 3))),
    "sub-broadcast": (burn.errors.ShapeError,
            r"^sub: shapes cannot be broadcast.*\(2, 3\), \(4, 3\).*'float32', 'int64'",
            lambda d: _ones(d, (2, 3)).exp() - _ones(d, (4, 3), burn.int64)),
    "matmul": (burn.errors.ShapeError, r"^matmul: inner dims differ.*lhs=\(2, 3\), rhs=\(4, 5\)"
               r".*lhs_dtype=float32, rhs_dtype=float32",
               lambda d: _ones(d, (2, 3)).exp() @ _ones(d, (4, 5))),
    "bitwise_and": (burn.errors.DTypeError, r"^bitwise_and: .*lhs=int32, rhs=float32",
                    lambda d: _ones(d, (2,), burn.int32) & _ones(d, (2,))),
    "sub": (burn.errors.DTypeError, r"^sub: not supported with a bool operand",
            lambda d: _ones(d, (2,), burn.bool_) - _ones(d, (2,), burn.bool_)),
    "reshape": (burn.errors.ShapeError, r"^reshape: element counts differ.*target=\(7,\)",
                lambda d: _ones(d, (2, 3)).exp().reshape((7,))),
    "cat": (burn.errors.ShapeError, r"^cat: sizes must match.*\(2, 3\), \(2, 4\)",
            lambda d: burn.cat([_ones(d, (2, 3)).exp(), _ones(d, (2, 4))], 0)),
    "sum_dim": (burn.errors.BurnIndexError, r"^sum: dim out of range \(dim=2, ndim=2",
                lambda d: _ones(d, (2, 3)).exp().sum(2)),
    "softmax": (burn.errors.BurnIndexError, r"^softmax: dim out of range \(dim=-3",
                lambda d: F.softmax(_ones(d, (2, 3)).exp(), -3)),
    "expand": (burn.errors.ShapeError, r"^expand: only size-1 dims can grow",
               lambda d: _ones(d, (2, 3)).exp().expand((4, 3))),
    "gather": (burn.errors.ShapeError, r"^gather: indices must have the input's rank",
               lambda d: _ones(d, (2, 3)).exp().gather(1, _ones(d, (3, 3), burn.int64))),
    "mask_fill": (burn.errors.ShapeError, r"^mask_fill: shapes cannot be broadcast",
                  lambda d: _ones(d, (2, 3)).exp().mask_fill(_ones(d, (4,), burn.bool_), 0.0)),
    "conv2d": (burn.errors.ShapeError, r"^conv2d: need C_in",
               lambda d: F.conv2d(_ones(d, (1, 3, 4, 4)).exp(), _ones(d, (2, 4, 1, 1)))),
    "layer_norm": (burn.errors.ShapeError, r"^layer_norm: input must be",
                   lambda d: F.layer_norm(_ones(d, (2, 3)).exp(), (4,))),
    "add-devices": (burn.errors.DeviceError, r"^add: tensors are on different devices",
                  lambda d: _ones(d, (2,)).exp() + burn.ones((2,), device=_elsewhere(d))),
}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.op(name.split("-")[0])) for name in BAD_CALLS])
def test_bad_input_raises_at_the_call(name: str, device: burn.Device) -> None:
    """Shape, dtype, dim and device mistakes raise their typed error, naming the op, shapes and
    dtypes, at the bad call itself on every device: a fusion device records ops without
    running them, and must not defer these to the next sync (the inputs here are pending
    results of an exp)."""
    error, pattern, call = BAD_CALLS[name]
    with pytest.raises(error, match=pattern):
        call(device)
    np.testing.assert_array_equal((_ones(device, (2,)) * 3).to_numpy(), [3.0, 3.0])


def _i64(d: burn.Device, values: Any) -> Any:
    return burn.tensor(np.array(values, dtype=np.int64), device=d)


#: op -> a call indexing out of range (its checks run on the host at once on NumPy, in the
#: kernel on the cube backends, reported at the next sync).
BAD_INDICES: dict[str, Any] = {
    "gather": lambda d, x: x.gather(1, _i64(d, [[0, 3, 1], [0, 0, 0]])),
    "scatter": lambda d, x: x.scatter(1, _i64(d, [[0, -4, 1], [0, 0, 0]]), x),
    "select": lambda d, x: x.select(0, _i64(d, [0, 2])),
    "select_assign": lambda d, x: x.select_assign(0, _i64(d, [2]), _ones(d, (1, 3))),
    "embedding": lambda d, x: F.embedding(x, _i64(d, [[0, -1]])),
    "one_hot": lambda d, x: _i64(d, [0, 3]).one_hot(3),
    "getitem": lambda d, x: x[_i64(d, [0, 2])],
    "gather_nd": lambda d, x: x.gather_nd(_i64(d, [[0, 3]])),
    "cross_entropy": lambda d, x: F.cross_entropy(x, _i64(d, [0, 3])),
}


@pytest.mark.parametrize("op", [
    pytest.param(op, marks=pytest.mark.op(op)) for op in BAD_INDICES])
def test_indices_out_of_range_raise_by_the_next_sync(op: str, device: burn.Device) -> None:
    """An index out of range raises BurnIndexError naming the op and the index by the time its
    result is read (no value comes back), and the device works on afterwards."""
    x = _ones(device, (2, 3)).exp()
    with pytest.raises(burn.errors.BurnIndexError, match=rf"^{op}: index -?\d+ out of range"):
        BAD_INDICES[op](device, x).to_numpy()
    np.testing.assert_allclose(x.sum().item(), 6 * np.e, rtol=1e-6)


@pytest.mark.op("cumsum")
@pytest.mark.parametrize("n", [5, 5000])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cumsum_of_negative_zeros_is_positive_zero(n: int, dtype: str,
                                                   device: burn.Device) -> None:
    """A line's leading -0.0s sum to +0.0, as torch's cumsum (its sum starts from 0): the
    NumPy backend and the cube kernels started from the first element and kept -0.0 (long
    lines run in chunks on the cube backends)."""
    data = np.full((3, n), -0.0)
    data[1, n // 2:] = 1.5
    data[2, 0] = 0.0
    arg = T(data, dtype, "strided")
    out = check_forward(lambda a: a.cumsum(-1), lambda a: a.cumsum(-1), [arg], device)
    want = torch.from_numpy(data).to(getattr(torch, dtype)).cumsum(-1)
    got = np.asarray(out.cast(burn.float32).to_numpy(), dtype=np.float64)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want.to(torch.float64).numpy()))


@pytest.mark.op("std")
@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_std_of_constant_lines_has_a_zero_gradient(correction: int, layout: str,
                                                   grad_device: burn.Device,
                                                   rng: np.random.Generator) -> None:
    """The standard deviation of a constant line is 0 with a zero gradient, as torch's (the
    square root's infinite derivative times the variance's zero gradient gave NaN); a line of
    one element with correction 1 stays NaN."""
    data = np.array([[1.5, 1.5, 1.5, 1.5], [1.0, 2.0, 3.0, -4.0], [-0.0, 0.0, 0.0, -0.0]])
    x = T(data, held("float64", grad_device), layout)
    check_backward(lambda a: a.std(1, correction), lambda a: a.std(1, correction=correction),
                   [x], grad_device, rng)
    one = T(np.array([[2.0]]), held("float64", grad_device))
    with pytest.warns(UserWarning):  # torch: "degrees of freedom is <= 0"
        check_backward(lambda a: a.std(), lambda a: a.std(), [one], grad_device, rng)


#: Ops that may change nothing: each must still return a new tensor (a value), as torch's copy.
NO_OP_RESULTS: dict[str, tuple[str, Any]] = {
    "pad-zeros": ("pad", lambda x: x.pad((0, 0, 0, 0), 0.0)),
    "pad-edge-zeros": ("pad", lambda x: x.pad((0, 0), mode="edge")),
    "roll-0": ("roll", lambda x: x.roll((0, 3), (0, 1))),
    "roll_dim-n": ("roll_dim", lambda x: x.roll_dim(2, 0)),
    "repeat-ones": ("repeat", lambda x: x.repeat(1, 1)),
    "sign-bool": ("sign", lambda x: (x > 2).sign()),
    "t-1d": ("swap_dims", lambda x: x[0].t()),
    "T-1d": ("permute", lambda x: x[1].T),
    "transpose-0d": ("swap_dims", lambda x: x[0, 0].transpose(0, -1)),
    "movedim-0d": ("movedim", lambda x: x[1, 2].movedim(0, 0)),
    "sum_dims-none": ("sum_dim", lambda x: x.sum_dims([])),
    "sum_dims_squeeze-none": ("sum_dim", lambda x: x.sum_dims_squeeze([])),
    "int-mean_dim-0d": ("mean_dim", lambda x: x[0, 1].cast(burn.int64).mean_dim(0)),
}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.op(case[0])) for name, case in NO_OP_RESULTS.items()])
def test_ops_that_change_nothing_return_values(name: str, device: burn.Device) -> None:
    """A roll by 0, a zero pad, a repeat of ones, the sign of bools, t / T / transpose /
    movedim of 0-d and 1-d tensors and sums over no dims return new tensors: assigning into
    the source afterwards leaves the result as it was, and the other way round (they returned
    the source itself, so `x[...] = v` changed them too)."""
    data = np.arange(1.0, 7.0).reshape(2, 3)
    x = burn.tensor(data, dtype=burn.float32, device=device)
    out = NO_OP_RESULTS[name][1](x)
    before = np.array(out.to_numpy(), copy=True)
    x[...] = -5.0
    np.testing.assert_array_equal(out.to_numpy(), before)
    source = burn.tensor(data, dtype=burn.float32, device=device)
    result = NO_OP_RESULTS[name][1](source)
    result[...] = 0
    np.testing.assert_array_equal(source.to_numpy(), data.astype(np.float32))


@pytest.mark.op("floor_div")
@pytest.mark.parametrize("divisor", ["tensor", 1.0, -1.0, 0.25, -3.0])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_zero_floor_quotients_take_the_sign_of_the_quotient(divisor: Any, dtype: str,
                                                           device: burn.Device) -> None:
    """A zero floor quotient has the sign of x / y, as torch's floor_divide (-0.0 // 1 gave
    0.0 and -0.0 // -1 gave -0.0: x - x % y of a zero x is +0.0), tensor and scalar divisors."""
    x = np.array([-0.0, 0.0, -0.0, 0.0, 0.2, -0.2, 0.1, -0.1, 3.0, -3.0, 1e-3, -1e-3])
    y = np.array([1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 5.0, 4.0, -2.0, 2.0])
    if divisor == "tensor":
        args: list[Any] = [T(x, dtype, "strided"), T(y, dtype)]
        out = check_forward(lambda a, b: a // b, lambda a, b: a // b, args, device)
        want = torch.from_numpy(x).to(getattr(torch, dtype)) // torch.from_numpy(y).to(
            getattr(torch, dtype))
    else:
        out = check_forward(lambda a: a // divisor, lambda a: a // divisor,
                            [T(x, dtype, "strided")], device)
        want = torch.from_numpy(x).to(getattr(torch, dtype)) // divisor
    assert_signs(out, want)


@pytest.mark.op("powf")
@pytest.mark.parametrize("exponent", ["tensor", 3.0, 2.0, 0.5, -0.5, -1.0, -2.0, 1.5])
def test_powers_of_zeros_and_infinities(exponent: Any, device: burn.Device) -> None:
    """+-0.0 and +-inf to a power as torch: by C's pow for tensor exponents (-0.0 to an odd
    positive integer is -0.0: wgpu's pow helper gave +0.0), and for the scalar exponents torch
    computes by other ops (0.5 by sqrt: sqrt(-0.0) is -0.0, sqrt(-inf) NaN, where the cube
    kernels' pow gave +0.0 and +inf)."""
    x = np.array([-0.0, 0.0, -0.0, 0.0, -0.0, -0.0, 0.0, -0.0, -0.0, -np.inf, np.inf, -np.inf])
    y = np.array([1.0, 1.0, 2.0, 3.0, 0.5, -1.0, -2.0, 3.0, 4.0, 0.5, 0.5, 3.0])
    if exponent == "tensor":
        out = check_forward(lambda a, b: a ** b, lambda a, b: a ** b,
                            [T(x, "float32", "strided"), T(y, "float32")], device)
        want = torch.from_numpy(x).float() ** torch.from_numpy(y).float()
    else:
        out = check_forward(lambda a: a ** exponent, lambda a: a ** exponent,
                            [T(x, "float32", "strided")], device)
        want = torch.from_numpy(x).float() ** exponent
    assert_signs(out, want)


@pytest.mark.op("tril")
@pytest.mark.parametrize("op", ["tril", "triu"])
def test_triangle_diagonals_must_be_ints(op: str, device: burn.Device,
                                         rng: np.random.Generator) -> None:
    """tril / triu take an int diagonal (numpy's too), as torch; a float or bool one raises
    DTypeError naming the op (tril(0.5) kept every element: numpy's tri took k=0.5)."""
    x = T(rng.standard_normal((2, 3, 4)), "float32", "transposed")
    check_forward(lambda a: getattr(a, op)(np.int64(-1)), lambda a: getattr(a, op)(-1), [x],
                  device)
    for bad in (0.5, True):
        with pytest.raises(burn.errors.DTypeError, match=rf"^{op}: expected ints"):
            getattr(burn.ones((3, 3), device=device), op)(bad)


@pytest.mark.op("powi")
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8"])
def test_int_powers_with_negative_int_tensor_exponents(dtype: str, device: burn.Device) -> None:
    """An int tensor to negative int tensor exponents as torch: 0, or +-1 for a base of +-1
    (the NumPy backend raised numpy's ValueError; a negative Python int exponent stays a
    ValueRangeError, as torch refuses it), broadcast and strided."""
    base = np.array([2, 1, -1, 0, 3, -2, -1, 5])
    exponent = np.array([-1, -3, -3, -1, -2, -1, -2, 2])
    check_forward(lambda a, b: a ** b, lambda a, b: a ** b,
                  [T(base, dtype, "strided"), T(exponent, dtype)], device)
    check_forward(lambda a, b: a[:1] ** b, lambda a, b: a[:1] ** b,
                  [T(base, dtype), T(exponent, dtype, "strided")], device)
    with pytest.raises(burn.errors.ValueRangeError, match=r"^pow: integers to negative"):
        burn.tensor(base, dtype=burn.DType(dtype), device=device) ** -1


@pytest.mark.op("from_data")
@pytest.mark.parametrize("data", [[2**63], 2**63, [[2**63], [2**64 - 1]], [-2**63 - 1, 5]],
                         ids=["list", "scalar", "nested", "negative"])
def test_python_ints_past_int64_are_refused(data: Any, device: burn.Device) -> None:
    """Python ints past int64 raise ValueRangeError at creation, as torch refuses them
    (numpy reads them as uint64, which wrapped: burn.tensor([2**63]) held -2**63, or as
    objects: DTypeError); the int64 limits stay."""
    with pytest.raises(burn.errors.ValueRangeError, match=r"^tensor: ints must fit in int64"):
        burn.tensor(data, device=device)
    top = burn.tensor([2**63 - 1, -2**63], device=device)
    assert top.dtype == burn.int64 and top.to_numpy().tolist() == [2**63 - 1, -2**63]


#: Python data and the int dtype asked for: in range (truncating floats, an unsigned dtype
#: taking negatives down to -max as torch) or refused as torch.tensor refuses them.
INT_DATA = [([300], "int8"), ([-129], "int8"), ([127.9], "int8"), ([-128.9], "int8"),
            ([[1, 2], [3, 200]], "int8"), (300, "int8"), ([2**31], "int32"),
            ([float("nan")], "int32"), ([float("inf")], "int64"), ([-256], "uint8"),
            ([1.5, -2.7], "int8"), ([127, -128], "int8"), ([255, -1, -255], "uint8"),
            ([True, False], "int32"), ([], "int8"), ([2**63 - 1, -2**63], "int64")]


@pytest.mark.op("from_data")
@pytest.mark.parametrize("data,dtype", INT_DATA,
                         ids=[f"{dtype}-{i}" for i, (_, dtype) in enumerate(INT_DATA)])
def test_python_numbers_an_int_dtype_cannot_hold(data: Any, dtype: str,
                                                  device: burn.Device) -> None:
    """burn.tensor(data, dtype=int...) of Python numbers past the dtype's range (or NaN /
    inf) raises ValueRangeError naming the value and dtype where torch.tensor raises; what
    torch takes gives torch's values (it wrapped: [300] as int8 held 44), or the typed error
    of a device that cannot hold the dtype (wgpu's 8-bit ints)."""
    try:
        want = torch.tensor(data, dtype=getattr(torch, dtype))
    except RuntimeError:
        with pytest.raises(burn.errors.ValueRangeError,
                           match=rf"^tensor: value cannot be converted to {dtype}"):
            burn.tensor(data, dtype=burn.DType(dtype), device=device)
        return
    if not device.backend.supports(burn.DType(dtype)):
        with pytest.raises(burn.errors.UnsupportedDTypeError, match=dtype):
            burn.tensor(data, dtype=burn.DType(dtype), device=device)
        return
    got = burn.tensor(data, dtype=burn.DType(dtype), device=device)
    assert got.dtype == burn.DType(dtype) and got.shape == tuple(want.shape)
    assert got.to_numpy().tolist() == want.tolist()


@pytest.mark.op("sum_dim")
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "var", "std", "any", "all"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_over_no_dims(op: str, keepdim: bool, device: burn.Device) -> None:
    """dim=() as torch: sum / mean / amax / amin / var / std reduce every dim, any / all
    reduce none (the input's truth values); shape and dtype first, then values."""
    data = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -4.5]], dtype=np.float32)
    x = burn.tensor(data, device=device)
    tx = torch.from_numpy(data)
    torch_op = {"max": "amax", "min": "amin"}.get(op, op)
    want = getattr(torch, torch_op)(tx, dim=(), keepdim=keepdim)
    got = getattr(x, op)(dim=(), keepdim=keepdim)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype == (burn.bool_ if op in ("any", "all") else burn.float32)
    np.testing.assert_allclose(np.asarray(got.to_numpy(), dtype=np.float64),
                               want.to(torch.float64).numpy(), rtol=1e-6)
