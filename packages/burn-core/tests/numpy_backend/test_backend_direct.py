"""Direct checks of the NumPy backend against PyTorch for the tricky semantics.

The frontend conformance suite covers every op; this file calls backend methods directly.
"""

from __future__ import annotations

import inspect
import math
import warnings

import ml_dtypes
import numpy as np
import pytest

from burn.backend.options import ConvOptions, PoolOptions
from burn.backend.protocol import Backend, Distribution
from burn.backends.numpy import NumpyBackend
from burn.device import Device
from burn.dtype import DType

torch = pytest.importorskip("torch")

B = NumpyBackend()
DEV = Device("numpy")
NAN = float("nan")


def t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


def check(ours: np.ndarray, ref: torch.Tensor, *, exact: bool = True, rtol: float = 1e-6,
          atol: float = 1e-7) -> None:
    """Shape and dtype first, then values (NaN equal to NaN)."""
    assert isinstance(ours, np.ndarray), type(ours)
    ref_np = ref.detach().numpy()
    assert ours.shape == ref_np.shape, (ours.shape, ref_np.shape)
    assert ours.dtype == ref_np.dtype, (ours.dtype, ref_np.dtype)
    if exact:
        np.testing.assert_array_equal(ours, ref_np)
    else:
        np.testing.assert_allclose(ours, ref_np, rtol=rtol, atol=atol, equal_nan=True)


# --- completeness -----------------------------------------------------------------------------
def test_no_abstract_method_left() -> None:
    assert not NumpyBackend.__abstractmethods__
    backend = NumpyBackend()
    assert backend.name == "numpy"
    abstract = {n for n, v in inspect.getmembers(Backend) if getattr(v, "__isabstractmethod__", 0)}
    for name in abstract:
        assert not getattr(getattr(backend, name), "__isabstractmethod__", False), name


def test_device_dtype_shape() -> None:
    x = B.float_full((2, 3), 1.5, DType.float32, DEV)
    assert B.shape(x) == (2, 3)
    assert B.dtype(x) is DType.float32
    assert B.device_of(x) == DEV
    assert B.device_of(x) is B.device_of(B.int_full((1,), 3, DType.int8, DEV))
    assert B.dtype(B.float_full((1,), 1.0, DType.bfloat16, DEV)) is DType.bfloat16
    assert B.memory_stats() == {}


def test_zero_d_results_are_arrays() -> None:
    z = np.asarray(np.float32(2.0))
    zi = np.asarray(np.int32(3))
    for r in (B.float_add(z, z), B.float_mul_scalar(z, 2.0), B.float_exp(z), B.float_sum(z),
              B.float_equal_elem(z, 2.0), B.int_add_scalar(zi, 1), B.int_sum(zi),
              B.float_max(np.arange(3.0)), B.bool_any(np.array([True])), B.float_sign(z)):
        assert type(r) is np.ndarray


# --- elementwise --------------------------------------------------------------------------------
def test_remainder_signs() -> None:
    a = np.array([-7.5, -7.0, 7.0, 7.5, 0.0, -0.0], np.float32)
    b = np.array([2.0, -2.0, -2.0, 2.0, -3.0, 3.0], np.float32)
    check(B.float_remainder(a, b), torch.remainder(t(a), t(b)))
    check(B.float_remainder_scalar(a, -2.0), torch.remainder(t(a), -2.0))
    check(B.float_fmod(a, b), torch.fmod(t(a), t(b)))
    check(B.float_fmod_scalar(a, -2.0), torch.fmod(t(a), -2.0))
    ai = np.array([-7, -7, 7, 7, 0], np.int32)
    bi = np.array([2, -2, -2, 2, 5], np.int32)
    check(B.int_remainder(ai, bi), torch.remainder(t(ai), t(bi)))
    check(B.int_remainder_scalar(ai, -3), torch.remainder(t(ai), -3))


def test_int_floor_division() -> None:
    a = np.array([-7, -7, 7, 7, -1, 0], np.int64)
    b = np.array([2, -2, -2, 2, 3, 4], np.int64)
    check(B.int_div(a, b), torch.floor_divide(t(a), t(b)))
    check(B.int_div_scalar(a, -3), torch.floor_divide(t(a), -3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        B.int_div(a, np.zeros_like(a))  # torch raises; we stay quiet and do not crash
        B.int_remainder(a, np.zeros_like(a))


def test_float_specials_quiet_and_torch_like() -> None:
    x = np.array([NAN, -np.inf, -2.5, -0.5, 0.0, 0.5, 1.5, 2.5, np.inf], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(B.float_sign(x), torch.sign(t(x)))
        check(B.float_round(x), torch.round(t(x)))
        check(B.float_clamp(x, -1.0, 1.0), torch.clamp(t(x), -1.0, 1.0))
        check(B.float_clamp(x, None, 0.0), torch.clamp(t(x), max=0.0))
        check(B.float_div(x, np.zeros_like(x)), t(x) / 0.0)
        check(B.float_log(x), torch.log(t(x)), exact=False)
        check(B.float_sub(x, x), t(x) - t(x))
        check(B.float_sum(x), torch.sum(t(x)))
        check(B.float_recip(x), torch.reciprocal(t(x)), exact=False)
        check(B.float_atanh(x), torch.atanh(t(x)), exact=False)


def test_erf_matches_torch() -> None:
    x = np.concatenate([np.linspace(-7, 7, 2001), [0.0, 1e-30, -1e-9, 0.84375, 1.25, 2.857,
                                                  6.0, NAN, np.inf, -np.inf]])
    check(B.float_erf(x), torch.erf(t(x)), exact=False, rtol=1e-14, atol=1e-16)
    x32 = x.astype(np.float32)
    check(B.float_erf(x32), torch.erf(t(x32)), exact=False, rtol=1e-6, atol=1e-7)


def test_scalar_takes_tensor_dtype() -> None:
    x = np.array([0.1, 0.2, 1e-8], np.float32)
    check(B.float_lower_elem(x, 0.1), t(x) < 0.1)
    check(B.float_equal_elem(x, 0.1), t(x) == 0.1)
    check(B.float_greater_equal_elem(x, 0.2), t(x) >= 0.2)
    check(B.float_add_scalar(x, 0.1), t(x) + 0.1)
    for p in (0.5, 2.0, 3.0, -0.5, -1.0, -2.0, 1.7):
        check(B.float_powf_scalar(x, p), t(x) ** p, exact=False)


def test_int_scalar_wraps_and_bitwise() -> None:
    u = np.array([0, 1, 200], np.uint8)
    check(B.int_add_scalar(u, -1), t(u) + (-1))
    check(B.int_mul_scalar(u, 2), t(u) * 2)
    a = np.array([-8, -1, 5, 127], np.int8)
    check(B.int_bitwise_right_shift(a, np.full(4, 1, np.int8)), t(a) >> 1)
    check(B.int_bitwise_not(a), ~t(a))
    check(B.int_abs(a), torch.abs(t(a)))
    check(B.int_clamp(a, -1000, 3), torch.clamp(t(a), -128, 3))
    check(B.int_powi_scalar(np.array([2, -3, 0], np.int64), 3), t(np.array([2, -3, 0])) ** 3)


def test_bool_ops() -> None:
    a = np.array([True, False, True, False])
    b = np.array([True, True, False, False])
    check(B.bool_and(a, b), t(a) & t(b))
    check(B.bool_xor(a, b), t(a) ^ t(b))
    check(B.bool_not(a), ~t(a))
    check(B.bool_equal(a, b), t(a) == t(b))


# --- casts ----------------------------------------------------------------------------------------
def test_casts() -> None:
    x = np.array([-2.7, -0.5, 0.5, 2.7, 3.0], np.float32)
    check(B.float_into_int(x, DType.int64), t(x).to(torch.int64))
    check(B.float_into_int(x.astype(ml_dtypes.bfloat16), DType.int32),
          t(x).to(torch.bfloat16).to(torch.int32))
    check(B.int_cast(np.array([300, -1], np.int64), DType.uint8),
          t(np.array([300, -1], np.int64)).to(torch.uint8))
    check(B.bool_into_float(np.array([True, False]), DType.float16),
          torch.tensor([1.0, 0.0], dtype=torch.float16))


# --- low precision ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [DType.float16, DType.bfloat16])
def test_low_precision(dtype: DType) -> None:
    tdt = torch.float16 if dtype is DType.float16 else torch.bfloat16
    rng = np.random.default_rng(0)
    x32 = rng.standard_normal((4, 5)).astype(np.float32)
    x = B.float_from_data(x32.astype(dtype.numpy), DEV)
    back = B.float_into_data(x)
    assert back.dtype == dtype.numpy
    tx = torch.from_numpy(x32).to(tdt)
    np.testing.assert_array_equal(back.astype(np.float32), tx.float().numpy())

    def same(ours: np.ndarray, ref: torch.Tensor, tol: float = 1e-2) -> None:
        assert ours.dtype == dtype.numpy and ours.shape == tuple(ref.shape)
        np.testing.assert_allclose(ours.astype(np.float32), ref.float().numpy(), rtol=tol,
                                   atol=tol)

    same(B.float_add(x, x), tx + tx, 0)
    same(B.float_mul_scalar(x, 1.5), tx * 1.5, 0)
    same(B.float_add_scalar(x, 0.1), tx + 0.1, 0)
    same(B.float_exp(x), torch.exp(tx), 0)
    same(B.float_clamp(x, -0.5, 0.5), torch.clamp(tx, -0.5, 0.5), 0)
    same(B.float_mask_fill(x, x32 > 0, -math.inf), tx.masked_fill(t(x32 > 0), -math.inf), 0)
    same(B.float_matmul(x, B.float_swap_dims(x, 0, 1)), tx @ tx.T)
    same(B.float_sum_dim(x, 1), tx.sum(1, keepdim=True))
    same(B.float_mean_dim(x, 0), tx.mean(0, keepdim=True))
    same(B.float_cumsum(x, 1), tx.cumsum(1))
    same(B.float_erf(x), torch.erf(tx))
    values, idx = B.float_sort_with_indices(x, 1, True)
    ref_v, ref_i = torch.sort(tx, dim=1, descending=True, stable=True)
    same(values, ref_v, 0)
    check(idx, ref_i)
    v, i = B.float_max_dim_with_indices(x, 0)
    same(v, tx.max(0, keepdim=True).values, 0)
    assert i.dtype == np.int64
    same(B.float_random((3,), Distribution("normal"), dtype, DEV), torch.zeros(3, dtype=tdt), 10)


# --- layout -------------------------------------------------------------------------------------
def test_unfold() -> None:
    x = np.arange(2 * 10 * 3, dtype=np.float32).reshape(2, 10, 3)
    for size, step in [(3, 1), (3, 2), (4, 3), (10, 1), (1, 5)]:
        check(B.float_unfold(x, 1, size, step), t(x).unfold(1, size, step))
    xi = np.arange(7, dtype=np.int32)
    check(B.int_unfold(xi, 0, 2, 2), t(xi).unfold(0, 2, 2))


def test_layout_on_views() -> None:
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    p = B.float_permute(x, (2, 0, 1))
    check(B.float_reshape(B.float_swap_dims(p, 0, 2), (12, 2)),
          t(x).permute(2, 0, 1).transpose(0, 2).reshape(12, 2))
    check(B.float_flip(p, (0, 2)), t(x).permute(2, 0, 1).flip((0, 2)))
    check(B.float_expand(np.ones((3, 1)), (2, 3, 4)), torch.ones(3, 1).expand(2, 3, 4).double())
    check(B.float_repeat_dim(p, 1, 3), t(x).permute(2, 0, 1).repeat(1, 3, 1))
    check(B.bool_cat([x > 3, x < 2], 2), torch.cat([t(x) > 3, t(x) < 2], 2))
    check(B.float_add(p, p), t(x).permute(2, 0, 1) * 2)


# --- indexing -----------------------------------------------------------------------------------
def test_slice_negative_steps() -> None:
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    cases = [
        [slice(4, None, -1), slice(0, 6, 2)],
        [slice(3, 0, -2), slice(5, None, -3)],
        [slice(1, 4, 1)],
        [slice(0, 0, 1), slice(5, None, -1)],
    ]
    for sl in cases:
        ref = np.ascontiguousarray(x[tuple(sl)])
        ours = B.float_slice(x, sl)
        assert ours.shape == ref.shape
        np.testing.assert_array_equal(ours, ref)
    ref = t(x).clone()
    ref[1:4:2, ::2] = -1.0  # torch has no negative steps; a positive one here
    out = B.float_slice_assign(x, [slice(1, 4, 2), slice(0, 6, 2)], np.full((2, 3), -1.0,
                                                                                   np.float32))
    check(out, ref)
    assert x[1, 0] == 6  # the input is untouched
    rev = B.float_slice_assign(x, [slice(4, None, -1)], np.zeros((5, 6), np.float32) + x[::-1])
    np.testing.assert_array_equal(rev, x)


def test_select_and_select_assign_duplicates() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([2, 0, 2, 2], np.int64)
    check(B.float_select(x, 1, idx), torch.index_select(t(x), 1, t(idx)))
    vals = np.ones((3, 4), np.float32)
    check(B.float_select_assign(x, 1, idx, vals), t(x).index_add(1, t(idx), t(vals)))
    xi = np.arange(12, dtype=np.int32).reshape(4, 3)
    vi = np.arange(12, dtype=np.int32).reshape(4, 3)
    check(B.int_select_assign(xi, 0, idx, vi), t(xi).index_add(0, t(idx), t(vi)))
    assert x[0, 2] == 2.0


def test_gather_scatter() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    idx = np.array([[0, 4, 4], [1, 1, 1]], np.int64)  # smaller than x in both dims
    check(B.float_gather(1, x, idx), torch.gather(t(x), 1, t(idx)))
    idx0 = np.array([[2, 0, 1, 2, 2]], np.int64)
    check(B.float_gather(0, x, idx0), torch.gather(t(x), 0, t(idx0)))
    vals = rng.standard_normal((3, 5)).astype(np.float32)
    check(B.float_scatter(1, x, idx, vals, "add"), t(x).scatter_add(1, t(idx), t(vals)),
          exact=False)
    uniq = np.array([[3, 0, 1], [4, 2, 0]], np.int64)
    check(B.float_scatter(1, x, uniq, vals, "assign"), t(x).scatter(1, t(uniq), t(vals)))
    xi = np.zeros((2, 3), np.int64)
    check(B.int_scatter(0, xi, np.array([[1, 1, 1], [1, 0, 1]]), np.ones((2, 3), np.int64), "add"),
          torch.zeros(2, 3, dtype=torch.int64).scatter_add(
              0, torch.tensor([[1, 1, 1], [1, 0, 1]]), torch.ones(2, 3, dtype=torch.int64)))
    check(B.bool_scatter(0, np.zeros(4, bool), np.array([3, 1]), np.array([True, True])),
          torch.zeros(4, dtype=torch.bool).scatter(0, torch.tensor([3, 1]),
                                                   torch.tensor([True, True])))


def test_masks_and_argwhere() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    m = np.array([True, False, True])
    check(B.float_mask_fill(x, m, -1.5), t(x).masked_fill(t(m), -1.5))
    check(B.float_mask_where(x, m, np.full((2, 3), 9.0, np.float32)),
          torch.where(t(m), torch.full((2, 3), 9.0), t(x)))
    check(B.int_mask_fill(np.arange(3, dtype=np.uint8), m, 7),
          t(np.arange(3, dtype=np.uint8)).masked_fill(t(m), 7))
    b = np.array([[True, False], [False, True], [True, True]])
    check(B.bool_argwhere(b), torch.argwhere(t(b)))


# --- reductions ---------------------------------------------------------------------------------
def test_int_reductions_widen_to_int64() -> None:
    x = np.array([[100, 100, 100], [-5, 7, 9]], np.int8)
    check(B.int_sum(x), torch.sum(t(x)))
    check(B.int_sum_dim(x, 1), torch.sum(t(x), 1, keepdim=True))
    check(B.int_prod_dim(x, 0), torch.prod(t(x), 0, keepdim=True))
    check(B.int_cumsum(x, 1), torch.cumsum(t(x), 1))
    check(B.int_cumprod(x, 0), torch.cumprod(t(x), 0))
    check(B.int_max(x), torch.max(t(x)))


def test_argmax_and_max_dim_ties() -> None:
    x = np.array([[1.0, 3.0, 3.0, 0.0], [NAN, 2.0, NAN, 2.0], [5.0, 5.0, 5.0, 5.0]], np.float32)
    check(B.float_argmax(x, 1), torch.argmax(t(x), 1, keepdim=True))
    check(B.float_argmin(x, 1), torch.argmin(t(x), 1, keepdim=True))
    for ours, ref in [(B.float_max_dim_with_indices(x, 1), torch.max(t(x), 1, keepdim=True)),
                      (B.float_min_dim_with_indices(x, 1), torch.min(t(x), 1, keepdim=True))]:
        check(ours[0], ref.values)
        check(ours[1], ref.indices)
    xi = np.array([[2, 7, 7], [1, 1, 0]], np.int32)
    check(B.int_argmax(xi, 1), torch.argmax(t(xi), 1, keepdim=True))
    check(B.int_min_dim_with_indices(xi, 1)[1], torch.min(t(xi), 1, keepdim=True).indices)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_ties_and_nan(op: str) -> None:
    x = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0, 0.0],
                  [2.0, NAN, 5.0, NAN, 1.0, 7.0, -1.0],
                  [4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]], np.float32)
    ref = getattr(torch, op)(t(x), 1)
    values, idx = getattr(B, f"float_{op}")(x, 1)
    check(values, ref.values)
    check(idx, ref.indices)
    values, idx = getattr(B, f"float_{op}")(np.ascontiguousarray(x.T), 0)
    ref = getattr(torch, op)(t(x.T), 0)
    check(values, ref.values)
    check(idx, ref.indices)
    xi = np.array([3, 1, 3, 5, 5, 1, 1], np.int64)
    ref = getattr(torch, op)(t(xi), 0)
    values, idx = getattr(B, f"int_{op}")(xi, 0)
    check(values, ref.values)
    check(idx, ref.indices)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_with_nan(descending: bool) -> None:
    x = np.array([[3.0, NAN, 1.0, 3.0, -np.inf, NAN, 1.0, 0.0, -0.0, np.inf, 3.0]], np.float32)
    ref_v, ref_i = torch.sort(t(x), dim=1, descending=descending, stable=True)
    values, idx = B.float_sort_with_indices(x, 1, descending)
    check(values, ref_v)
    check(idx, ref_i)
    xi = np.array([[2, 1, 2, 0, 1, 2], [5, 5, 5, 5, 5, 5]], np.int32).T  # non-contiguous
    ref_v, ref_i = torch.sort(t(xi), dim=0, descending=descending, stable=True)
    values, idx = B.int_sort_with_indices(xi, 0, descending)
    check(values, ref_v)
    check(idx, ref_i)


def test_bool_reductions() -> None:
    b = np.array([[True, False], [True, True]])
    check(B.bool_any_dim(b, 1), torch.any(t(b), 1, keepdim=True))
    check(B.bool_all_dim(b, 0), torch.all(t(b), 0, keepdim=True))
    check(B.bool_all(b), torch.all(t(b)))


# --- creation / random --------------------------------------------------------------------------
def test_random_seeded_and_in_range() -> None:
    B.seed(7)
    a = B.float_random((1000,), Distribution("uniform", -2.0, 3.0), DType.float32, DEV)
    B.seed(7)
    b = B.float_random((1000,), Distribution("uniform", -2.0, 3.0), DType.float32, DEV)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.float32 and a.min() >= -2.0 and a.max() < 3.0
    n = B.float_random((20000,), Distribution("normal", 1.0, 2.0), DType.float64, DEV)
    assert n.dtype == np.float64 and abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    bern = B.float_random((20000,), Distribution("bernoulli", 0.3), DType.float32, DEV)
    assert set(np.unique(bern)) <= {0.0, 1.0} and abs(bern.mean() - 0.3) < 0.02
    r = B.int_random((1000,), -3, 4, DType.int8, DEV)
    assert r.dtype == np.int8 and r.min() == -3 and r.max() == 3
    check(B.int_arange(2, 11, 3, DType.int32, DEV), torch.arange(2, 11, 3, dtype=torch.int32))
    check(B.int_full((2,), 300, DType.uint8, DEV), torch.full((2,), 300 % 256, dtype=torch.uint8))


def test_from_data_copies() -> None:
    a = np.arange(4.0)
    p = B.float_from_data(a, DEV)
    a[0] = 9.0
    assert p[0] == 0.0
    out = B.float_into_data(B.float_permute(np.arange(6.0).reshape(2, 3), (1, 0)))
    assert out.flags.c_contiguous and out.flags.owndata


# --- module ops (delegations) -------------------------------------------------------------------
def test_module_ops_wired() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    opts = ConvOptions(stride=(1, 1), padding=(1, 1), dilation=(1, 1))
    check(B.conv(x, w, None, opts), torch.nn.functional.conv2d(t(x), t(w), padding=1),
          exact=False, rtol=1e-5, atol=1e-5)
    pool = PoolOptions(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1))
    v, i = B.max_pool_with_indices(x, pool)
    rv, ri = torch.nn.functional.max_pool2d(t(x), 2, return_indices=True)
    check(v, rv)
    check(i, ri)
    emb = B.embedding(np.arange(12, dtype=np.float32).reshape(4, 3), np.array([[3, 0]]))
    check(emb, torch.nn.functional.embedding(torch.tensor([[3, 0]]),
                                             torch.arange(12.0).reshape(4, 3)))


def test_protocol_defaults_run_on_numpy() -> None:
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, 4, 5)).astype(np.float32) for _ in range(3))
    mask = rng.random((4, 4)) > 0.7
    np.fill_diagonal(mask, False)
    ref = torch.nn.functional.scaled_dot_product_attention(t(q), t(k), t(v),
                                                           attn_mask=~t(mask))
    check(B.attention(q, k, v, mask, None, False), ref, exact=False, rtol=1e-5, atol=1e-6)
    ref = torch.nn.functional.scaled_dot_product_attention(t(q), t(k), t(v), is_causal=True)
    check(B.attention(q, k, v, None, None, True), ref, exact=False, rtol=1e-5, atol=1e-6)
    x = np.array([[-np.inf, 0.0, 1.0], [1000.0, -1000.0, 0.0]], np.float32)
    check(B.softmax(x, 1), torch.softmax(t(x), 1), exact=False)
    check(B.log_softmax(x, 1), torch.log_softmax(t(x), 1), exact=False)
    check(B.gelu(x, "none"), torch.nn.functional.gelu(t(x)), exact=False)
    check(B.sigmoid(x), torch.sigmoid(t(x)), exact=False)
