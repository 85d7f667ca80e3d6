"""The reduce fuser's GPU schedule (`burn.fusion.reduce_gpu`): a group of units per row, several
rows per cube for short rows, partials combined in shared memory or planes. Fused against
unfused and against torch in float64 on wgpu (Mesa's llvmpipe here) over row lengths that take
every group size, special values, ties and strided rows; the CUDA C of the same kernels is
generated, and compiled with nvcc where it is installed."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, LaunchCounter, check

import burn
import burn.fusion.reduce as reduce
from burn.fusion import reduce_gpu

pytestmark = pytest.mark.skipif("wgpu" not in DEVICES, reason="no wgpu adapter")
torch.set_num_threads(1)

#: Row lengths: a unit per row (2, 3), groups of 4, 16, 32, 64 (a tree on wgpu, planes on
#: CUDA), 256 units (the whole cube, planes: 4 and 9 columns per unit held in registers, then
#: a loop over 17 with a ragged last step).
LENGTHS = [2, 3, 10, 33, 100, 256, 1000, 2200, 4099]


def _fused(fn: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, *data: np.ndarray
           ) -> tuple[list[burn.Tensor], int, list[burn.Tensor]]:
    """`fn` on wgpu+fusion (results, kernels launched) and on plain wgpu."""
    burn.sync("wgpu+fusion")
    counter = LaunchCounter(monkeypatch, "wgpu")
    out = fn(*(burn.tensor(d, device="wgpu+fusion") for d in data))
    outs = list(out) if isinstance(out, tuple) else [out]
    burn.sync("wgpu+fusion")
    launches = counter.take()
    monkeypatch.undo()
    plain = fn(*(burn.tensor(d, device="wgpu") for d in data))
    return outs, launches, list(plain) if isinstance(plain, tuple) else [plain]


def _same(got: burn.Tensor, plain: burn.Tensor, rtol: float = 1e-6, atol: float = 1e-7
          ) -> None:
    """Fused equals unfused (shape, dtype, then values)."""
    a, b = got.to_numpy(), plain.to_numpy()
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def test_group_sizes() -> None:
    """About four columns per unit, a power of two up to the cube; the columns unrolled up
    to 16 per unit."""
    assert [reduce_gpu.group_for(n) for n in LENGTHS] == [1, 1, 4, 16, 32, 64, 256, 256, 256]
    assert [reduce_gpu.chunks(n, reduce_gpu.group_for(n)) for n in LENGTHS] == [
        2, 3, 3, 3, 4, 4, 4, 9, None]
    # planes: whole 32-unit warps on CUDA; on WebGPU whole subgroups of any size up to 128
    cuda = SimpleNamespace(plane_size=32, target="cuda")
    web = SimpleNamespace(plane_size=32, target="wgsl")
    assert [reduce_gpu.planes(cuda, g) for g in (16, 32, 64)] == [False, True, True]
    assert [reduce_gpu.planes(web, g) for g in (32, 64, 128, 256)] == [False, False, True, True]
    assert not reduce_gpu.planes(SimpleNamespace(plane_size=0, target="cuda"), 64)
    assert all(reduce_gpu.UNITS % reduce_gpu.group_for(n) == 0 for n in range(2, 5000, 7))


@pytest.mark.parametrize("n", LENGTHS)
def test_softmax_and_layer_norm_rows(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Softmax and layer norm from primitives over 5 rows (a cube's rows partly filled): one
    kernel each, equal to the unfused kernels and to torch in float64."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((5, n)) * 3 + 1).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)

    def softmax(t: Any) -> Any:
        e = (t - t.max_dim(1)).exp()
        return e / e.sum_dim(1)

    def norm(t: Any, g: Any) -> Any:
        c = t - t.mean_dim(1)
        return c / ((c * c).mean_dim(1) + 1e-5).sqrt() * g

    for fn, args, want in (
            (softmax, (x,), torch.softmax(torch.from_numpy(x).double(), 1)),
            (norm, (x, w), torch.nn.functional.layer_norm(
                torch.from_numpy(x).double(), (n,), torch.from_numpy(w).double()))):
        (got,), launches, (plain,) = _fused(fn, monkeypatch, *args)
        assert launches == 1
        check(got, want.float(), rtol=2e-5, atol=2e-6)
        _same(got, plain, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("n", [3, 33, 256, 1000])
def test_every_reduction_kind(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sum, mean, max, min and their indices of one input in one kernel, with elementwise
    work on read and on write."""
    rng = np.random.default_rng(10 + n)
    x = rng.standard_normal((7, n)).astype(np.float32)

    def kinds(t: Any) -> tuple[Any, ...]:
        u = t * 2.0 - 1.0
        hi, at_hi = u.max_dim_with_indices(1)
        lo, at_lo = u.min_dim_with_indices(1)
        return u.sum_dim(1) + 1.0, u.mean_dim(1), hi.exp(), lo, at_hi, at_lo

    outs, launches, plain = _fused(kinds, monkeypatch, x)
    assert launches == 1
    u = torch.from_numpy(x).double() * 2.0 - 1.0
    wants = (u.sum(1, keepdim=True) + 1.0, u.mean(1, keepdim=True),
             u.amax(1, keepdim=True).exp(), u.amin(1, keepdim=True),
             u.argmax(1, keepdim=True), u.argmin(1, keepdim=True))
    for got, want, same in zip(outs, wants, plain, strict=True):
        check(got, want.float() if want.is_floating_point() else want, rtol=1e-5, atol=1e-5)
        _same(got, same, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [3, 40, 1000])
def test_special_values_and_ties(n: int) -> None:
    """A NaN wins max / min (the first NaN's index); +-inf; equal maxima take the first
    index, also where a later unit of the group holds the earlier one; rows of -0.0 and of
    -inf."""
    rows = np.tile(np.linspace(-1, 1, n, dtype=np.float32), (6, 1))
    rows[0, n // 2] = rows[0, n - 1] = np.nan  # the first NaN wins
    rows[1, n - 1] = np.inf
    rows[1, 1] = -np.inf
    rows[2, :] = 0.5
    rows[2, 2] = rows[2, n - 1] = 7.0  # ties in different units of the group
    rows[3, :] = -0.0
    rows[4, :] = -np.inf
    rows[5, 0] = np.nan
    t = torch.from_numpy(rows)
    x = burn.tensor(rows, device="wgpu+fusion")
    hi, at_hi = (x + 0.0).max_dim_with_indices(1)
    lo, at_lo = (x + 0.0).min_dim_with_indices(1)
    top, low, total = (x * 1.0).max_dim(1), (x * 1.0).min_dim(1), (x * 1.0).sum_dim(1)
    check(hi, t.amax(1, keepdim=True))
    check(lo, t.amin(1, keepdim=True))
    check(top, t.amax(1, keepdim=True))
    check(low, t.amin(1, keepdim=True))
    check(total, t.sum(1, keepdim=True))
    np.testing.assert_array_equal(at_hi.to_numpy(), t.argmax(1, keepdim=True).numpy())
    np.testing.assert_array_equal(at_lo.to_numpy(), t.argmin(1, keepdim=True).numpy())
    # a sum of -0.0 is +0.0, as torch's (allclose does not see the sign)
    assert np.signbit(total.to_numpy()[3, 0]) == np.signbit(t.sum(1)[3].item()) == 0
    plain = burn.tensor(rows, device="wgpu")
    _same(total, (plain * 1.0).sum_dim(1))
    assert np.signbit(low.to_numpy()[3, 0]) == np.signbit((plain * 1.0).min_dim(1).to_numpy()
                                                         [3, 0])


def test_strided_rows_and_broadcast_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reductions along dims other than the last (a row's elements strides apart) and over
    a transposed view, with a broadcast input of one value per row."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 6, 9)).astype(np.float32)
    s = rng.standard_normal((1, 6, 9)).astype(np.float32)
    tx, ts = torch.from_numpy(x).double(), torch.from_numpy(s).double()
    (got,), launches, (plain,) = _fused(
        lambda a, b: ((a * b).exp() / (a * b).exp().sum_dim(0)), monkeypatch, x, s)
    assert launches == 1
    check(got, ((tx * ts).exp() / (tx * ts).exp().sum(0, keepdim=True)).float())
    _same(got, plain)
    (got,), _, (plain,) = _fused(lambda a: a.swap_dims(0, 2).max_dim(2) - 1.0, monkeypatch, x)
    check(got, (tx.transpose(0, 2).amax(2, keepdim=True) - 1.0).float())
    _same(got, plain)
    # first occurrences along dim 0 of 300 (a row's units apart in the cube), a NaN winning
    ties = np.tile(np.array([[3.0], [1.0], [2.0]], np.float32), (100, 24))  # [300, 24]
    ties[250, 5] = np.nan
    ties[7, 9] = ties[290, 9] = -5.0
    tt = torch.from_numpy(ties)
    (low, at), _, _ = _fused(lambda a: (a * 1.0).min_dim_with_indices(0), monkeypatch, ties)
    check(low, tt.amin(0, keepdim=True))
    np.testing.assert_array_equal(at.to_numpy(), tt.argmin(0, keepdim=True).numpy())


def _signatures(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The GPU reduce signatures a softmax, a layer norm and an argmax build on wgpu, and an
    argmin along the first dim."""
    seen: list[Any] = []
    build = reduce._build

    def spy(signature: Any) -> Any:
        seen.append(signature)
        return build(signature)

    monkeypatch.setattr(reduce, "_build", spy)
    monkeypatch.setattr(reduce, "_KERNELS", {})
    rng = np.random.default_rng(4)
    for n in (10, 256, 4099):
        x = burn.tensor(rng.standard_normal((3, n)).astype(np.float32), device="wgpu+fusion")
        e = (x - x.max_dim(1)).exp()
        c = x - x.mean_dim(1)
        results = [e / e.sum_dim(1), c / ((c * c).mean_dim(1) + 1e-5).sqrt(),
                   *(x * 2.0).max_dim_with_indices(1)]
        for r in results:
            r.to_numpy()
    columns = burn.tensor(rng.standard_normal((300, 24)).astype(np.float32),
                          device="wgpu+fusion")
    (columns * 2.0).min_dim_with_indices(0)[1].to_numpy()  # rows strided: units spread
    return seen


def _float64(value: Any) -> Any:
    """A signature with its float32 dtype ids made float64's."""
    if isinstance(value, tuple):
        return tuple(_float64(v) for v in value)
    return id(burn.float64) if value == id(burn.float32) else value


def test_kernels_generate_cuda_source(monkeypatch: pytest.MonkeyPatch,
                                      tmp_path: Path) -> None:
    """The same kernels as CUDA C, with and without planes, and in float64; nvcc compiles
    (for sm_90, where it is installed) the 256-long rows' kernels by planes, in float32 and
    float64, the short rows' and the strided rows' by a tree (only the launch needs a
    device)."""
    from burn_cube.codegen import generate

    signatures = list(dict.fromkeys(_signatures(monkeypatch)))
    assert {s[-1] for s in signatures} == {(4, False, 3, 1), (64, False, 4, 1),
                                           (256, True, None, 1), (128, False, 3, 2)}
    compiled = 0
    for signature in signatures:
        group, _, chunks, spread = signature[-1]
        for plane, wide in ((False, False), (True, False), (True, True)):
            if plane and spread != 1 and not wide:
                continue  # (spread rows combine without planes)
            plane = plane and spread == 1
            body = _float64(signature[:-1]) if wide else signature[:-1]
            kernel = reduce._build((*body, (group, plane and group >= 32, chunks, spread)))
            source = generate(kernel.kernel, "cuda")
            assert "__global__" in source and "__syncthreads()" in source
            assert ("double" in source) == wide
            # float64 partials combine in the tree
            assert ("plane" in kernel.kernel.features) == (plane and group >= 32 and not wide)
            if shutil.which("nvcc") is None or (group, plane) not in (
                    (64, True), (4, False), (128, False)):
                continue
            path = tmp_path / f"k{compiled}.cu"
            path.write_text(source)
            proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", "-o",
                                   str(tmp_path / "k.o"), str(path)],
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr
            compiled += 1


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_wide_and_half_rows(dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """float64 partials combine in the shared-memory tree, float16 ones (summed in float32)
    by planes; 300-long rows, a group of 128 units."""
    if not burn.Device("wgpu").backend.supports(getattr(burn, dtype)):
        pytest.skip(f"{dtype} is not held on this adapter")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((6, 300)).astype(np.float32)

    def kinds(t: Any) -> tuple[Any, ...]:
        u = t.cast(getattr(burn, dtype)) * 2.0
        e = (u - u.max_dim(1)).exp()
        return e / e.sum_dim(1), u.min_dim(1), u.mean_dim(1)

    outs, launches, plain = _fused(kinds, monkeypatch, x)
    assert launches <= 2  # the cast, then the block (or one kernel with it)
    u = torch.from_numpy(x).to(getattr(torch, dtype)) * 2.0
    acc = u.double()
    wants = (torch.softmax(acc, 1), acc.amin(1, keepdim=True), acc.mean(1, keepdim=True))
    tol = 1e-12 if dtype == "float64" else 2e-3
    for got, want, same in zip(outs, wants, plain, strict=True):
        check(got, want.to(u.dtype), rtol=tol, atol=tol)
        _same(got, same, rtol=tol, atol=tol)
