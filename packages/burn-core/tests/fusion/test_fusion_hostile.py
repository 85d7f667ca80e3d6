"""Hostile inputs through fused kernels against PyTorch: 0-d and empty tensors, strided,
broadcast and permuted views, int wrapping and division by negatives, saturated floats,
bfloat16 rounding between fused ops, changing shapes under one plan, gradients, call-site
errors and tensors whose fused kernel failed. Every block is fused however short
(`fuse_small_blocks`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, check, gradients_agree, reference

import burn
import burn.functional as F
from burn.errors import BurnIndexError, DeviceError, DTypeError, ShapeError, UnsupportedDTypeError
from burn.fusion import stream

pytestmark = [pytest.mark.parametrize("base", DEVICES),
              pytest.mark.usefixtures("empty_stream", "fuse_small_blocks")]
torch.set_num_threads(1)

#: float32 special values: NaN, infinities, signed zeros, near-overflow, subnormal, ordinary
SPECIAL = np.array([1.5, np.nan, -np.inf, np.inf, -0.0, 0.0, -2.0, 3e38, -3e38, 1e-40, 88.8,
                    -104.0], np.float32)


def same(got: burn.Tensor, want: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """`check`, and the signs of zeros where torch has zeros."""
    check(got, want, rtol=rtol, atol=atol)
    values, expected = got.to_numpy(), want.detach().numpy()
    if expected.dtype.kind == "f":
        zero = expected == 0
        np.testing.assert_array_equal(np.signbit(values[zero]), np.signbit(expected[zero]))


def both(fn: Callable[..., Any], base: str, *arrays: np.ndarray) -> tuple[Any, Any]:
    """`fn` on the fusion device's tensors (pending after `* 1`) and on torch's (`reference`:
    subnormals flushed where the device flushes them)."""
    dev = f"{base}+fusion"
    ours = [burn.tensor(a, device=dev) for a in arrays]
    theirs = [torch.from_numpy(np.array(a, copy=True)) for a in arrays]
    return fn(*ours), reference(base, lambda: fn(*theirs))


def test_zero_dim_chains_and_reductions(base: str) -> None:
    s, t = np.array(1.5, np.float32), np.array(-2.0, np.float32)
    got, want = both(lambda a, b: ((a * b).exp() + a).tanh() * 2.0, base, s, t)
    same(got, want)
    got, want = both(lambda a, b: a * 1.0 + b * 2.0, base, s, np.ones((3, 4), np.float32))
    same(got, want)
    got, want = both(lambda a: (a * 2.0).sum(), base, s)
    same(got, want)
    got, want = both(lambda a, b: a * b + 1.0, base, s, np.zeros((0, 3), np.float32))
    same(got, want)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_empty_tensors(base: str, shape: tuple[int, ...]) -> None:
    e = np.zeros(shape, np.float32)
    got, want = both(lambda a: (a + 1.0).exp().tanh() * 2.0, base, e)
    same(got, want)
    dev = f"{base}+fusion"
    for d in range(len(shape)):
        x, t = burn.tensor(e, device=dev), torch.from_numpy(e)
        same((x * 2.0).sum_dim(d) + 1.0, (t * 2.0).sum(d, keepdim=True) + 1.0)
        same((x * 2.0).mean_dim(d), (t * 2.0).mean(d, keepdim=True))
        if shape[d]:  # a reduction over a non-empty dim of an empty tensor
            same((x * 2.0).max_dim(d), (t * 2.0).amax(d, keepdim=True))
            same(F.softmax(x * 2.0, d), torch.softmax(t * 2.0, d))
            same(F.log_softmax(x * 2.0, d), torch.log_softmax(t * 2.0, d))


@pytest.mark.parametrize("mkn", [(3, 0, 4), (0, 3, 4), (3, 4, 0), (2, 3, 4)])
def test_matmul_bias_relu_with_empty_dims(base: str, mkn: tuple[int, int, int]) -> None:
    m, k, n = mkn
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (n,)))
    for _ in range(2):  # planned, then from the plan
        got, want = both(lambda x, w, bias: F.relu(x.matmul(w) + bias) * 2.0
                         if isinstance(x, burn.Tensor) else torch.relu(x @ w + bias) * 2.0,
                         base, a, b, c)
        same(got, want)


def test_strided_broadcast_and_permuted_views(base: str) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    cube = rng.standard_normal((2, 3, 4)).astype(np.float32)
    row, col = a[:1], a[:, :1].copy()
    dev = f"{base}+fusion"
    x, t = burn.tensor(a, device=dev), torch.from_numpy(a)
    same((x.transpose(0, 1) * 2.0 + 1.0).exp(), (t.T * 2.0 + 1.0).exp())
    same((x[::2, 1::3] * 2.0).exp() + x[1::2, ::3], (t[::2, 1::3] * 2.0).exp() + t[1::2, ::3])
    same((x[::2, 1::3] * 2.0).sum_dim(1), (t[::2, 1::3] * 2.0).sum(1, keepdim=True), atol=1e-5)
    same(F.softmax(x.transpose(0, 1) * 2.0, 0), torch.softmax(t.T * 2.0, 0))
    r, tr = burn.tensor(row, device=dev).expand((6, 8)), torch.from_numpy(row).expand(6, 8)
    same((r * 2.0).sum_dim(0), (tr * 2.0).sum(0, keepdim=True), atol=1e-5)
    c, tc = burn.tensor(col, device=dev).expand((6, 8)), torch.from_numpy(col).expand(6, 8)
    values, indices = (c + 0.0).max_dim_with_indices(1)
    tv, ti = (tc + 0.0).max(1, keepdim=True)
    same(values, tv)
    check(indices, ti)
    same(F.softmax(c * 2.0, 1), torch.softmax(tc * 2.0, 1))
    p, tp = burn.tensor(cube, device=dev), torch.from_numpy(cube)
    for d in range(3):
        same((p.permute(2, 0, 1) * 2.0).sum_dim(d),
             (tp.permute(2, 0, 1) * 2.0).sum(d, keepdim=True), atol=1e-5)
        same(F.softmax(p.permute(1, 2, 0) * 2.0, d), torch.softmax(tp.permute(1, 2, 0) * 2.0, d))
        values, indices = (p.permute(1, 2, 0) * 2.0).min_dim_with_indices(d)
        tv, ti = (tp.permute(1, 2, 0) * 2.0).min(d, keepdim=True)
        same(values, tv)
        check(indices, ti)
    lhs = rng.standard_normal((3, 1, 5)).astype(np.float32)
    rhs = rng.standard_normal((1, 4, 1)).astype(np.float32)
    got, want = both(lambda u, v: (u * v + u).exp() - v, base, lhs, rhs)
    same(got, want, rtol=1e-5)
    got, want = both(lambda u, v: (u * v + u).sum_dim(2) * v if isinstance(u, burn.Tensor)
                     else (u * v + u).sum(2, keepdim=True) * v, base, lhs, rhs)
    same(got, want, atol=1e-5)


def test_float_int_float_round_trip_keeps_zero_positive(base: str) -> None:
    """A float -> int32 -> float chain fused into one kernel: values that truncate to 0 from
    below give the integer's +0.0 (gcc folded the round trip into ``trunc``, -0.0), then the
    chain goes on (negated, scaled) as torch's."""
    data = np.resize(np.array([-0.5, -0.0, 0.0, -0.99, 0.75, -1.5, 2.5, 7.0], np.float32), 37)
    for tail in (lambda v: -v, lambda v: v * -2.0, lambda v: v + 0.0):
        got, want = both(lambda a, tail=tail: tail(
            (a * 1.0).cast(burn.int32).cast(burn.float32) if isinstance(a, burn.Tensor)
            else (a * 1.0).to(torch.int32).to(torch.float32)), base, data)
        same(got, want, rtol=0, atol=0)


def test_negated_bool_casts_keep_negative_zero(base: str) -> None:
    """A comparison cast to float, then negated or scaled by a negative number, in one kernel:
    false gives -0.0 as in torch (on the H200, NVVM folded ``-(c ? 1.0f : 0.0f)`` into a select
    of the immediates -1.0 and -0.0, which ptxas ran as +0.0; 1 / that was +inf)."""
    data = np.resize(np.array([0.0, -0.0, -1.0, 0.5, -0.5, 2.0, np.nan, -np.inf], np.float32), 37)
    for tail in (lambda v: -v, lambda v: v * -2.0, lambda v: 1.0 / -v):
        got, want = both(lambda a, tail=tail: tail((a > 0.0).cast(burn.float32))
                         if isinstance(a, burn.Tensor) else tail((a > 0.0).to(torch.float32)),
                         base, data)
        same(got, want, rtol=0, atol=0)
    flags = np.resize(np.array([False, True, True, False]), 37)
    got, want = both(lambda a: -((a == a).cast(burn.float32)) if isinstance(a, burn.Tensor)
                     else -((a == a).to(torch.float32)), base, flags)
    same(got, want, rtol=0, atol=0)


def test_overflowed_exp_then_add(base: str) -> None:
    """exp overflowing to inf, then an add, fused: inf + -inf is NaN and inf + -3e38 inf, as
    in torch (the C target's exp ended in a product that gcc contracted with the add into an
    FMA, which does not overflow: exp(100) + -inf was -inf)."""
    x = np.resize(np.array([88.72283, 88.72284, 89.0, 100.0, np.inf, 88.0, 0.0], np.float32), 37)
    y = np.resize(np.array([-np.inf, -np.inf, -3e38, -np.inf, -3e38, -3e38, -np.inf],
                           np.float32), 37)
    got, want = both(lambda a, b: (a * 1.0).exp() + b, base, x, y)
    same(got, want)


def test_int_wrapping_division_and_mixed_dtypes(base: str) -> None:
    data = np.array([-7, -1, 0, 3, 9, 2**31 - 1, -2**31, 5], np.int32)
    divisor = np.array([3, -3, 2, -2, 7, -7, 1, -1], np.int32)
    got, want = both(lambda a: (a + 1) * 1 + (2**31 - 1), base, data)
    same(got, want)
    got, want = both(lambda a: (a * 3) * 65537, base, data)
    same(got, want)
    got, want = both(lambda a: (a * 1).abs() - (-(a * 1)), base, data)  # abs, neg of INT_MIN
    same(got, want)
    got, want = both(lambda a, b: (a * 1) // (b * 1) + (a * 1) % (b * 1)
                     if isinstance(a, burn.Tensor)
                     else torch.div(a, b, rounding_mode="floor") + torch.remainder(a, b),
                     base, data, divisor)
    same(got, want)
    got, want = both(lambda a: (a * 1) // -3 * 2 if isinstance(a, burn.Tensor)
                     else torch.div(a, -3, rounding_mode="floor") * 2, base, data)
    same(got, want)
    got, want = both(lambda a: (a * 2 + 1.5) * 0.5 - 1.0, base, data)  # int + float number
    same(got, want)
    got, want = both(lambda a, b: (a * 1) + b * 1.0, base, data, SPECIAL[:8])
    same(got, want)
    got, want = both(lambda a: (a * 1 > 2.5).float() * 3.0 + (a == 3.0).float(), base, data)
    same(got, want)


def test_masks_and_comparisons_over_special_values(base: str) -> None:
    got, want = both(lambda a: F.relu(a * 1.0) if isinstance(a, burn.Tensor)
                     else torch.relu(a * 1.0), base, SPECIAL)
    same(got, want)
    got, want = both(lambda a: burn.where(a * 1.0 > 0, a * 2.0, a - 1.0)
                     if isinstance(a, burn.Tensor) else torch.where(a > 0, a * 2.0, a - 1.0),
                     base, SPECIAL)
    same(got, want)
    got, want = both(lambda a: (a * 1.0).mask_fill((a * 1.0).is_nan(), -0.0) * 2.0
                     if isinstance(a, burn.Tensor)
                     else (a * 1.0).masked_fill(a.isnan(), -0.0) * 2.0, base, SPECIAL)
    same(got, want)
    got, want = both(lambda a: (a * 1.0 >= 0).float() * 3.0 + (a != a).float(), base, SPECIAL)
    same(got, want)


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid", "clamp", "clamp_min",
                                  "clamp_max", "sqrt", "recip", "softplus", "silu"])
def test_saturated_floats_through_math(base: str, name: str) -> None:
    burn_fn, torch_fn = {
        "exp": (lambda a: a.exp(), torch.exp),
        "log": (lambda a: a.log(), torch.log),
        "tanh": (lambda a: a.tanh(), torch.tanh),
        "sigmoid": (F.sigmoid, torch.sigmoid),
        "clamp": (lambda a: a.clamp(-1.0, 1.0), lambda a: a.clamp(-1.0, 1.0)),
        "clamp_min": (lambda a: a.clamp_min(0.0), lambda a: a.clamp_min(0.0)),
        "clamp_max": (lambda a: a.clamp_max(0.0), lambda a: a.clamp_max(0.0)),
        "sqrt": (lambda a: a.sqrt(), torch.sqrt),
        "recip": (lambda a: a.recip(), torch.reciprocal),
        "softplus": (F.softplus, torch.nn.functional.softplus),
        "silu": (F.silu, torch.nn.functional.silu),
    }[name]
    data = SPECIAL if name != "log" else SPECIAL[SPECIAL != 1e-40]  # (llvmpipe flushes there)
    x = burn.tensor(data, device=f"{base}+fusion") * 1.0
    same(burn_fn(x) * 1.0, reference(base, lambda: torch_fn(torch.from_numpy(data) * 1.0) * 1.0),
         rtol=2e-5, atol=1e-30)


def test_saturated_rows_through_reductions(base: str) -> None:
    rows = np.array([[1.0, 2.0, np.inf, 3.0], [np.inf, np.inf, 1.0, 2.0], [-np.inf] * 4,
                     [3e38] * 4, [np.nan, 1.0, 2.0, 3.0], [-0.0, 0.0, -0.0, 0.0],
                     [0.0, -0.0, 0.0, -0.0]], np.float32)
    dev = f"{base}+fusion"
    for d, data in ((1, rows), (0, np.ascontiguousarray(rows.T))):
        x, t = burn.tensor(data, device=dev), torch.from_numpy(data)
        same(F.softmax(x * 1.0, d), torch.softmax(t, d))
        same(F.log_softmax(x * 1.0, d), torch.log_softmax(t, d))
        same((x * 1.0).sum_dim(d), t.sum(d, keepdim=True))
        same((x * 1.0).mean_dim(d), t.mean(d, keepdim=True))
        for ours, theirs in (((x * 1.0).max_dim_with_indices(d), t.max(d, keepdim=True)),
                             ((x * 1.0).min_dim_with_indices(d), t.min(d, keepdim=True))):
            same(ours[0], theirs[0])
            check(ours[1], theirs[1])


@pytest.mark.parametrize("count", [40, 100, 140])
def test_blocks_reading_more_tensors_than_a_kernel_binds(base: str, count: int) -> None:
    """Sums of `count` tensors (past wgpu's 31 storage buffers a kernel and cuda's
    `MAX_TENSORS`; 140 past the stream's bound of 128 records) as an elementwise block, as a
    reduction's prologue, as a product's prologue and as its epilogue: the planner cuts
    such blocks (`stream._bounded`) and every result is torch's."""
    rng = np.random.default_rng(count)
    arrays = [rng.standard_normal((8, 6)).astype(np.float32) for _ in range(count)]
    w = rng.standard_normal((6, 5)).astype(np.float32)

    def total(xs: list[Any]) -> Any:
        out = xs[0] * 1.0
        for x in xs[1:]:
            out = out + x
        return out

    dev = f"{base}+fusion"
    ours = [burn.tensor(a, device=dev) for a in arrays]
    theirs = [torch.from_numpy(a) for a in arrays]
    bw, tw = burn.tensor(w, device=dev), torch.from_numpy(w)
    for _ in range(2):  # planned, then from the plans
        check(total(ours), total(theirs), rtol=1e-5, atol=1e-4)
        check(total(ours).sum_dim(1), total(theirs).sum(1, keepdim=True), rtol=1e-5, atol=1e-3)
        check(total(ours) @ bw, total(theirs) @ tw, rtol=1e-4, atol=1e-3)
        check(total([ours[0] @ bw] + [x[:, :5] for x in ours[1:]]),
              total([theirs[0] @ tw] + [x[:, :5] for x in theirs[1:]]), rtol=1e-5, atol=1e-4)


def _writes_through_exports(device: str | None) -> list[np.ndarray]:
    """Ops reading a tensor before and after its memory is exported (numpy, then DLPack),
    with writes through the exports in between; torch's tensors where `device` is None."""
    def make() -> Any:
        ones = np.ones((2, 3), np.float32)
        return torch.from_numpy(ones) if device is None else burn.tensor(ones, device=device)

    def exported(t: Any) -> Any:
        return t.numpy() if device is None else np.asarray(t)

    w = make()
    before = w + 1.0  # recorded, then the write
    view = exported(w)
    view[:] = 50.0
    after = w * 2.0  # recorded after the export, then another write
    view[:] = 7.0
    v = make()
    scaled = (v * 3.0).exp()
    torch.from_dlpack(v).add_(10.0)
    u = make()  # ops on views of an exported tensor, and on a tensor whose view was exported
    shared = exported(u)
    sliced, flipped = u[0:1] * 2.0 + 1.0, u.transpose(0, 1) * 3.0 - 1.0
    shared[0, 0] = 100.0
    s = make()
    through_view = exported(s.reshape(3, 2))
    whole = s * 2.0 + 1.0
    through_view[0, 0] = 100.0
    return [before.numpy(), after.numpy(), (w - 0.0).numpy(), scaled.numpy(), sliced.numpy(),
            flipped.numpy(), whole.numpy()]


def test_writes_through_an_export_do_not_reach_ops_called_before_them(base: str) -> None:
    """np.asarray / DLPack share a cpu tensor's memory: an op called before a write through
    them reads the tensor as it was (pending or not), as torch's eager ops and the plain
    device (where the export is a copy, the writes reach nothing); so do ops on a view of an
    exported tensor, and on a tensor a view of which was exported (they were deferred past
    the write: the export was known by object, not by storage)."""
    got = _writes_through_exports(f"{base}+fusion")
    plain = _writes_through_exports(base)
    for ours, eager in zip(got, plain, strict=True):
        np.testing.assert_array_equal(ours, eager)
    if base == "cpu":
        for ours, theirs in zip(got, _writes_through_exports(None), strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_gelu_of_values_past_half_the_float_range(base: str) -> None:
    """x cdf(x) is halved before the product: the exact and tanh GELU of +-3e38 and 2e38
    are finite (they overflowed to inf on the cpu runtime), and their gradient under
    fusion (erf recomputed from the input) is 1, not inf."""
    data = np.array([3e38, 2e38, -3e38, 1.0, -2.0], np.float32)
    for approximate in ("none", "tanh"):
        x = burn.tensor(data, device=f"{base}+fusion") * 1.0
        # (torch's float64 GELU rounded: some torch builds' float32 GELU overflows there)
        want = torch.nn.functional.gelu(torch.from_numpy(data).double(),
                                        approximate=approximate).float()
        check(F.gelu(x, approximate=approximate), want, rtol=2e-5)
    x = burn.tensor(data, device=f"{base}+fusion+autodiff").require_grad()
    grads = F.gelu(x * 1.0).sum().backward()
    tx = torch.from_numpy(data).requires_grad_()
    torch.nn.functional.gelu(tx).sum().backward()
    grad = x.grad(grads)
    assert grad is not None and tx.grad is not None
    check(grad, tx.grad, rtol=1e-5)


def test_bfloat16_rounds_between_fused_ops(base: str) -> None:
    """A bf16 value computed in a fused kernel is rounded to bf16 before the next op reads
    it, as the unfused ops store it (the C and CUDA targets compute bf16 in float32)."""
    if not burn.Device(base).backend.supports(burn.bfloat16):
        with pytest.raises(UnsupportedDTypeError, match="bfloat16"):
            burn.tensor(np.ones(3, np.float32), device=f"{base}+fusion").cast(burn.bfloat16)
        return
    rng = np.random.default_rng(4)
    data = (rng.standard_normal((4, 9)) * 100).astype(np.float32)
    dev = f"{base}+fusion"
    t = torch.from_numpy(data)
    x = burn.tensor(data, device=dev)
    check(x.cast(burn.bfloat16).cast(burn.float32), t.bfloat16().float(), rtol=0, atol=0)
    x = burn.tensor(data, device=dev)
    check(((x * 1.0).cast(burn.bfloat16) * 3.0 * 3.0).cast(burn.float32) + 0.0,
          (t.bfloat16() * 3.0 * 3.0).float(), rtol=0, atol=0)
    x = burn.tensor(data, device=dev).cast(burn.bfloat16)
    tb = t.bfloat16()
    got = (x * 3.0 + x) * 0.5 - x
    check(got.cast(burn.float32), ((tb * 3.0 + tb) * 0.5 - tb).float(), rtol=0, atol=0)
    s = (x * 0.25).sum_dim(1)  # the bf16 sum, rounded before the division reads it
    got = (x * 0.25) / s
    want_s = (tb * 0.25).float().sum(1, keepdim=True).bfloat16()
    check(s.cast(burn.float32), want_s.float(), rtol=0, atol=0)
    check(got.cast(burn.float32), ((tb * 0.25) / want_s).float(), rtol=0, atol=0)


def test_same_chain_with_changing_shapes_and_layouts(base: str) -> None:
    rng = np.random.default_rng(5)
    dev = f"{base}+fusion"
    for shape in [(4, 6), (6, 4), (24,), (1, 24), (2, 3, 4), (4, 6), (0, 6), (3, 1), (), (4, 6)]:
        data = rng.standard_normal(shape).astype(np.float32)
        x, t = burn.tensor(data, device=dev), torch.from_numpy(data)
        same(((x * 2.0 + 1.0).tanh() * x).exp(), ((t * 2.0 + 1.0).tanh() * t).exp())
        if shape and 0 not in shape:
            same(F.softmax(x * 2.0, -1), torch.softmax(t * 2.0, -1))
            same((x * 2.0).sum_dim(0) + 1.0, (t * 2.0).sum(0, keepdim=True) + 1.0, atol=1e-5)
    data = rng.standard_normal((4, 6)).astype(np.float32)
    views: list[Callable[[], burn.Tensor]] = [
        lambda: burn.tensor(data, device=dev),
        lambda: burn.tensor(data.T.copy(), device=dev).transpose(0, 1),
        lambda: burn.tensor(np.repeat(data, 2, axis=1), device=dev)[:, ::2],
        lambda: burn.tensor(data[:1], device=dev).expand((4, 6)),
        lambda: burn.tensor(data, device=dev)]
    for view in views:  # one structure, each layout planned (and the first reused)
        t = torch.from_numpy(view().to_numpy())
        same((view() * 2.0).exp() + view(), (t * 2.0).exp() + t)
        same(F.softmax(view() * 2.0, 1), torch.softmax(t * 2.0, 1))
        same((view() * 2.0).sum_dim(0) - 1.0, (t * 2.0).sum(0, keepdim=True) - 1.0, atol=1e-5)


def test_intermediates_keep_their_values_after_later_writes(base: str) -> None:
    data = np.random.default_rng(6).standard_normal((4, 6)).astype(np.float32)
    dev = f"{base}+fusion"
    t = torch.from_numpy(data) * 2.0
    y = burn.tensor(data, device=dev) * 2.0
    z = y.exp()
    kept = y.clone()
    y[1:3, ::2] = 7.0  # new contents for y; z and the clone keep theirs
    w = y + 1.0
    written = t.clone()
    written[1:3, ::2] = 7.0
    same(z, t.exp())
    same(kept, t)
    same(y, written)
    same(w, written + 1.0)
    same(z.reshape((6, 4)) + 1.0, t.exp().reshape(6, 4) + 1.0)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "max_dim", "clamp", "where",
                                  "sum_dim_broadcast", "matmul_relu"])
def test_gradients_through_fused_chains(base: str, name: str) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    a[0, :3] = [0.0, -0.0, 1e-30]
    row = rng.standard_normal((1, 7)).astype(np.float32)
    col = rng.standard_normal((5, 1)).astype(np.float32)
    fn: Callable[[Any, Any, Any], Any] = {
        "softmax": lambda x, r, c: (softmax(x * r, 1) * c).sum(),
        "log_softmax": lambda x, r, c: (log_softmax(x + c, 0) * r).sum(),
        "max_dim": lambda x, r, c: (amax(x * r, 1) * c).sum(),
        "clamp": lambda x, r, c: (x.clamp(-0.5, 0.5) * r).sum(),
        "where": lambda x, r, c: where(x > 0, x * r, c * 2.0).sum(),
        "sum_dim_broadcast": lambda x, r, c: ((total(x * x, 1) * c).exp() * r).mean(),
        "matmul_relu": lambda x, r, c: relu(x.transpose(0, 1).matmul(c.expand((5, 3))) + 0.1).sum(),
    }[name]
    gradients_agree(fn, base, a, row, col)


def softmax(x: Any, dim: int) -> Any:
    return torch.softmax(x, dim) if isinstance(x, torch.Tensor) else F.softmax(x, dim)


def log_softmax(x: Any, dim: int) -> Any:
    return torch.log_softmax(x, dim) if isinstance(x, torch.Tensor) else F.log_softmax(x, dim)


def amax(x: Any, dim: int) -> Any:
    return x.max(dim, keepdim=True).values if isinstance(x, torch.Tensor) else x.max_dim(dim)


def total(x: Any, dim: int) -> Any:
    return x.sum(dim, keepdim=True) if isinstance(x, torch.Tensor) else x.sum_dim(dim)


def where(cond: Any, x: Any, y: Any) -> Any:
    return torch.where(cond, x, y) if isinstance(x, torch.Tensor) else burn.where(cond, x, y)


def relu(x: Any) -> Any:
    return torch.relu(x) if isinstance(x, torch.Tensor) else F.relu(x)


def test_bad_arguments_raise_typed_errors_at_the_call(base: str) -> None:
    dev = f"{base}+fusion"
    x = burn.tensor(np.ones((2, 3), np.float32), device=dev) * 2.0  # pending
    with pytest.raises(ShapeError, match="mask_fill"):
        x.mask_fill(burn.tensor(np.ones((3, 2), bool), device=dev), 1.0)
    with pytest.raises(DTypeError, match="mask_fill"):
        x.mask_fill(x, 1.0)
    with pytest.raises(DTypeError, match="where"):
        burn.where(x, x, 0.0)
    with pytest.raises(ShapeError, match="matmul"):
        x.matmul(x)
    with pytest.raises(BurnIndexError, match="sum_dim"):
        x.sum_dim(2)
    with pytest.raises(DTypeError, match="bitwise_and"):
        x.bitwise_and(x)
    with pytest.raises(ShapeError, match="expand"):
        x.expand((4, 3))
    assert x._prim.value is None  # nothing ran
    same(x, torch.full((2, 3), 2.0))


def test_ops_on_a_tensor_whose_kernel_failed_raise_device_errors(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A result of a failed fused kernel, read by a later recorded op (fused elementwise,
    reduction, matmul), raises the DeviceError naming the failure at that call (it was a
    KeyError from the stream), as reading it does; the device keeps working."""
    dev = f"{base}+fusion"
    x = burn.tensor(np.ones((2, 3), np.float32), device=dev)
    failed = x.exp() * 2.0

    def fail(*args: Any) -> Any:
        raise burn.errors.AllocationError("fusion", "out of device memory")

    with monkeypatch.context() as patch:
        patch.setattr(stream, "run_block", fail)
        with pytest.raises(burn.errors.AllocationError):
            burn.sync(dev)
    w = burn.tensor(np.ones((3, 2), np.float32), device=dev)
    for use in (lambda t: t + 1.0, lambda t: t.exp(), lambda t: t.sum_dim(1),
                lambda t: t.matmul(w), lambda t: x * t, lambda t: t.reshape((3, 2))):
        with pytest.raises(DeviceError, match="out of device memory"):
            use(failed)
    same((x * 3.0).exp() + 1.0, (torch.ones(2, 3) * 3.0).exp() + 1.0)


def test_a_failed_head_spares_the_pending_records_not_reading_it(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """At the stream's length bound (`MAX_PENDING`) the blocks before the last run; where
    one fails, the records of the last block that read it carry its error and the others
    stay pending and get their values (they all failed with it before)."""
    dev = f"{base}+fusion"
    xd = np.linspace(-1, 1, 4, dtype=np.float32)
    wd = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    x, w = burn.tensor(xd, device=dev), burn.tensor(wd, device=dev)
    real, calls = stream.run_block, []

    def first_fails(*args: Any) -> Any:
        calls.append(args[1])
        if len(calls) == 1:
            raise burn.errors.AllocationError("fusion", "out of device memory")
        return real(*args)

    monkeypatch.setattr(stream, "MAX_PENDING", 8)
    a = x * 2.0 + 1.0  # the head: a block of shape [4]
    z = w * 3.0  # the last block, of shape [3, 4]: z does not read a, r does
    r = w + a
    for _ in range(3):
        z = z + 1.0
    with monkeypatch.context() as patch:
        patch.setattr(stream, "run_block", first_fails)
        with pytest.raises(burn.errors.AllocationError):
            _ = z + 1.0  # the 8th op: the head runs
    for failed in (a, r):
        with pytest.raises(DeviceError, match="out of device memory"):
            failed.to_numpy()
    tw = torch.from_numpy(wd)
    same(z, tw * 3.0 + 3.0)
    same(w + (x * 2.0 + 1.0), tw + (torch.from_numpy(xd) * 2.0 + 1.0))


def test_a_flush_drops_intermediates_after_their_last_block(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain the cpu runtime cuts into many blocks (sin is a library call there: a block of
    its own, its product another) keeps only the intermediates later blocks still read: each
    result is dropped once its last reader has run (all 120 stayed alive until the flush
    ended: 1 GiB for 8 MiB tensors). Values as the plain device's."""
    import weakref

    data = np.linspace(-3, 3, 4096, dtype=np.float32)
    x = burn.tensor(data, device=f"{base}+fusion")
    inner = x._bk.inner
    made: list[weakref.ref[Any]] = []
    alive: list[int] = []

    def watched(name: str) -> Callable[..., Any]:
        method = getattr(inner, name)

        def call(*args: Any) -> Any:
            alive.append(sum(ref() is not None for ref in made))
            out = method(*args)
            made.append(weakref.ref(out))
            return out
        return call

    for name in ("float_sin", "float_mul_scalar"):
        monkeypatch.setattr(inner, name, watched(name))
    y = x * 1.0
    for _ in range(60):
        y = y.sin() * 0.5
    got = y.numpy()
    want = burn.tensor(data, device=base)
    for _ in range(60):
        want = want.sin() * 0.5
    np.testing.assert_array_equal(got, want.numpy())
    if base == "cpu":  # (on GPU runtimes the chain is one fused kernel)
        assert len(alive) >= 100 and max(alive) <= 3, alive
