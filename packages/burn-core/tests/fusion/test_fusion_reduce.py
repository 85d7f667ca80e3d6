"""The reduce fuser: reductions along a dim with the elementwise work before and after them in
one kernel (softmax, layer norm, mean of squares, cross entropy written from primitives),
against the unfused backend and PyTorch, with kernel launches counted at the runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, LaunchCounter, check

import burn
import burn.functional as F
from burn.errors import UnsupportedDTypeError
from burn.fusion import reset_stats, stats

pytestmark = [pytest.mark.parametrize("base", DEVICES), pytest.mark.usefixtures("empty_stream")]
torch.set_num_threads(1)




def softmax(x: Any, dim: int) -> Any:
    """Softmax from primitives (burn and torch spell these alike)."""
    if isinstance(x, torch.Tensor):
        e = (x - x.amax(dim, keepdim=True)).exp()
        return e / e.sum(dim, keepdim=True)
    e = (x - x.max_dim(dim)).exp()
    return e / e.sum_dim(dim)


def layer_norm(x: Any, w: Any, b: Any, eps: float = 1e-5) -> Any:
    """Layer norm over the last dim from primitives."""
    mean = _mean(x, -1)
    centered = x - mean
    return centered / (_mean(centered * centered, -1) + eps).sqrt() * w + b


def rms_norm(x: Any, w: Any, eps: float = 1e-6) -> Any:
    """x / sqrt(mean(x^2) + eps) * w: a mean of squares."""
    return x / (_mean(x * x, -1) + eps).sqrt() * w


def _mean(x: Any, dim: int) -> Any:
    if isinstance(x, torch.Tensor):
        return x.mean(dim, keepdim=True)
    return x.mean_dim(dim % x.ndim)


def run(base: str, monkeypatch: pytest.MonkeyPatch, fn: Callable[..., Any],
        *data: np.ndarray) -> tuple[list[burn.Tensor], int, list[burn.Tensor]]:
    """`fn` on fused tensors (its results, the kernels launched) and on unfused ones."""
    fused = [burn.tensor(d, device=f"{base}+fusion") for d in data]
    plain = [burn.tensor(d, device=base) for d in data]
    counter = LaunchCounter(monkeypatch, base)
    out = fn(*fused)
    outs = list(out) if isinstance(out, tuple) else [out]
    burn.sync(f"{base}+fusion")
    launches = counter.take()
    unfused = fn(*plain)
    return outs, launches, list(unfused) if isinstance(unfused, tuple) else [unfused]


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_from_primitives_is_one_kernel(base: str, dim: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    data = (rng.standard_normal((5, 7, 33)) * 4).astype(np.float32)
    reset_stats()
    (got,), launches, (unfused,) = run(base, monkeypatch, lambda x: softmax(x, dim), data)
    # along a leading dim the cpu runs rows in lockstep (reduce.LANES), GPUs spread units
    assert launches == 1 and stats().ops_fused == 5  # the brief's bound is 2
    check(got, torch.softmax(torch.from_numpy(data), dim))
    np.testing.assert_allclose(got.to_numpy(), unfused.to_numpy(), rtol=1e-6, atol=1e-7)


def test_functional_softmax_is_at_most_two_kernels(base: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32)
    reset_stats()
    (got,), launches, _ = run(base, monkeypatch, lambda x: F.softmax(x * 2.0, 1), data)
    assert launches <= 2
    # the statistics count the kernels of ops run at once too (the rows kernel here)
    assert stats().kernels_launched == launches
    check(got, torch.softmax(torch.from_numpy(data) * 2.0, 1))


def test_softmax_backward_under_autodiff(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Softmax's direct rule s * (g - sum(g * s)) is one reduce kernel under fusion."""
    rng = np.random.default_rng(2)
    xd = rng.standard_normal((4, 9)).astype(np.float32)
    gd = rng.standard_normal((4, 9)).astype(np.float32)
    tx = torch.from_numpy(xd).requires_grad_()
    (torch.softmax(tx, 1) * torch.from_numpy(gd)).sum().backward()
    assert tx.grad is not None
    launches = {}
    for spec in (base, f"{base}+fusion"):
        dev = burn.Device(spec).autodiff()
        for _ in range(2):  # counted on the second step, its plans made
            x = burn.tensor(xd, device=dev).require_grad()
            g = burn.tensor(gd, device=dev)
            burn.sync(dev)
            counter = LaunchCounter(monkeypatch, base)
            loss = (F.softmax(x, 1) * g).sum()
            grad = x.grad(loss.backward())
            assert grad is not None
            check(grad, tx.grad, rtol=1e-5, atol=1e-6)
            launches[spec] = counter.take()
            monkeypatch.undo()
    assert launches[f"{base}+fusion"] < launches[base]


def test_layer_norm_from_primitives_is_one_kernel(base: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 4, 48)) * 3 + 1).astype(np.float32)
    w = rng.standard_normal(48).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32)
    (got,), launches, (unfused,) = run(base, monkeypatch, layer_norm, x, w, b)
    assert launches == 1
    want = torch.nn.functional.layer_norm(torch.from_numpy(x), (48,), torch.from_numpy(w),
                                          torch.from_numpy(b))
    check(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got.to_numpy(), unfused.to_numpy(), rtol=1e-5, atol=1e-6)


def test_mean_of_squares_is_one_kernel(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    w = rng.standard_normal(64).astype(np.float32)
    (got,), launches, _ = run(base, monkeypatch, rms_norm, x, w)
    assert launches == 1
    check(got, rms_norm(torch.from_numpy(x), torch.from_numpy(w)), rtol=1e-5, atol=1e-6)


def test_cross_entropy_from_primitives(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """log-sum-exp and the target's logit (a one-hot product) along the classes in one
    kernel; the mean over the batch (a whole-tensor sum and a division) one more."""
    rng = np.random.default_rng(5)
    logits = (rng.standard_normal((12, 10)) * 3).astype(np.float32)
    target = rng.integers(0, 10, 12)
    onehot = np.eye(10, dtype=np.float32)[target]

    def loss(x: Any, t: Any) -> Any:
        m = x.max_dim(1)
        lse = ((x - m).exp().sum_dim(1)).log() + m
        return (lse - (x * t).sum_dim(1)).mean()

    (got,), launches, _ = run(base, monkeypatch, loss, logits, onehot)
    assert launches == 2
    want = torch.nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(target))
    check(got, want)


#: Whole-tensor reductions with elementwise work around them, burn's and torch's spelling
#: alike: (name, function, kernels launched, data shapes).
WHOLE_CASES = [
    ("mse", lambda x, y: ((x - y) ** 2).mean(), 1, [(24, 33), (24, 33)]),
    ("sum_of_products", lambda x, y: (x * y).sum(), 1, [(5, 7, 9), (5, 7, 9)]),
    ("max", lambda x, y: (x * y).max(), 1, [(40, 3), (40, 3)]),
    ("min_broadcast", lambda x, y: (x + y).min(), 2, [(40, 3), (3,)]),
    ("variance_and_root", lambda x: (x - x.mean()).square().mean().sqrt(), 1, [(64, 17)]),
    ("two_sums", lambda x, y: x.sum() * 2 + (x * y).sum(), 1, [(8, 8), (8, 8)]),
    ("centered", lambda x: x - x.mean(), 1, [(6, 50)]),
    ("scalar_tensor", lambda x, y: (x * y).sum(), 1, [(9, 11), ()]),
]


@pytest.mark.parametrize("case", WHOLE_CASES, ids=[c[0] for c in WHOLE_CASES])
def test_whole_tensor_reductions_fuse(base: str, monkeypatch: pytest.MonkeyPatch,
                                      case: tuple[Any, ...]) -> None:
    """A sum / mean / max / min of all elements is one row of the reduce kernel, with the
    elementwise work before it (fused on read) and after it (on write, 0-d or of the input's
    shape); a broadcast input of more than one element is copied dense first."""
    _, fn, kernels, shapes = case
    rng = np.random.default_rng(11)
    data = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    (got,), launches, (unfused,) = run(base, monkeypatch, fn, *data)
    assert launches == kernels
    check(got, fn(*map(torch.from_numpy, data)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.to_numpy(), unfused.to_numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("columns", [3, 100, 5000, 9000])
def test_row_lengths_around_the_cube_scratch(base: str, monkeypatch: pytest.MonkeyPatch,
                                            columns: int) -> None:
    """Rows whose scratch fits the cube's array (`reduce.ROW_SCRATCH_BYTES`: 8192 float32s,
    4096 float64s a pass on the cpu runtime) and longer ones (a tensor of every row's):
    softmax and layer norm from primitives, a sum of squares, one kernel each, as torch
    (float64 where the device has it)."""
    for dtype in (np.float32, np.float64) if base != "wgpu" else (np.float32,):
        rng = np.random.default_rng(15)
        xd = (rng.standard_normal((5, columns)) * 4).astype(dtype)
        w, b = np.ones(columns, dtype), np.zeros(columns, dtype)
        tx, tw, tb = (torch.from_numpy(v) for v in (xd, w, b))
        for fn, want in ((lambda x: softmax(x, 1), softmax(tx, 1)),
                         (lambda x: (x * x).sum_dim(1), (tx * tx).sum(1, keepdim=True)),
                         (lambda x, w, b: layer_norm(x, w, b), layer_norm(tx, tw, tb))):
            args = (xd, w, b)[:fn.__code__.co_argcount]
            (got,), launches, _ = run(base, monkeypatch, fn, *args)
            assert launches == 1 and got.dtype == burn.DType(np.dtype(dtype).name)
            check(got, want, rtol=1e-4, atol=1e-5)


def test_inputs_expanded_along_the_reduced_dim(base: str, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    """An input expanded along the reduced dim (stride 0 there, as a sum's gradient is) is
    read as one value per row, its step compiled in: whole-tensor and per-dim reductions,
    one kernel each, values as torch's."""
    rng = np.random.default_rng(14)
    xd = rng.standard_normal((6, 40)).astype(np.float32)
    sd = np.float32(1.5)
    cd = rng.standard_normal((6, 1)).astype(np.float32)

    def whole(x: Any, s: Any, c: Any) -> Any:
        return (x.exp() * s.expand((6, 40))).sum()

    def per_row(x: Any, s: Any, c: Any) -> Any:
        y = x * c.expand((6, 40))
        return y.sum_dim(1), y.max_dim(1), y + x

    for fn in (whole, per_row):
        got, launches, unfused = run(base, monkeypatch, fn, xd, np.asarray(sd), cd)
        assert launches == 1, fn.__name__
        for g, u in zip(got, unfused, strict=True):
            np.testing.assert_allclose(g.to_numpy(), u.to_numpy(), rtol=1e-5, atol=1e-6)
    tx, tc = torch.from_numpy(xd), torch.from_numpy(cd)
    check(run(base, monkeypatch, whole, xd, np.asarray(sd), cd)[0][0],
          (tx.exp() * torch.tensor(sd).expand(6, 40)).sum(), rtol=1e-5)
    ty = tx * tc.expand(6, 40)
    sums, maxes, plus = run(base, monkeypatch, per_row, xd, np.asarray(sd), cd)[0]
    check(sums, ty.sum(1, keepdim=True), rtol=1e-5, atol=1e-6)
    check(maxes, ty.amax(1, keepdim=True))
    check(plus, ty + tx)


def test_whole_tensor_reductions_of_views_and_special_values(base: str) -> None:
    """Transposed, strided and expanded inputs; NaN wins max / min, inf sums; float16 sums
    accumulate in float32 (60000 + 60000 halved is 60000, not inf)."""
    dev = f"{base}+fusion"
    rng = np.random.default_rng(12)
    a = rng.standard_normal((12, 20)).astype(np.float32)
    x, t = burn.tensor(a, device=dev), torch.from_numpy(a)
    check((x.t() * 3).sum(), (t.t() * 3).sum(), rtol=1e-5, atol=1e-5)
    check((x[:, ::2] + 1).mean(), (t[:, ::2] + 1).mean(), rtol=1e-5, atol=1e-5)
    check((x[:1].expand((5, 20)) * x[:5]).max(), (t[:1].expand(5, 20) * t[:5]).max())
    b = a.copy()
    b[3, 7], b[5, 1] = np.nan, np.inf
    y, u = burn.tensor(b, device=dev), torch.from_numpy(b)
    for name in ("max", "min", "sum"):
        check(getattr(y * 2, name)(), getattr(u * 2, name)())
    b[3, 7] = -np.inf
    y, u = burn.tensor(b, device=dev), torch.from_numpy(b)
    check((y + 1).sum(), (u + 1).sum())
    half = np.full((4, 4), 60000, np.float16)
    h = burn.tensor(half, device=dev)
    got = (h * 0.5).mean()
    assert got.dtype == burn.float16
    check(got, (torch.from_numpy(half).float() * 0.5).mean().half())


#: Reduce blocks a loop runs again and again: (name, function, torch's, data shape, whether
#: the block still pays from its `LONE`th flush on the cpu runtime, on GPU runtimes).
REPEATED_CASES = [
    ("mean_of_squares_rows", lambda x: (x * x).mean_dim(1),
     lambda t: (t * t).mean(1, keepdim=True), (64, 48), False, False),
    ("small_mse_whole", lambda x: ((x - 1.0) ** 2).mean(), lambda t: ((t - 1.0) ** 2).mean(),
     (24, 33), False, True),
    ("small_softmax_rows", lambda x: softmax(x, 1), lambda t: softmax(t, 1), (8, 10), True,
     True),
]


@pytest.mark.parametrize("case", REPEATED_CASES, ids=[c[0] for c in REPEATED_CASES])
def test_short_cpu_reduce_blocks_run_unfused(base: str, monkeypatch: pytest.MonkeyPatch,
                                             case: tuple[Any, ...]) -> None:
    """A reduce block of two ops pays from `CPU_FUSE_WORK` / `GPU_FUSE_WORK` kept elements,
    and on the cpu runtime one of the whole tensor only from `CPU_FUSE_WORK`, however many
    ops (else from its `LONE`th flush its ops run at once one after the other, until it
    launches what the unfused backend does); a block of `FUSE_OPS` live ops along rows
    (softmax from primitives) stays one kernel however small. Values equal torch's at every
    step."""
    from burn.fusion.stream import LONE

    _, fn, torch_fn, shape, pays_cpu, pays_gpu = case
    data = np.random.default_rng(13).standard_normal(shape).astype(np.float32)
    want = torch_fn(torch.from_numpy(data))
    plain, fused = burn.tensor(data, device=base), burn.tensor(data, device=f"{base}+fusion")
    counter = LaunchCounter(monkeypatch, base)
    for _ in range(2):  # (the second: its launch plans made)
        counter.take()
        fn(plain).to_numpy()
    unfused = counter.take()
    counts = []
    for _ in range(4 * LONE):  # (each op of a block that does not pay leads it in turn)
        check(fn(fused), want, rtol=1e-5, atol=1e-6)
        counts.append(counter.take())
    pays = pays_cpu if base == "cpu" else pays_gpu
    assert counts[:LONE] == [1] * LONE and unfused > 1
    assert counts[-1] == (1 if pays else unfused), counts


@pytest.mark.parametrize("threads", [1, 2])
def test_whole_tensor_blocks_in_a_loop_pay_from_three_ops_on_one_cpu_thread(
        base: str, monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    """On the cpu runtime a whole-tensor reduce block runs on one thread, so in a loop it
    stays one kernel only on a one-thread team, from `FUSE_OPS` live ops and twice
    `CPU_FUSE_WORK` kept elements (an MSE over 2**17 floats); a sum of products (two ops),
    or either on two threads, leaves its reduction to the inner backend (which spreads it
    over the team) from its `LONE`th flush, in no more launches than unfused. GPU runtimes
    spread a whole row over a cube, whatever the host's threads: the MSE stays one kernel,
    the sum of products (below `GPU_FUSE_WORK`) does not. Values equal torch's at every
    step."""
    from burn.fusion.stream import LONE

    cpu = base == "cpu"
    if cpu:
        monkeypatch.setattr(burn.Device(base).backend.runtime, "threads", threads)
    burn.Device(f"{base}+fusion").backend.stream.forget()  # (plans decided which blocks pay)
    rng = np.random.default_rng(17)
    x, y = (rng.standard_normal(1 << 17).astype(np.float32) for _ in range(2))
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    counter = LaunchCounter(monkeypatch, base)
    for fn, pays in ((lambda a, b: ((a - b) ** 2).mean(), threads == 1 or not cpu),
                     (lambda a, b: (a * b).sum(), False)):
        plain = [burn.tensor(v, device=base) for v in (x, y)]
        fused = [burn.tensor(v, device=f"{base}+fusion") for v in (x, y)]
        counter.take()
        fn(*plain).to_numpy()
        unfused = counter.take()
        counts = []
        for _ in range(2 * LONE):
            got = fn(*fused)
            assert got.shape == () and got.dtype == burn.float32
            check(got, fn(tx, ty), rtol=1e-4)
            counts.append(counter.take())
        assert unfused > 1
        if pays:
            assert counts[-1] == 1, counts
        else:
            assert 1 < counts[-1] <= unfused, (counts, unfused)


def test_whole_tensor_reductions_the_fuser_leaves_alone(base: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty and one-element tensors, ints and tensors over `WHOLE_MOST` elements run on the
    inner backend's reduction (the chain before it in its own kernel)."""
    from burn.fusion.reduce import WHOLE_MOST

    big = np.linspace(-1, 1, WHOLE_MOST + 1, dtype=np.float32)
    (got,), launches, _ = run(base, monkeypatch, lambda x: (x * x).sum(), big)
    assert launches >= 2  # the product's kernel, then the inner backend's (staged) sum
    check(got, (torch.from_numpy(big) ** 2).sum(), rtol=1e-4)
    dev = f"{base}+fusion"
    check((burn.zeros((0, 3), device=dev) * 2).sum(), torch.zeros(0, 3).sum())
    check((burn.zeros((0, 3), device=dev) + 1).mean(), torch.zeros(0, 3).mean())
    check((burn.ones((1, 1), device=dev) * 2).max(), torch.ones(1, 1).max() * 2)
    ints = burn.tensor(np.arange(12).reshape(3, 4), device=dev)
    assert int((ints * 2).sum().item()) == 132


def test_mse_gradient_under_autodiff(base: str) -> None:
    """The backward of a fused mean of squares (its broadcast gradient fuses on the way)."""
    rng = np.random.default_rng(13)
    a, b = (rng.standard_normal((16, 10)).astype(np.float32) for _ in range(2))
    dev = burn.Device(base).fusion().autodiff()
    x = burn.tensor(a, device=dev).require_grad()
    y = burn.tensor(b, device=dev)
    loss = ((x - y) ** 2).mean()
    grads = loss.backward()
    tx = torch.from_numpy(a).requires_grad_()
    want = ((tx - torch.from_numpy(b)) ** 2).mean()
    want.backward()
    check(loss, want)
    check(x.grad(grads), tx.grad)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_dtypes_and_views(base: str, dtype: str) -> None:
    """Sums and means accumulate in float32 for 16-bit floats; transposed and broadcast
    inputs are read in place."""
    rng = np.random.default_rng(6)
    if not burn.Device(base).backend.supports(getattr(burn, dtype)):  # e.g. bf16 on WGSL
        with pytest.raises(UnsupportedDTypeError, match=dtype):
            burn.tensor(np.ones(3, np.float32), device=f"{base}+fusion").cast(dtype)
        return
    data = rng.standard_normal((24, 10)).astype(np.float32)
    bias = rng.standard_normal((24, 1)).astype(np.float32)
    dev = f"{base}+fusion"
    x = burn.tensor(data, device=dev).cast(getattr(burn, dtype)).swap_dims(0, 1)  # [10, 24] view
    b = burn.tensor(bias, device=dev).cast(getattr(burn, dtype)).swap_dims(0, 1)  # [1, 24]
    got = ((x + b) * 0.5).sum_dim(0) - (x * x).mean_dim(0)
    tdtype = getattr(torch, dtype)
    tx = torch.from_numpy(data).to(tdtype).T
    tb = torch.from_numpy(bias).to(tdtype).T
    acc = torch.float64 if dtype == "float64" else torch.float32
    want = (((tx + tb) * 0.5).to(acc).sum(0, keepdim=True).to(tdtype)
            - (tx * tx).to(acc).mean(0, keepdim=True).to(tdtype))
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    assert got.dtype == getattr(burn, dtype) and got.shape == (1, 24)
    np.testing.assert_allclose(got.to_numpy().astype(np.float64), want.double().numpy(),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize(("shape", "dim"), [((64, 256), 0), ((600, 300), 0),
                                          ((5, 7, 33), 1), ((3, 70, 5), 1), ((2, 3), 0)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_reductions_over_leading_dims(base: str, shape: tuple[int, ...], dim: int, dtype: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Softmax, a layer norm, max / min (a NaN wins, a -inf column) and a mean of squares along
    a dim before the innermost, each one kernel: on the cpu rows in lockstep (`reduce.LANES`
    of a run, the run's last unit overlapping the one before where `LANES` does not divide
    it, as for 300 columns; a broadcast input at the same element for every row), on GPUs
    units spread."""
    if not burn.Device(base).backend.supports(getattr(burn, dtype)):  # float64 on WGSL
        pytest.skip(f"{base} has no {dtype} (test_dtypes_and_views checks the error)")
    rng = np.random.default_rng(9)
    data = (rng.standard_normal(shape) * 3).astype(dtype)
    data.flat[5] = np.nan
    data[(slice(None),) * dim + (slice(None), 1)] = -np.inf  # a column of -inf
    scale = rng.standard_normal(shape[dim + 1:]).astype(dtype)  # broadcast over dim's rows
    t, ts = torch.from_numpy(data), torch.from_numpy(scale)
    tol = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14), "float16": (2e-3, 2e-3)}[dtype]
    cases: list[tuple[Callable[..., Any], Any]] = [
        (lambda x, w: softmax(x * w, dim), torch.softmax(t * ts, dim)),
        (lambda x, w: (x - x.mean_dim(dim)) / ((x - x.mean_dim(dim)) ** 2).mean_dim(dim).sqrt(),
         (t - t.mean(dim, keepdim=True)) / ((t - t.mean(dim, keepdim=True)) ** 2).mean(
             dim, keepdim=True).sqrt()),
        (lambda x, w: (x * 2.0).max_dim(dim) - (x * w).min_dim(dim),
         (t * 2.0).amax(dim, keepdim=True) - (t * ts).amin(dim, keepdim=True)),
        (lambda x, w: (x * w * x).mean_dim(dim) + 1.0, (t * ts * t).mean(dim, keepdim=True) + 1.0),
    ]
    if dtype == "float16":  # torch's float16 sums accumulate in float32 too, rounded per op
        cases = cases[2:]
    for fn, want in cases:
        (got,), launches, (unfused,) = run(base, monkeypatch, fn, data, scale)
        monkeypatch.undo()
        assert launches == 1
        check(got, want, *tol)
        np.testing.assert_allclose(got.to_numpy().astype(np.float64),
                                   unfused.to_numpy().astype(np.float64), rtol=tol[0] * 10,
                                   atol=tol[1] * 10, equal_nan=True)


def test_expanded_inputs_whose_row_view_is_their_storage(base: str) -> None:
    """A [5] tensor expanded to [12, 5] and reduced over dim 0: its row view is the whole
    storage, so launches pass storages laid out as the plan's examples."""
    rng = np.random.default_rng(8)
    g = rng.standard_normal(5).astype(np.float32)
    e = rng.standard_normal((12, 5)).astype(np.float32)
    dev = f"{base}+fusion"
    for _ in range(2):  # planned, then from the plan
        a = burn.tensor(g, device=dev).expand((12, 5))
        got = (a * burn.tensor(e, device=dev)).sum_dim(0)
        check(got, (torch.from_numpy(g) * torch.from_numpy(e)).sum(0, keepdim=True))


def test_max_and_min_with_indices(base: str) -> None:
    """First occurrence of ties; a NaN wins; values and indices from one kernel."""
    data = np.array([[1, 3, 3, 0], [2, np.nan, 5, np.nan], [-1, -1, -4, -4]], np.float32)
    x = burn.tensor(data, device=f"{base}+fusion")
    reset_stats()
    v, i = (x * 2.0).max_dim_with_indices(1)
    lo, j = (x * 2.0).min_dim_with_indices(0)
    tv, ti = (torch.from_numpy(data) * 2.0).max(1, keepdim=True)
    tlo, tj = (torch.from_numpy(data) * 2.0).min(0, keepdim=True)
    check(v, tv)
    check(lo, tlo)
    np.testing.assert_array_equal(i.to_numpy(), ti.numpy())
    np.testing.assert_array_equal(j.to_numpy(), tj.numpy())
    # one kernel per reduction (with indices, the cpu's dim-0 min walks each row with a unit)
    assert stats().kernels_launched == 2
    wide = np.tile(data, (1, 5))  # rows long enough for the interleaved partials
    wide[1, 17] = np.inf
    y = burn.tensor(wide, device=f"{base}+fusion")
    top, low = (y * 2.0).max_dim(1) + 1.0, (y * 2.0).min_dim(1) - 1.0
    ty = torch.from_numpy(wide) * 2.0
    check(top, ty.amax(1, keepdim=True) + 1.0)
    check(low, ty.amin(1, keepdim=True) - 1.0)


def test_dead_results_and_plan_cache(base: str) -> None:
    """Only held results are written; a repeated sequence reuses its program and kernel."""
    rng = np.random.default_rng(7)
    data = rng.standard_normal((8, 32)).astype(np.float32)
    x = burn.tensor(data, device=f"{base}+fusion")
    reset_stats()
    for step in range(3):
        scale = 1.0 + step  # a runtime scalar: the kernel is reused
        out = softmax(x * scale, 1)
        check(out, torch.softmax(torch.from_numpy(data) * scale, 1))
    s = stats()
    assert s.kernels_launched == 3
    assert s.plans <= 1 and s.cache_hits >= 2


def test_many_reductions_of_one_input_split_into_blocks(base: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten reductions of one input along one dim in one flush run as blocks of at most
    `MAX_BLOCK_REDUCTIONS` (a kernel's compile time grows with each), a max with indices kept
    whole, every value and index as torch's."""
    from burn.fusion.stream import MAX_BLOCK_REDUCTIONS

    data = np.random.default_rng(3).standard_normal((6, 40)).astype(np.float32)
    x = burn.tensor(data, device=f"{base}+fusion")
    t = torch.from_numpy(data)
    counter = LaunchCounter(monkeypatch, base)
    sums = [(x * float(k)).sum_dim(1) for k in range(3)]
    top, at = (x + 1.0).max_dim_with_indices(1)  # the 4th: its indices join its block
    sums += [(x * float(k)).sum_dim(1) for k in range(3, 9)]
    burn.sync(f"{base}+fusion")
    assert counter.take() == -(-10 // MAX_BLOCK_REDUCTIONS) == 3
    for k, s in zip([0, 1, 2, *range(3, 9)], sums, strict=True):
        check(s, (t * float(k)).sum(1, keepdim=True), rtol=1e-5, atol=1e-5)
    want, where = (t + 1.0).max(1, keepdim=True)
    check(top, want)
    np.testing.assert_array_equal(at.to_numpy(), where.numpy())


@pytest.mark.parametrize("reduce", ["sum", "sum_dim0", "max_dim1"])
def test_a_dead_reduction_of_a_strided_view(base: str, reduce: str) -> None:
    """A block whose reduction nobody reads and whose live ops are elementwise, over a view
    read with a step (it divided by the zero scratch rows of the cpu's lockstep schedule, found
    by the fuzz's seed 4901): the elementwise results as torch's."""
    data = np.random.default_rng(11).standard_normal((3, 74)).astype(np.float32) * 3
    x = burn.tensor(data, device=f"{base}+fusion")[:, ::2]
    squares = x * x
    dropped = {"sum": lambda: squares.sum(), "sum_dim0": lambda: squares.sum_dim(0),
               "max_dim1": lambda: squares.max_dim(1)}[reduce]()
    del dropped
    a = x.trunc()
    c = (a * a).trunc()
    t = torch.from_numpy(data)[:, ::2]
    check(a, t.trunc())
    check(c, t.trunc().square().trunc())


def test_reductions_the_fuser_leaves_alone(base: str) -> None:
    """Dims of one element, empty tensors and int tensors run on the inner backend."""
    dev = f"{base}+fusion"
    x = burn.tensor(np.arange(6, dtype=np.float32).reshape(6, 1), device=dev)
    check((x * 2.0).sum_dim(1), torch.arange(6.0).reshape(6, 1) * 2.0)
    empty = burn.zeros((0, 3), device=dev)
    check(empty.sum_dim(0), torch.zeros(1, 3))
    ints = burn.tensor(np.arange(12).reshape(3, 4), device=dev)
    np.testing.assert_array_equal((ints * 2).sum_dim(1).to_numpy(),
                                  (np.arange(12).reshape(3, 4) * 2).sum(1, keepdims=True))


@pytest.mark.parametrize(("shape", "dim"), [((512, 512), None), ((64, 1000), 1),
                                            ((3, 70001), 1), ((4096,), None), ((16, 100), 0),
                                            ((300, 1000), 0), ((4, 16, 33), 1), ((5, 100, 3), 1)])
def test_fused_sums_equal_the_unfused_on_cpu(base: str, shape: tuple[int, ...],
                                             dim: int | None) -> None:
    """On the cpu runtime a fused sum or mean along rows adds in the inner reduction's order
    (blocks of partial sums, their totals Kahan-added), so `(x * x).sum()` gives the same bits
    fused (its first `LONE` runs) as at once (later runs, the block not paying): a value did
    not depend on what ran before (it moved by an ulp at the fourth run, and 4M-element rows
    were 1e-4 off where torch and the unfused sum are 4e-10 off); over a leading or middle dim
    too, the columns past the unfused column sums' last whole group of `COLUMNS` included (they
    were summed element by element there: `abs()` of a mean that was 0 fused but 7e-9 at
    once had gradients that depended on the run). The unfused sum of a whole
    tensor past `CHUNK_MIN` elements adds its chunks in parallel, and GPU runtimes split rows
    differently: equal within float32 rounding there."""
    from burn.backends.cube.reduction import CHUNK_MIN
    from burn.fusion.stream import LONE

    data = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    want = (data.astype(np.float64) ** 2).sum(axis=dim)
    fused = burn.tensor(data, device=f"{base}+fusion")
    values = []
    for _ in range(LONE + 2):
        x = fused * 1.0  # (a prologue: the sum reads a computed op)
        values.append(((x * x).sum() if dim is None else (x * x).sum(dim)).numpy())
        values.append(((x * x).mean() if dim is None else (x * x).mean(dim)).numpy())
    plain = burn.tensor(data, device=base)
    unfused = (plain * plain).sum() if dim is None else (plain * plain).sum(dim)
    assert values[0].shape == want.shape and values[0].dtype == np.float32
    np.testing.assert_allclose(values[0], want, rtol=2e-6)
    one_chunk = dim is not None or data.size <= CHUNK_MIN["cpu"]  # (else summed in chunks)
    for got in values[0::2]:
        if base == "cpu" and one_chunk:
            np.testing.assert_array_equal(got, unfused.numpy())
        else:
            np.testing.assert_allclose(got, unfused.numpy(), rtol=2e-6)
    for got in values[1::2]:
        np.testing.assert_allclose(got, want / (data.size if dim is None else shape[dim]),
                                   rtol=2e-6)
