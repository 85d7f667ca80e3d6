"""The matmul fuser: linear + bias + activation (+ residual) as one matmul kernel with the
elementwise epilogue on GPU runtimes (the BLAS product and one epilogue kernel on the cpu,
where the epilogue keeps `CPU_EPILOGUE_WORK` elements out of memory; the tests of the fuser's
workings on small tensors lower that bound: `small_cpu_epilogues_pay`), against the unfused
backend and PyTorch; an MLP training step launches fewer kernels."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, LaunchCounter, check

import burn
import burn.functional as F
from burn.fusion import reset_stats, stats

pytestmark = [pytest.mark.parametrize("base", DEVICES), pytest.mark.usefixtures("empty_stream")]
torch.set_num_threads(1)




def data(*shapes: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _linear_relu(base: str, rows: int, width: int, seed: int = 0
                 ) -> tuple[Any, Any, Callable[[Any], None]]:
    """A `Linear(24, width)` on `base`+fusion, an input of `rows` rows there, and the check of
    a call's `relu(layer(x))` against torch's and the unfused backend's values."""
    from burn import nn

    dev = f"{base}+fusion"
    burn.seed(0, dev)
    layer = nn.Linear(24, width, device=dev)
    (xd,) = data((rows, 24), seed=seed)
    assert layer.bias is not None
    w, b = (torch.from_numpy(p.to_numpy()) for p in (layer.weight, layer.bias))
    unfused = F.relu(burn.tensor(xd, device=base).matmul(layer.weight.to(base))
                     + layer.bias.to(base)).to_numpy()

    def check_call(y: Any) -> None:
        check(y, torch.relu(torch.from_numpy(xd) @ w + b))
        np.testing.assert_allclose(y.to_numpy(), unfused, rtol=1e-6, atol=1e-6)

    return layer, burn.tensor(xd, device=dev), check_call


def test_linear_bias_relu_is_one_matmul_kernel(base: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """One kernel a call, from the second call (the first autotunes the product) to well past
    the stream's settling (`LONE_SHARED` calls): on GPU runtimes the tiled matmul kernel storing
    relu(x @ w + b); on the cpu, with a product of `CPU_EPILOGUE_WORK` elements, the vendor
    product (BLAS or the runtime's gemm, no kernel launch) and one fused epilogue kernel
    reading it (the product stays recorded: its epilogue pays there)."""
    from burn.fusion.stream import CPU_EPILOGUE_WORK, LONE_SHARED

    dev = f"{base}+fusion"
    rows, width = (CPU_EPILOGUE_WORK // 256, 256) if base == "cpu" else (33, 40)
    layer, x, check_call = _linear_relu(base, rows, width)
    F.relu(layer(x)).to_numpy()  # the matmul's autotuning (if any) is not counted
    counter = LaunchCounter(monkeypatch, base)
    for _ in range(LONE_SHARED + 2):
        reset_stats()
        y = F.relu(layer(x))
        burn.sync(dev)
        s = stats()
        assert (s.ops_recorded, s.ops_dead, s.ops_eager) == (3, 0, 0)
        # (on the cpu the product runs on BLAS or the gemm, outside the fused kernel)
        assert s.ops_fused == (2 if base == "cpu" else 3)
        assert counter.take() == 1 and s.kernels_launched == 1
        check_call(y)


def test_a_small_cpu_epilogue_runs_at_once_once_settled(base: str,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """On the cpu a linear layer's bias + relu over fewer than `CPU_EPILOGUE_WORK` elements
    is one fused kernel while the stream learns (its first calls), then, once it found that
    the block does not pay (`LONE` flushes), the product, the bias and the relu run at once, a
    kernel each for the two (unfused's launches); on GPU runtimes it stays one kernel. Values
    equal to unfused and torch's at every call."""
    from burn.fusion.stream import LONE, LONE_SHARED

    dev = f"{base}+fusion"
    layer, x, check_call = _linear_relu(base, 33, 40, seed=5)
    counter = LaunchCounter(monkeypatch, base)
    kernels = []
    for _ in range(LONE_SHARED + 2):
        reset_stats()
        y = F.relu(layer(x))
        burn.sync(dev)
        assert stats().kernels_launched == counter.take()
        kernels.append(stats().kernels_launched)
        check_call(y)
    if base == "cpu":
        assert kernels[0] == 1 and kernels[-1] == 2 and kernels[LONE + 1:] == \
            [2] * (len(kernels) - LONE - 1), kernels
    else:
        assert kernels[1:] == [1] * (len(kernels) - 1), kernels


@pytest.mark.usefixtures("small_cpu_epilogues_pay")
def test_an_epilogue_stays_one_kernel_beside_a_bare_product_of_its_shapes(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A product of the same shapes and dtypes flushed without an epilogue between the calls
    (a backward product with the forward's shapes) does not make the linear layer's product
    run at once: its bias + relu stay one kernel at every call, past the stream's settling."""
    from burn.fusion.stream import LONE_SHARED

    dev = f"{base}+fusion"
    xd, wd, vd, bd = data((20, 20), (20, 20), (20, 20), (20,), seed=21)
    x, w, v, b = (burn.tensor(a, device=dev) for a in (xd, wd, vd, bd))
    tx, tw, tv, tb = (torch.from_numpy(a) for a in (xd, wd, vd, bd))
    F.relu(x @ w + b).to_numpy()  # (the products' autotuning is not counted)
    (x @ v).to_numpy()
    counter = LaunchCounter(monkeypatch, base)
    for _ in range(LONE_SHARED + 2):
        reset_stats()
        y = F.relu(x @ w + b)
        burn.sync(dev)
        assert stats().kernels_launched == 1 and counter.take() == 1
        check(y, torch.relu(tx @ tw + tb))
        check(x @ v, tx @ tv)  # the bare product: its own run
        counter.take()


def test_residual_activation_and_batches(base: str) -> None:
    """A batched product with a broadcast bias, an activation and a residual add; the product
    itself is also held, so both are written."""
    dev = f"{base}+fusion"
    xd, wd, bd, rd = data((3, 17, 9), (9, 21), (21,), (3, 17, 21), seed=1)
    x, w, b, r = (burn.tensor(a, device=dev) for a in (xd, wd, bd, rd))
    burn.sync(dev)
    reset_stats()
    product = x.matmul(w)
    y = (product + b).tanh() * 0.5 + r
    assert stats().kernels_launched == 0
    tx, tw, tb, tr = (torch.from_numpy(a) for a in (xd, wd, bd, rd))
    check(y, (tx @ tw + tb).tanh() * 0.5 + tr)
    check(product, tx @ tw)
    # (one tiled kernel with the epilogue on GPUs; on the cpu the BLAS product, no kernel
    # launch, counted as at once, and one epilogue kernel)
    assert stats().kernels_launched == 1


def test_epilogue_with_other_dtypes_and_numbers(base: str) -> None:
    """An epilogue writing a bool mask and a float result; numbers are runtime scalars, so
    a second step with other numbers reuses the plan."""
    dev = f"{base}+fusion"
    xd, wd = data((8, 5), (5, 12), seed=2)
    x, w = (burn.tensor(a, device=dev) for a in (xd, wd))
    tx, tw = torch.from_numpy(xd), torch.from_numpy(wd)
    reset_stats()
    for step in range(3):
        scale = 0.5 + step
        h = x.matmul(w) * scale
        mask = h > 0.1
        out = F.sigmoid(h)
        th = (tx @ tw) * scale
        check(out, th.sigmoid())
        np.testing.assert_array_equal(mask.to_numpy(), (th > 0.1).numpy())
    assert stats().cache_hits >= 2


def test_autodiff_over_fused_linear_matches_torch(base: str) -> None:
    dev = burn.Device(f"{base}+fusion").autodiff()
    xd, wd, bd = data((6, 7), (7, 5), (5,), seed=3)
    x, w, b = (burn.tensor(a, device=dev).require_grad() for a in (xd, wd, bd))
    loss = (F.relu(x.matmul(w) + b) * 2.0).sum()
    grads = loss.backward()
    tx, tw, tb = (torch.from_numpy(a).requires_grad_() for a in (xd, wd, bd))
    tloss = (torch.relu(tx @ tw + tb) * 2.0).sum()
    tloss.backward()
    check(loss, tloss, rtol=1e-5)
    for got, want in ((x, tx), (w, tw), (b, tb)):
        grad = got.grad(grads)
        assert grad is not None and want.grad is not None
        check(grad, want.grad, rtol=1e-4, atol=1e-5)


def _only_elementwise(monkeypatch: pytest.MonkeyPatch, fused: Any) -> None:
    """Fusion with the elementwise fuser alone: reductions and matmuls run at once."""
    import burn.fusion.backend as backend
    from burn.fusion.stream import PLANNED

    real = backend.accepts
    monkeypatch.setattr(backend, "accepts",
                        lambda op, args, handles, cpu: op.name not in PLANNED
                        and real(op, args, handles, cpu))
    fused._results.clear()
    fused.stream.forget()


def test_mlp_train_step_launches_fewer_kernels(base: str, monkeypatch: pytest.MonkeyPatch,
                                               record_property: Callable[[str, object], None]
                                               ) -> None:
    """Linear-ReLU-Linear-ReLU-Linear, softmax cross entropy written from primitives, SGD:
    kernels per step unfused, with the elementwise fuser alone and with every fuser."""
    from burn import nn
    from burn.optim import SgdConfig

    (xd,) = data((32, 24), seed=4)
    target = np.eye(6, dtype=np.float32)[np.random.default_rng(4).integers(0, 6, 32)]
    launches, losses = {}, {}
    fused: Any = burn.Device(f"{base}+fusion").backend
    for name, spec in (("unfused", base), ("elementwise", f"{base}+fusion"),
                       ("fused", f"{base}+fusion")):
        if name == "elementwise":
            _only_elementwise(monkeypatch, fused)
        dev = burn.Device(spec).autodiff()
        burn.seed(0, dev)
        model = nn.Sequential(nn.Linear(24, 48, device=dev), nn.Relu(),
                              nn.Linear(48, 48, device=dev), nn.Relu(),
                              nn.Linear(48, 6, device=dev))
        optim = SgdConfig().init()
        x, t = burn.tensor(xd, device=dev), burn.tensor(target, device=dev)
        run = []
        for step in range(3):
            if step == 2:
                counter = LaunchCounter(monkeypatch, base)
            logits = model(x)
            shifted = logits - logits.max_dim(1)
            logp = shifted - shifted.exp().sum_dim(1).log()
            loss = -(logp * t).sum() / 32.0
            optim.step(0.1, model, loss.backward())
            run.append(loss.item())
        launches[name], losses[name] = counter.take(), run
        monkeypatch.undo()
        fused._results.clear()
        fused.stream.forget()
    record_property("figure", f"MLP 24-48-48-6 SGD step on {base}: {launches['unfused']} "
                    f"kernels unfused, {launches['elementwise']} with the elementwise fuser "
                    f"alone, {launches['fused']} with the reduce and matmul fusers")
    assert launches["fused"] < launches["elementwise"] < launches["unfused"]
    np.testing.assert_allclose(losses["fused"], losses["unfused"], rtol=1e-5)
    np.testing.assert_allclose(losses["elementwise"], losses["unfused"], rtol=1e-5)


@pytest.mark.usefixtures("small_cpu_epilogues_pay")
def test_a_matmul_never_given_an_epilogue_runs_at_once(base: str) -> None:
    """A product the inner backend runs without an epilogue (BLAS on the cpu at once; on GPUs
    `LONE` times) is then run at once, not recorded, even with other ops pending; one that
    had an epilogue that pays (two ops after the product: `stream.FUSE_OPS`; on the cpu the
    vendor product, then its epilogue's one kernel) stays recorded, past the stream's
    settling (`LONE_SHARED` flushes; values as torch's throughout)."""
    from burn.fusion.stream import LONE, LONE_SHARED

    dev = f"{base}+fusion"
    ad, bd, cd = data((19, 23), (23, 17), (23, 29), seed=3)
    a, b, c = (burn.tensor(v, device=dev) for v in (ad, bd, cd))
    ta, tb, tc = (torch.from_numpy(v) for v in (ad, bd, cd))
    for step in range(LONE_SHARED + 2):
        reset_stats()
        # pending while the products are asked for (a chain of three ops: it pays, so it
        # stays recorded)
        other = (a * 2.0).exp().add(1.0)
        alone = a @ b  # never an epilogue
        fused = F.relu(a @ c) * 2.0  # an epilogue: stays recorded
        check(alone, ta @ tb)
        check(fused, torch.relu(ta @ tc) * 2.0)
        check(other, (ta * 2.0).exp().add(1.0))
        recorded = stats().ops_recorded
        if base == "cpu":  # a vendor product alone runs at once from its first run: the
            # chain, a @ c and its epilogue
            assert recorded == (7 if step == 0 else 6), (step, recorded)
        else:  # the chain, a @ c and its epilogue; a @ b until it ran alone LONE times
            assert recorded == (7 if step < LONE else 6), (step, recorded)


def test_a_product_past_fuse_work_runs_alone_then_its_epilogue(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A product of more than `FUSE_WORK` multiply-adds runs as the inner backend's (its own
    tuned kernel) and its epilogue as one elementwise kernel reading it; a product within it
    stays one kernel with its epilogue."""
    import burn.fusion.matmul as fused_matmul

    dev = f"{base}+fusion"
    xd, wd, bd = data((19, 13), (13, 23), (23,), seed=7)
    monkeypatch.setattr(fused_matmul, "FUSE_WORK", 19 * 13 * 23 - 1)
    small_x, small_w = data((5, 13), (13, 23), seed=8)
    gpu = base != "cpu"  # the cpu's BLAS product is no kernel launch: its epilogue's only
    for (a, wt), kernels in (((xd, wd), 2 if gpu else 1), ((small_x, small_w), 1)):
        x, w, b = (burn.tensor(v, device=dev) for v in (a, wt, bd))
        F.relu(x.matmul(w) + b).to_numpy()  # the product's autotuning is not counted
        counter = LaunchCounter(monkeypatch, base)
        y = F.relu(x.matmul(w) + b)
        check(y, torch.relu(torch.from_numpy(a) @ torch.from_numpy(wt) + torch.from_numpy(bd)))
        assert counter.take() == kernels, (a.shape, kernels)
        monkeypatch.undo()
        monkeypatch.setattr(fused_matmul, "FUSE_WORK", 19 * 13 * 23 - 1)


def test_a_small_product_with_only_a_bias_runs_unfused(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small product with only its bias after it (two live ops) does not pay for its
    recording (`stream.FUSE_OPS`). On GPU runtimes from its `LONE`th flush the product and
    the add run as two launches. On the cpu the product is the vendor's (BLAS or the
    runtime's gemm, no kernel launch) and runs at once from its first flush, its add one
    kernel either way (recorded until it ran alone `LONE` times). With a relu and a scale
    after the bias (four ops) the block stays one kernel on every runtime (on the cpu the
    product and one epilogue kernel). Values equal torch's throughout."""
    from burn.fusion.stream import LONE

    dev = f"{base}+fusion"
    burn.Device(dev).backend.stream.forget()
    xd, wd, vd, bd = data((8, 16), (16, 32), (16, 24), (32,), seed=5)
    x, w, v, b = (burn.tensor(a, device=dev) for a in (xd, wd, vd, bd))
    tx, tw, tv, tb = (torch.from_numpy(a) for a in (xd, wd, vd, bd))
    (x @ w + b).to_numpy()  # the products' autotuning (if any) is not counted
    (x @ v).to_numpy()
    counter = LaunchCounter(monkeypatch, base)
    gpu = base != "cpu"
    for step in range(1, 2 * LONE + 1):
        reset_stats()
        check(x @ w + b, tx @ tw + tb)
        assert counter.take() == (2 if gpu and step >= LONE else 1), step
        if not gpu:  # the add alone is recorded until it ran alone LONE times
            assert stats().ops_recorded == (1 if step <= LONE else 0), step
        check(F.relu(x @ v + b[:24]) * 2.0, torch.relu(tx @ tv + tb[:24]) * 2.0)
        assert counter.take() == 1, step
    burn.Device(dev).backend.stream.forget()  # every structure is recorded again
    reset_stats()
    check(x @ w + b, tx @ tw + tb)
    assert stats().ops_recorded == 2



def test_a_line_tile_product_past_line_fuse_work_keeps_its_lines(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the autotuner chose a float32 line tile, a product of more than
    `LINE_FUSE_WORK` multiply-adds runs on that tile alone and its epilogue as one elementwise
    kernel (fused, it would run on the scalar `LINE_FALLBACK` tile: twice as slow as the
    lines for the MLP's first layer on llvmpipe); a smaller one stays one kernel. On the cpu
    the products are the vendor's (BLAS or the gemm, no launch) at both sizes, and the
    epilogue one kernel."""
    import burn.fusion.matmul as fused_matmul

    dev = f"{base}+fusion"
    xd, wd, bd = data((16, 12), (12, 8), (8,), seed=9)
    gpu = base != "cpu"
    if gpu:
        monkeypatch.setattr(fused_matmul, "_tuned", lambda *args: "line64x64x16")
    monkeypatch.setattr(fused_matmul, "LINE_FUSE_WORK", 16 * 12 * 8 - 1)
    small_x = data((4, 12), seed=10)[0]  # 384 multiply-adds: within
    for a, kernels in ((xd, 2 if gpu else 1), (small_x, 1)):
        fused: Any = burn.Device(dev).backend
        fused._results.clear()
        fused.stream.forget()
        x, w, b = (burn.tensor(v, device=dev) for v in (a, wd, bd))
        F.relu(x.matmul(w) + b).to_numpy()  # the product's autotuning is not counted
        counter = LaunchCounter(monkeypatch, base)
        y = F.relu(x.matmul(w) + b)
        check(y, torch.relu(torch.from_numpy(a) @ torch.from_numpy(wd) + torch.from_numpy(bd)))
        assert counter.take() == kernels, (a.shape, counter.names)


def test_large_products_run_at_once_on_gpu_runtimes(base: str) -> None:
    """On GPU runtimes a product past `FUSE_WORK` multiply-adds (which runs as the inner
    backend's product, fused or not) is not recorded: it launches at once, so the device
    works on it while the host records what follows (recorded, it waited for the flush: an
    H100's encoder forward took 13.2 ms against 10.1). Smaller ones are recorded (their
    epilogue fuses into the tile); on the cpu runtime a product is recorded while it has an
    epilogue, else its vendor product (BLAS or the gemm) runs at once. Values as torch's."""
    from burn.fusion.handle import FusionTensor
    from burn.fusion.matmul import FUSE_WORK

    rng = np.random.default_rng(3)
    for m, batch in ((FUSE_WORK // (256 * 256) + 1, ()), (64, ()), (33, (1, 8))):
        a = rng.standard_normal((*batch, m, 256)).astype(np.float32)
        b = rng.standard_normal((256, 256)).astype(np.float32)
        x, w = (burn.tensor(t, device=f"{base}+fusion") * 1.0 for t in (a, b))
        burn.sync(f"{base}+fusion")
        y = x @ w
        large = math.prod(batch) * m * 256 * 256 > FUSE_WORK
        recorded = type(y._prim) is FusionTensor and y._prim.value is None
        assert recorded == (base == "cpu" or not large), (m, batch)
        check((y + 1.0).relu(), (torch.from_numpy(a) @ torch.from_numpy(b) + 1.0).relu(),
              rtol=1e-4, atol=1e-3)


@pytest.mark.usefixtures("small_cpu_epilogues_pay")
def test_a_shared_product_with_only_a_bias_counts_one_flush_alone_a_call(base: str) -> None:
    """A product that led a block that paid (relu and a scale after its bias) is then flushed
    with its bias alone (a block that does not pay): it stays recorded for `LONE_SHARED` such
    calls, one count a flush (on the cpu it was counted twice, once as not paying and once as
    a vendor product: it ran at once after `LONE`), then runs at once; values as torch's."""
    from burn.fusion.stream import LONE_SHARED

    dev = f"{base}+fusion"
    xd, wd, bd = data((8, 16), (16, 4), (4,), seed=3)
    x, w, b = (burn.tensor(a, device=dev) for a in (xd, wd, bd))
    tx, tw, tb = (torch.from_numpy(a) for a in (xd, wd, bd))
    for _ in range(3):
        check(F.relu(x @ w + b) * 2.0, torch.relu(tx @ tw + tb) * 2.0)
    for step in range(LONE_SHARED + 2):
        reset_stats()
        check(x @ w + b, tx @ tw + tb)
        assert stats().ops_recorded == (2 if step < LONE_SHARED else 1), step
