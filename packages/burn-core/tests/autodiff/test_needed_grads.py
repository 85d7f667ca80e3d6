"""Autodiff computes only the gradients of tracked inputs: which backend ops a backward runs
(seen through `burn.profile()`), and that the gradients it does compute equal PyTorch's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

CONVS: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {
    1: (F.conv1d, torch.nn.functional.conv1d), 2: (F.conv2d, torch.nn.functional.conv2d),
    3: (F.conv3d, torch.nn.functional.conv3d)}
CASES = [  # x shape, weight shape, options
    ((4, 3, 13, 11), (5, 3, 3, 2), {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}),
    ((2, 4, 9), (6, 2, 3), {"stride": (2,), "padding": (1,), "groups": 2}),
    ((3, 2, 11), (4, 2, 3), {"stride": (2,), "padding": (2,), "dilation": (2,)}),
    ((2, 3, 7, 6, 5), (4, 3, 2, 3, 2), {"stride": (1, 2, 1), "padding": (0, 1, 1),
                                        "dilation": (2, 1, 1)}),
]
# tracked inputs -> the backward's conv ops (ungrouped 1d / 2d; grouped and 3d weight grads
# use conv_backward)
EXPECTED = {"x": ["conv_transpose"], "wb": ["unfold4d"], "w": ["unfold4d"],
            "xwb": ["conv_backward"]}


def _backward_ops(fn: Callable[[], burn.Tensor]) -> tuple[list[str], Any]:
    """The names of the ops the backward of sum(fn() ** 2) runs, and its gradients."""
    out = fn()
    with burn.profile() as prof:
        grads = (out * out).sum().backward()
    return [r.record.name for r in prof.records], grads


@pytest.mark.parametrize("tracked", sorted(EXPECTED))
@pytest.mark.parametrize("case", range(len(CASES)), ids=["2d", "1d-groups", "1d", "3d"])
def test_conv_backward_computes_only_tracked_grads(case: int, tracked: str) -> None:
    x_shape, w_shape, options = CASES[case]
    device = burn.Device("numpy").profile().autodiff()
    rng = np.random.default_rng(case)
    arrays = {"x": rng.standard_normal(x_shape), "w": rng.standard_normal(w_shape),
              "b": rng.standard_normal(w_shape[0])}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    inputs = {k: burn.tensor(v, device=device) for k, v in arrays.items()}
    inputs = {k: t.require_grad() if k in tracked else t for k, t in inputs.items()}
    ours, theirs = CONVS[len(x_shape) - 2]
    names, grads = _backward_ops(
        lambda: ours(inputs["x"], inputs["w"], inputs["b"], **options))
    conv_ops = [n for n in names if n.startswith(("conv", "unfold"))]
    unfoldable = options.get("groups", 1) == 1 and len(x_shape) < 5
    params_only = "x" not in tracked
    assert conv_ops == (EXPECTED[tracked] if unfoldable or not params_only
                        else ["conv_backward"])
    refs = {k: torch.from_numpy(v).requires_grad_(k in tracked) for k, v in arrays.items()}
    out = theirs(refs["x"], refs["w"], refs["b"], **options)
    (out * out).sum().backward()
    for key in tracked:
        grad, ref = inputs[key].grad(grads), refs[key]
        assert grad is not None and ref.grad is not None
        assert grad.shape == tuple(ref.shape) and grad.to_numpy().dtype == np.float32
        scale = float(ref.grad.abs().max())
        np.testing.assert_allclose(grad.to_numpy(), ref.grad.numpy(), rtol=1e-5,
                                   atol=2e-6 * scale)


@pytest.mark.parametrize("tracked", ["lhs", "rhs"])
def test_matmul_backward_multiplies_only_for_the_tracked_operand(tracked: str) -> None:
    device = burn.Device("numpy").profile().autodiff()
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    lhs, rhs = burn.tensor(a, device=device), burn.tensor(b, device=device)
    lhs, rhs = (lhs.require_grad(), rhs) if tracked == "lhs" else (lhs, rhs.require_grad())
    names, grads = _backward_ops(lambda: lhs @ rhs)
    assert names.count("float_matmul") == 1
    ta = torch.from_numpy(a).requires_grad_(tracked == "lhs")
    tb = torch.from_numpy(b).requires_grad_(tracked == "rhs")
    out = ta @ tb
    (out * out).sum().backward()
    ours, ref = (lhs, ta) if tracked == "lhs" else (rhs, tb)
    grad = ours.grad(grads)
    assert grad is not None and ref.grad is not None and grad.shape == tuple(ref.shape)
    np.testing.assert_allclose(grad.to_numpy(), ref.grad.numpy(), rtol=1e-12)


def test_matmul_gradient_of_a_shared_rhs_is_one_product_over_all_rows() -> None:
    """[B, S, k] @ [k, n] (a linear layer on a sequence): the rhs gradient is one [k, B*S] x
    [B*S, n] product, not B products summed."""
    device = burn.Device("numpy").profile().autodiff()
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 5, 4)), rng.standard_normal((4, 6))
    lhs, rhs = burn.tensor(a, device=device), burn.tensor(b, device=device).require_grad()
    names, grads = _backward_ops(lambda: lhs @ rhs)
    assert names.count("float_matmul") == 1 and "float_sum_dim" not in names
    tb = torch.from_numpy(b).requires_grad_()
    out = torch.from_numpy(a) @ tb
    (out * out).sum().backward()
    grad = rhs.grad(grads)
    assert grad is not None and tb.grad is not None and grad.shape == (4, 6)
    np.testing.assert_allclose(grad.to_numpy(), tb.grad.numpy(), rtol=1e-12)


TRANSPOSE_CASES = [  # x shape, weight shape, options
    ((2, 4, 5, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1, "output_padding": 1}),
    ((3, 4, 7), (4, 2, 3), {"stride": 2, "padding": 1, "dilation": 2}),
    ((2, 4, 6), (4, 3, 3), {"stride": 2, "groups": 2}),
]
TRANSPOSES = {1: (F.conv_transpose1d, torch.nn.functional.conv_transpose1d),
              2: (F.conv_transpose2d, torch.nn.functional.conv_transpose2d)}


@pytest.mark.parametrize("tracked", ["x", "w", "wb", "xwb"])
@pytest.mark.parametrize("case", range(len(TRANSPOSE_CASES)), ids=["2d", "1d", "1d-groups"])
def test_conv_transpose_backward_computes_only_tracked_grads(case: int, tracked: str) -> None:
    """x alone: one conv (the adjoint); weight / bias alone: an unfold of the output gradient
    (ungrouped); all: conv_transpose_backward. Gradients equal torch's."""
    x_shape, w_shape, options = TRANSPOSE_CASES[case]
    device = burn.Device("numpy").profile().autodiff()
    rng = np.random.default_rng(10 + case)
    groups = options.get("groups", 1)
    arrays = {"x": rng.standard_normal(x_shape), "w": rng.standard_normal(w_shape),
              "b": rng.standard_normal(w_shape[1] * groups)}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    inputs = {k: burn.tensor(v, device=device) for k, v in arrays.items()}
    inputs = {k: t.require_grad() if k in tracked else t for k, t in inputs.items()}
    ours, theirs = TRANSPOSES[len(x_shape) - 2]
    names, grads = _backward_ops(lambda: ours(inputs["x"], inputs["w"], inputs["b"], **options))
    conv_ops = [n for n in names if n.startswith(("conv", "unfold"))]
    if tracked == "x":
        assert conv_ops == ["conv"]
    elif tracked != "xwb" and groups == 1:
        assert conv_ops == ["unfold4d"]
    else:
        assert conv_ops == ["conv_transpose_backward"]
    refs = {k: torch.from_numpy(v).requires_grad_(k in tracked) for k, v in arrays.items()}
    out = theirs(refs["x"], refs["w"], refs["b"], **options)
    (out * out).sum().backward()
    for key in tracked:
        grad, ref = inputs[key].grad(grads), refs[key]
        assert grad is not None and ref.grad is not None
        assert grad.shape == tuple(ref.shape) and grad.to_numpy().dtype == np.float32
        scale = float(ref.grad.abs().max())
        np.testing.assert_allclose(grad.to_numpy(), ref.grad.numpy(), rtol=1e-5,
                                   atol=2e-6 * scale)


def _sampling_spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, bool]]:
    """The (need image grad, need point grads) flags of each NumPy sample_backward call."""
    import importlib

    conv, grid_sample, sampling = (importlib.import_module(f"burn.backends.numpy.module.{name}")
                                   for name in ("conv", "grid_sample", "sampling"))
    calls: list[tuple[bool, bool]] = []
    original = sampling.sample_backward

    def spy(*args: Any) -> Any:
        calls.append((args[5], args[6]) if len(args) > 5 else (True, True))
        return original(*args)

    monkeypatch.setattr(grid_sample, "sample_backward", spy)
    monkeypatch.setattr(conv, "sample_backward", spy)
    return calls


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("tracked", ["x", "grid", "xgrid"])
def test_grid_sample_backward_computes_only_tracked_grads(
        tracked: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _sampling_spy(monkeypatch)
    device = burn.Device("numpy").autodiff()
    rng = np.random.default_rng(7)
    arrays = {"x": rng.standard_normal((2, 3, 5, 6)).astype(np.float32),
              "grid": rng.uniform(-1.2, 1.2, (2, 4, 3, 2)).astype(np.float32)}
    inputs = {k: burn.tensor(v, device=device) for k, v in arrays.items()}
    inputs = {k: t.require_grad() if k in tracked else t for k, t in inputs.items()}
    out = F.grid_sample_2d(inputs["x"], inputs["grid"], mode=mode)
    grads = (out * out).sum().backward()
    assert calls == [("x" in tracked, "grid" in tracked)]
    refs = {k: torch.from_numpy(v).requires_grad_(k in tracked) for k, v in arrays.items()}
    ref_out = torch.nn.functional.grid_sample(refs["x"], refs["grid"], mode=mode,
                                              align_corners=False)
    (ref_out * ref_out).sum().backward()
    for key in ("x", "grid"):
        grad = inputs[key].grad(grads)
        if key not in tracked:
            assert grad is None
            continue
        ref = refs[key].grad
        assert grad is not None and ref is not None and grad.shape == tuple(ref.shape)
        np.testing.assert_allclose(grad.to_numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tracked", ["x", "offset", "weight", "mask", "bias", "weight-bias"])
def test_deform_conv2d_backward_computes_only_tracked_grads(
        tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each subset's gradients equal those of the full backward (every input tracked), and
    the sampling's image / point gradients run only when x / the offsets are tracked."""
    calls = _sampling_spy(monkeypatch)
    device = burn.Device("numpy").autodiff()
    rng = np.random.default_rng(8)
    arrays = {"x": rng.standard_normal((2, 4, 5, 6)),
              "offset": rng.uniform(-1.5, 1.5, (2, 36, 5, 6)),
              "weight": rng.standard_normal((4, 2, 3, 3)),
              "mask": rng.uniform(0, 1, (2, 18, 5, 6)), "bias": rng.standard_normal(4)}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}

    def run(keys: set[str]) -> tuple[dict[str, burn.Tensor], Any]:
        ts = {k: burn.tensor(v, device=device) for k, v in arrays.items()}
        ts = {k: t.require_grad() if k in keys else t for k, t in ts.items()}
        out = F.deform_conv2d(ts["x"], ts["offset"], ts["weight"], ts["mask"], ts["bias"],
                              padding=1)
        return ts, (out * out).sum().backward()

    keys = set(tracked.split("-"))
    full_inputs, full_grads = run(set(arrays))
    calls.clear()
    inputs, grads = run(keys)
    sampled = keys & {"x", "offset"}
    assert calls == ([("x" in keys, "offset" in keys)] if sampled else [])
    for key in arrays:
        grad = inputs[key].grad(grads)
        if key not in keys:
            assert grad is None
            continue
        want = full_inputs[key].grad(full_grads)
        assert grad is not None and want is not None and grad.shape == want.shape
        np.testing.assert_array_equal(grad.to_numpy(), want.to_numpy())
