"""The cube backends' cross entropy kernels (`burn.backends.cube.loss_rows`): a unit per row
(cpu and wgpu), one unit walking every row (small "sum" / "mean", cpu) and one cube of units
walking rows ``u, u + units, ...`` (small "sum" / "mean", wgpu). Forward and logit
gradients against torch (float64 autograd) for every reduction, with and without class
weights, ignore_index and label smoothing, over non-contiguous logits, int32 / int64 targets,
NaN / inf logits, NaN / inf output gradients (ignored rows stay 0), all-ignored batches and
bad targets, rows longer than the partials' lanes;
the launches per call; on wgpu, a "sum" / "mean" of up to `GPU_CUBE_ROWS` rows in one cube
(several rows a unit past `GPU_CUBE_UNITS` rows) where a unit's rows hold at most
`GPU_CLASSES` logits, else the rows kernels with their totals in one cube (no unit adds up
every row), with NaN / inf, all-ignored batches, class weights summing to 0 and float16 /
bfloat16 logits at those sizes; long or many rows and empty batches the composite."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF
from cube_testing import backend as _backend
from cube_testing import upload_view as _up

import burn
from burn.backend.protocol import Backend
from burn.backends.cube import loss_rows
from burn.backends.cube.backend import CudaBackend
from burn.backends.cube.elementwise import CUBE_DIM
from burn.backends.cube.tensor import host_array
from burn.dtype import DType
from burn.errors import BurnIndexError
from burn_cube.kernel import IRKernel

IGNORE = -100
CASES = list(itertools.product(("mean", "sum", "none"), (0.0, 0.25), (False, True)))
#: per path: (device, `loss_rows.LOOPED_ELEMENTS`, `loss_rows.GPU_CUBE_ROWS`): the rows
#: kernels, or for these small inputs' "sum" / "mean" one unit (cpu) or one cube (wgpu)
#: (and where CUDA is, cuda's rows and cube kernels: the cube combines within warps first)
PATHS = {"rows": ("cpu", 0, 0), "looped": ("cpu", loss_rows.LOOPED_ELEMENTS, 0),
         "wgpu": ("wgpu", 0, 0), "wgpu-cube": ("wgpu", 0, loss_rows.GPU_CUBE_ROWS),
         **({"cuda": ("cuda", 0, 0), "cuda-cube": ("cuda", 0, loss_rows.GPU_CUBE_ROWS)}
            if CudaBackend.unavailable_reason() is None else {})}


@pytest.fixture(params=sorted(PATHS))
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test on the rows kernels and the one-launch kernels of the cpu and of wgpu."""
    _, cpu, gpu = PATHS[request.param]
    monkeypatch.setattr(loss_rows, "LOOPED_ELEMENTS", cpu)
    monkeypatch.setattr(loss_rows, "GPU_CUBE_ROWS", gpu)
    return str(request.param)


def _device(path: str) -> str:
    return PATHS[path][0]


def _case(rng: np.random.Generator, m: int, c: int, dtype: Any
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(logits [m, c], int64 targets with some ignored, positive class weights [c])."""
    x = (rng.standard_normal((m, c)) * 3).astype(dtype)
    t = rng.integers(0, c, m)
    t[::3] = IGNORE
    return x, t, rng.uniform(0.2, 2.0, c).astype(dtype)


def _torch(x: np.ndarray, t: np.ndarray, w: np.ndarray | None, smoothing: float,
           reduction: str, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """torch's (loss, logit gradient for output gradient g), computed in float64."""
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    tw = None if w is None else torch.tensor(w.astype(np.float64))
    loss = tF.cross_entropy(tx, torch.tensor(t.astype(np.int64)), tw, ignore_index=IGNORE,
                            label_smoothing=smoothing, reduction=reduction)
    loss.backward(torch.tensor(g.astype(np.float64)))
    assert tx.grad is not None
    return loss.detach().numpy(), tx.grad.numpy()


def _burn(bk: Any, x: Any, t: np.ndarray, w: np.ndarray | None, smoothing: float,
          reduction: str, g: np.ndarray) -> tuple[Any, Any]:
    """The cpu backend's (loss, logit gradient) of device logits `x`."""
    tt, tw = bk.upload(t), None if w is None else bk.upload(w)
    loss = bk.cross_entropy(x, tt, tw, IGNORE, smoothing, reduction)
    dx = bk.cross_entropy_backward(x, tt, tw, bk.upload(g), IGNORE, smoothing, reduction)
    return loss, dx


def _check(out: Any, ref: np.ndarray, dtype: Any, tol: float, atol: float | None = None
           ) -> None:
    """Shape and dtype first, then values (NaN where torch has NaN; `atol` defaults to
    `tol`)."""
    assert out.shape == ref.shape
    got = host_array(out)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol if atol is None else atol,
                               equal_nan=True)


def _launches(monkeypatch: pytest.MonkeyPatch, bk: Any) -> list[tuple[str, int]]:
    """A list that gets (kernel name, units per cube) of each planned launch on `bk`."""
    launched: list[tuple[str, int]] = []
    real_planned, real_cubes = type(bk).launch_planned, type(bk).launch_cubes_planned

    def planned(self: Any, kernel: Any, units: int, *args: Any) -> None:
        launched.append((kernel.kernel.name, CUBE_DIM))
        real_planned(self, kernel, units, *args)

    def cubes(self: Any, kernel: Any, count: Any, dim: Any, *args: Any) -> None:
        launched.append((kernel.kernel.name, dim))
        real_cubes(self, kernel, count, dim, *args)

    monkeypatch.setattr(type(bk), "launch_planned", planned)
    monkeypatch.setattr(type(bk), "launch_cubes_planned", cubes)
    return launched


@pytest.mark.parametrize("reduction,smoothing,weighted", CASES)
@pytest.mark.parametrize("dtype,layout,tdtype", [
    (np.float32, "contiguous", np.int64), (np.float64, "transposed", np.int32),
    (np.float32, "strided", np.int32)])
def test_matches_torch(reduction: str, smoothing: float, weighted: bool, dtype: Any,
                       layout: str, tdtype: Any, path: str) -> None:
    bk = _backend(_device(path))
    if _device(path) == "wgpu" and dtype == np.float64:  # WGSL holds no float64
        dtype = np.float32
    rng = np.random.default_rng(3)
    x, t, w = _case(rng, 13, 7, dtype)
    g = (rng.standard_normal(13) if reduction == "none" else np.array(1.7)).astype(dtype)
    ref = _torch(x, t, w if weighted else None, smoothing, reduction, g)
    view = _up(bk, x, layout)
    loss, dx = _burn(bk, view, t.astype(tdtype), w if weighted else None, smoothing,
                     reduction, g)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    _check(loss, ref[0], dtype, tol)
    _check(dx, ref[1], dtype, tol)


@pytest.mark.parametrize("reduction,smoothing,weighted", CASES)
def test_nan_inf_and_all_ignored(reduction: str, smoothing: float, weighted: bool,
                                 path: str) -> None:
    """NaN and inf logits of kept samples propagate as torch's; ignored samples (rows 0 and 3)
    with NaN / inf logits are skipped as torch (loss 0, the gradient row the log-softmax's:
    NaN for NaN / +inf, 0 for -inf); a batch with every target ignored gives torch's loss (NaN
    for the mean) and zero gradients."""
    bk = _backend(_device(path))
    rng = np.random.default_rng(4)
    x, t, w = _case(rng, 6, 5, np.float32)
    nan_x = x.copy()
    nan_x[1, 2], nan_x[2, 0], nan_x[4, 1] = np.nan, np.inf, -np.inf
    ignored_x = x.copy()
    ignored_x[0, 1], ignored_x[0, 3], ignored_x[3, 4] = np.nan, np.inf, -np.inf
    ww = w if weighted else None
    g = (np.arange(6) + 1.0 if reduction == "none" else np.array(1.0)).astype(np.float32)
    for logits, targets in ((nan_x, t), (ignored_x, t), (x, np.full(6, IGNORE))):
        ref = _torch(logits, targets, ww, smoothing, reduction, g)
        loss, dx = _burn(bk, bk.upload(logits), targets, ww, smoothing, reduction, g)
        _check(loss, ref[0], np.float32, 1e-5)
        _check(dx, ref[1], np.float32, 1e-5)


@pytest.mark.parametrize("reduction,smoothing,weighted", CASES)
def test_nonfinite_output_gradient(reduction: str, smoothing: float, weighted: bool,
                                   path: str) -> None:
    """A NaN / inf output gradient leaves the ignored samples' (rows 0 and 3) gradient rows 0,
    as torch (which never touches them), on each path and on the protocol's composite: NaN and
    inf for "sum" / "mean", NaN / inf at the ignored rows and NaN at the kept row 4 for
    "none"."""
    bk = _backend(_device(path))
    rng = np.random.default_rng(5)
    x, t, w = _case(rng, 6, 5, np.float32)
    ww = None if not weighted else w
    upstreams = [np.array([np.nan, 1.0, -2.0, np.inf, np.nan, 0.5])] if reduction == "none" \
        else [np.array(np.nan), np.array(np.inf)]
    xt, tt, wt = bk.upload(x), bk.upload(t), None if ww is None else bk.upload(ww)
    for g in (u.astype(np.float32) for u in upstreams):
        ref = _torch(x, t, ww, smoothing, reduction, g)
        dx = _burn(bk, xt, t, ww, smoothing, reduction, g)[1]
        composite = Backend.cross_entropy_backward(bk, xt, tt, wt, bk.upload(g), IGNORE,
                                                   smoothing, reduction)
        for out in (dx, composite):
            assert (host_array(out)[t == IGNORE] == 0).all()
            _check(out, ref[1], np.float32, 1e-5)


@pytest.mark.parametrize("reduction,smoothing", [("mean", 0.0), ("mean", 0.25), ("mean", 1.0),
                                                 ("sum", 0.25), ("none", 0.25)])
def test_kept_weights_summing_to_zero(reduction: str, smoothing: float, path: str) -> None:
    """Kept targets whose class weights sum to 0, as torch, on each path and on the protocol's
    composite: of weight 0 (every row kept, and with rows 0 and 3 ignored) the mean is NaN
    with NaN gradient rows for the kept samples and zero rows for the ignored ones (torch
    divides only kept rows by the zero total); of weights 1 and -1 the unsmoothed mean is
    -inf, each kept row's gradient NaN at its target and +-inf elsewhere (smoothed: NaN, NaN
    rows; with smoothing below 1 torch's mean may be +-inf, docs/differences.md)."""
    bk = _backend(_device(path))
    rng = np.random.default_rng(9)
    x, t, _ = _case(rng, 6, 5, np.float32)
    zero = np.array([0.0, 1.0, 0.0, 2.0, 0.0], np.float32)
    kept = np.array([0, 2, 4, 0, 2, 4])
    cases = [(kept, zero), (np.where(t == IGNORE, IGNORE, kept), zero)]
    if reduction != "mean" or smoothing in (0, 1):  # rows 1, 2 of class 0, 4, 5 of class 1
        cases.append((np.array([IGNORE, 0, 0, IGNORE, 1, 1]),
                      np.array([1.0, -1.0, 0.5, 2.0, 0.0], np.float32)))
    g = (np.arange(6) + 1.0 if reduction == "none" else np.array(0.7)).astype(np.float32)
    for targets, weights in cases:
        ref = _torch(x, targets, weights, smoothing, reduction, g)
        xt, tt, wt = bk.upload(x), bk.upload(targets), bk.upload(weights)
        composite = (Backend.cross_entropy(bk, xt, tt, wt, IGNORE, smoothing, reduction),
                     Backend.cross_entropy_backward(bk, xt, tt, wt, bk.upload(g), IGNORE,
                                                    smoothing, reduction))
        for loss, dx in (_burn(bk, xt, targets, weights, smoothing, reduction, g), composite):
            _check(loss, ref[0], np.float32, 1e-5)
            _check(dx, ref[1], np.float32, 1e-5)


@pytest.mark.parametrize("reduction,smoothing", [("mean", 0.0), ("none", 0.25)])
def test_rows_longer_than_the_lanes(reduction: str, smoothing: float, path: str) -> None:
    """Rows of 37 classes (two blocks of `norm_rows_cpu.LANES` lanes and a rest): the max in
    every lane and in the rest, NaN / +inf / -inf inside a block and in the rest, a row of
    -inf, against torch."""
    bk = _backend(_device(path))
    rng = np.random.default_rng(5)
    x, t, w = _case(rng, 9, 37, np.float32)
    for row, col in enumerate((0, 15, 16, 31, 36)):
        x[row, col] = 40.0  # the row's max
    x[5, 20], x[6, 33], x[7, 3], x[8] = np.nan, np.inf, -np.inf, -np.inf
    t[5:] = (1, 2, 3, 4)
    g = (np.arange(9) + 1.0 if reduction == "none" else np.array(1.0)).astype(np.float32)
    ref = _torch(x, t, w, smoothing, reduction, g)
    loss, dx = _burn(bk, bk.upload(x), t, w, smoothing, reduction, g)
    _check(loss, ref[0], np.float32, 1e-5)
    _check(dx, ref[1], np.float32, 1e-5)


def test_bad_target_raises_index_error(path: str) -> None:
    bk = _backend(_device(path))
    x = bk.upload(np.zeros((3, 4), np.float32))
    for bad in (4, -1):
        t = bk.upload(np.array([0, bad, IGNORE]))
        bk.cross_entropy(x, t, None, IGNORE, 0.0, "mean")
        with pytest.raises(BurnIndexError, match=f"cross_entropy.*{bad}"):
            bk.sync()
        bk.cross_entropy_backward(x, t, None, bk.upload(np.array(1.0, np.float32)), IGNORE,
                                  0.0, "sum")
        with pytest.raises(BurnIndexError, match="cross_entropy"):
            bk.sync()


@pytest.mark.parametrize("device", sorted({d for d, _, _ in PATHS.values()}))
def test_empty_batch_takes_default(monkeypatch: pytest.MonkeyPatch, device: str) -> None:
    """0 rows take the composite (no rows kernel runs), with torch's values: an empty
    loss, the mean NaN, the sum 0, gradients of shape [0, C]."""
    bk = _backend(device)
    launched = _launches(monkeypatch, bk)
    x, t = np.zeros((0, 4), np.float32), np.zeros(0, np.int64)
    for reduction in ("none", "mean", "sum"):
        g = np.zeros(0 if reduction == "none" else (), np.float32)
        ref = _torch(x, t, None, 0.1, reduction, g)
        loss, dx = _burn(bk, bk.upload(x), t, None, 0.1, reduction, g)
        _check(loss, ref[0], np.float32, 1e-6)
        _check(dx, ref[1], np.float32, 1e-6)
    assert not [name for name, _ in launched if name.startswith("cross_entropy")]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_launches_per_call(monkeypatch: pytest.MonkeyPatch, reduction: str, path: str) -> None:
    """On the rows path forward and backward each launch one rows kernel, planned; the
    forward's "sum" and "mean" one more (the losses' total) and the mean's backward one more
    (the target weights' total): one unit on the cpu, one cube on GPUs. The looped and cube
    paths ("sum" and "mean") launch one kernel each way. Nothing launches unplanned. The
    kernels compile to CUDA C."""
    bk = _backend(_device(path))
    rng = np.random.default_rng(5)
    x, t, w = _case(rng, 64, 10, np.float32)
    xt, tt, wt = bk.upload(x), bk.upload(t), bk.upload(w)
    g = bk.upload(np.ones(64, np.float32) if reduction == "none" else np.array(1.0, np.float32))
    bk.sync()
    unplanned: list[str] = []
    real = IRKernel.launch

    def count(self: Any, *args: Any, **kwargs: Any) -> None:
        unplanned.append(self.kernel.name)
        real(self, *args, **kwargs)

    monkeypatch.setattr(IRKernel, "launch", count)
    planned: list[tuple[Any, tuple[Any, ...], Any]] = []
    real_planned = type(bk).launch_planned

    def record(self: Any, kernel: Any, units: int, *args: Any) -> None:
        planned.append((kernel, args, CUBE_DIM))
        real_planned(self, kernel, units, *args)

    monkeypatch.setattr(type(bk), "launch_planned", record)
    real_cubes = type(bk).launch_cubes_planned

    def record_cubes(self: Any, kernel: Any, count: Any, dim: Any, *args: Any) -> None:
        planned.append((kernel, args, dim))
        real_cubes(self, kernel, count, dim, *args)

    monkeypatch.setattr(type(bk), "launch_cubes_planned", record_cubes)
    one_launch = path.split("-")[-1]
    if one_launch in ("looped", "cube") and reduction != "none":
        forward = [f"cross_entropy_{one_launch}"]
        backward = [f"cross_entropy_{one_launch}_backward"]
    else:
        forward = ["cross_entropy_rows"] + (
            [] if reduction == "none" else [f"cross_entropy_{reduction}"])
        backward = (["cross_entropy_weights"] if reduction == "mean" else []) + [
            "cross_entropy_rows_backward"]
    # the rows kernels' totals: a cube of one unit on the cpu, of a unit per row (64) on GPUs
    totals = {"cross_entropy_sum", "cross_entropy_mean", "cross_entropy_weights"}
    total_dim = 1 if _device(path) == "cpu" else 64
    for _ in range(2):  # planned, then from the plans
        planned.clear()
        bk.cross_entropy(xt, tt, wt, IGNORE, 0.1, reduction)
        assert [k.kernel.name for k, _, _ in planned] == forward
        assert {d for k, _, d in planned if k.kernel.name in totals} <= {total_dim}
        _compile_to_cuda(bk, planned)
        planned.clear()
        bk.cross_entropy_backward(xt, tt, wt, g, IGNORE, 0.1, reduction)
        assert [k.kernel.name for k, _, _ in planned] == backward
        assert {d for k, _, d in planned if k.kernel.name in totals} <= {total_dim}
    assert unplanned == []
    _compile_to_cuda(bk, planned)


def _compile_to_cuda(bk: Any, planned: list[tuple[Any, tuple[Any, ...], Any]]) -> None:
    """The planned kernels compile to CUDA C (specialized on cpu arrays of their arguments,
    for the units per cube they launched with)."""
    for kernel, args, dim in planned:
        host = [bk.runtime.download(a) if hasattr(a, "runtime") else a for a in args]
        assert "__global__" in kernel.source("cuda", dim, *host)


@pytest.mark.parametrize("m,c,reduction", [
    (5, loss_rows.GPU_CLASSES + 1, "none"), (loss_rows.GPU_TOTAL_ROWS + 1, 3, "mean")])
def test_gpu_long_or_many_rows_take_the_composite(monkeypatch: pytest.MonkeyPatch, m: int,
                                                  c: int, reduction: str) -> None:
    """On wgpu, rows longer than GPU_CLASSES (and, reduced, more than GPU_TOTAL_ROWS of them)
    take the protocol's composite, with torch's values; no rows kernel runs."""
    bk = _backend("wgpu")
    rng = np.random.default_rng(6)
    x, t, w = _case(rng, m, c, np.float32)
    g = (np.ones(m) if reduction == "none" else np.array(0.5)).astype(np.float32)
    launched = _launches(monkeypatch, bk)
    ref = _torch(x, t, w, 0.1, reduction, g)
    loss, dx = _burn(bk, bk.upload(x), t, w, 0.1, reduction, g)
    _check(loss, ref[0], np.float32, 1e-5)
    _check(dx, ref[1], np.float32, 1e-5)
    assert not [name for name, _ in launched if name.startswith("cross_entropy")]


GPUS = sorted({d for d, _, _ in PATHS.values()} - {"cpu"})
#: (rows, classes): a unit per row (to 256 rows), units walking up to four rows (to 1024), at
#: and past the most logits a unit walks (`GPU_CLASSES`: rows times classes), where the rows
#: kernels run with their totals in one cube
GPU_SIZES = [(1, 5), (31, 5), (33, 5), (100, 5), (256, 5), (256, 256), (257, 5), (257, 128),
             (257, 129), (300, 5), (300, 200), (511, 5), (512, 5), (513, 5), (513, 85),
             (513, 86), (768, 3), (769, 64), (1000, 5), (1023, 5), (1024, 64), (1024, 65),
             (1024, 256)]


def _gpu_launches(m: int, c: int, reduction: str) -> tuple[list[Any], list[Any]]:
    """The (kernel name, units per cube) launches of a "sum" / "mean" forward and backward
    over `m` rows of `c` classes on GPU runtimes (`loss_rows.GPU_CUBE_ROWS` rows or fewer)."""
    units = max(loss_rows.GPU_CUBE_MIN_UNITS,
                min(loss_rows.GPU_CUBE_UNITS, 1 << (m - 1).bit_length()))
    if m <= loss_rows.GPU_CUBE_ROWS and -(-m // units) * c <= loss_rows.GPU_CLASSES:
        return [("cross_entropy_cube", units)], [("cross_entropy_cube_backward", units)]
    return ([("cross_entropy_rows", CUBE_DIM), (f"cross_entropy_{reduction}", units)],
            [("cross_entropy_weights", units)] * (reduction == "mean") + [
                ("cross_entropy_rows_backward", CUBE_DIM)])


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("m,c", GPU_SIZES)
@pytest.mark.parametrize("reduction,smoothing,weighted", [("mean", 0.1, True),
                                                          ("sum", 0.0, False)])
def test_gpu_cube_sizes(monkeypatch: pytest.MonkeyPatch, device: str, m: int, c: int,
                        reduction: str, smoothing: float, weighted: bool) -> None:
    """On GPU runtimes a "sum" / "mean" of up to `GPU_CUBE_ROWS` rows runs one cube each way
    (the fewest units a power of two holding every row, at most `GPU_CUBE_UNITS`: idle units
    and a partial last plane add nothing; past that each walks rows ``u, u + units, ...``)
    where a unit's rows hold at most `GPU_CLASSES` logits; else the rows kernels, their
    totals (the losses', the mean backward's target weights) one cube. Values and gradients
    as torch's."""
    bk = _backend(device)
    rng = np.random.default_rng(m)
    x, t, w = _case(rng, m, c, np.float32)
    g = np.array(0.7, np.float32)
    launched = _launches(monkeypatch, bk)
    ref = _torch(x, t, w if weighted else None, smoothing, reduction, g)
    loss, dx = _burn(bk, bk.upload(x), t, w if weighted else None, smoothing, reduction, g)
    _check(loss, ref[0], np.float32, 1e-5)
    _check(dx, ref[1], np.float32, 1e-5)
    forward, backward = _gpu_launches(m, c, reduction)
    assert [(n, d) for n, d in launched if n.startswith("cross_entropy")] == forward + backward


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("m,c", [(300, 5), (1024, 5), (300, 200)])
@pytest.mark.parametrize("reduction,smoothing", [("mean", 0.0), ("mean", 0.2), ("sum", 0.2)])
def test_gpu_many_rows_special_values(device: str, m: int, c: int, reduction: str,
                                      smoothing: float) -> None:
    """Past `GPU_CUBE_UNITS` rows (of 5 classes one cube of units walking several rows; 300
    of 200 the rows kernels with a cube's totals): NaN / inf logits in kept and in ignored
    rows and every target ignored (the mean NaN, zero gradients) as torch; class weights
    summing to 0 over the kept targets (all zero, or zero only where targets are) as the
    protocol's composite and as torch (the mean NaN, NaN gradient rows for kept samples and
    zero rows for ignored ones)."""
    bk = _backend(device)
    rng = np.random.default_rng(7)
    x, t, w = _case(rng, m, c, np.float32)
    g = np.array(0.7, np.float32)
    special = x.copy()
    special[1, 0], special[2, c - 1], special[4, c // 2] = np.nan, np.inf, -np.inf
    special[0, 0], special[3, c - 1] = np.nan, np.inf  # ignored rows (t[::3])
    for logits, targets in ((special, t), (x, np.full(m, IGNORE))):
        ref = _torch(logits, targets, w, smoothing, reduction, g)
        loss, dx = _burn(bk, bk.upload(logits), targets, w, smoothing, reduction, g)
        _check(loss, ref[0], np.float32, 1e-5)
        _check(dx, ref[1], np.float32, 1e-5)
    even = np.where(t == IGNORE, IGNORE, t - t % 2)
    for weights in (np.zeros(c, np.float32), np.where(np.arange(c) % 2, w, 0).astype(np.float32)):
        loss, dx = _burn(bk, bk.upload(x), even, weights, smoothing, reduction, g)
        xt, tt, wt = bk.upload(x), bk.upload(even), bk.upload(weights)
        composite = (Backend.cross_entropy(bk, xt, tt, wt, IGNORE, smoothing, reduction),
                     Backend.cross_entropy_backward(bk, xt, tt, wt, bk.upload(g), IGNORE,
                                                    smoothing, reduction))
        _check(loss, host_array(composite[0]), np.float32, 1e-5)
        _check(dx, host_array(composite[1]), np.float32, 1e-5)
        ref = _torch(x, even, weights, smoothing, reduction, g)
        _check(loss, ref[0], np.float32, 1e-5)
        _check(dx, ref[1], np.float32, 1e-5)


HALVES = {"wgpu": ["float16"], "cuda": ["float16", "bfloat16"]}


@pytest.mark.parametrize("device,dtype", [(d, h) for d in GPUS for h in HALVES[d]])
@pytest.mark.parametrize("m,c", [(64, 10), (300, 5), (300, 200)])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_gpu_half_logits(monkeypatch: pytest.MonkeyPatch, device: str, dtype: str, m: int,
                         c: int, reduction: str) -> None:
    """float16 / bfloat16 logits and weights on GPU runtimes (one cube of a unit per row, of
    two rows a unit, and for 300 rows of 200 the rows kernels with a cube's totals, which add
    the per-row losses as stored in the logits' dtype): loss and gradients in that dtype,
    as torch's in float64 on the rounded values; no composite runs."""
    def refuse(*args: Any) -> Any:
        raise AssertionError("the composite default ran")

    monkeypatch.setattr(Backend, "cross_entropy", refuse)
    monkeypatch.setattr(Backend, "cross_entropy_backward", refuse)
    bk = _backend(device)
    rng = np.random.default_rng(8)
    x, t, w = _case(rng, m, c, np.float32)

    def rounded(a: np.ndarray) -> np.ndarray:
        return torch.from_numpy(a).to(getattr(torch, dtype)).double().numpy()

    def up(a: np.ndarray) -> Any:
        return burn.tensor(a, device=device, dtype=getattr(burn, dtype))._prim

    x, w, g = rounded(x), rounded(w), rounded(np.array(0.7, np.float32))
    ref = _torch(x, t, w, 0.1, reduction, g)
    loss = bk.cross_entropy(up(x), bk.upload(t), up(w), IGNORE, 0.1, reduction)
    dx = bk.cross_entropy_backward(up(x), bk.upload(t), up(w), up(g), IGNORE, 0.1, reduction)
    tol = 1e-2 if dtype == "float16" else 5e-2
    for out, want in ((loss, ref[0]), (dx, ref[1])):
        assert out.shape == want.shape and out.dtype is getattr(DType, dtype)
        got = np.asarray(host_array(out)).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 1e-2)
