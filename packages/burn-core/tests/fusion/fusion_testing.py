"""Helpers of the fusion tests: the fusion devices of this machine, a kernel-launch counter at
the burn-cube runtime (independent of the fusion decorator's own statistics) and the value
check against torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.fusion import FusionTensor

#: Cube backends with a fusion form here (wgpu runs on Mesa's CPU adapter where there is no GPU;
#: cuda where CuPy finds a device).
DEVICES = [name for name in ("cpu", "wgpu", "cuda")
           if any(b.name == name and b.available for b in burn.available_backends())]


class LaunchCounter:
    """Counts the kernels a burn-cube runtime launches, planned launches included.

    Launch plans made before counting started would not be counted, so the counter empties the
    plan caches of the cube backend and of its fusion stream when it starts.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, base: str) -> None:
        self.count = 0
        self.names: list[str] = []  # the launched kernels' names, in order
        self._planned = False
        backend: Any = burn.Device(base).backend
        backend.plans.clear()
        fused: Any = burn.Device(f"{base}+fusion").backend
        fused.stream.plans.clear()
        fused.stream.cells.clear()
        rt = type(backend.runtime)
        real_launch, real_plan = rt.launch, rt.plan

        def launch(this: Any, *args: Any) -> None:
            if not self._planned:  # a runtime's launcher may call its `launch`
                self.count += 1
                self.names.append(args[1].name)
            real_launch(this, *args)

        def plan(this: Any, *args: Any) -> Callable[[Any], None]:
            launcher = real_plan(this, *args)
            name = args[1].name

            def counted(values: Any) -> None:
                self.count += 1
                self.names.append(name)
                self._planned = True
                try:
                    launcher(values)
                finally:
                    self._planned = False

            return counted

        monkeypatch.setattr(rt, "launch", launch)
        monkeypatch.setattr(rt, "plan", plan)

    def take(self) -> int:
        """Launches since the last call (or since counting started)."""
        count, self.count = self.count, 0
        return count


def pending(t: burn.Tensor) -> bool:
    """Whether `t` is the result of a recorded op that has not run yet."""
    return isinstance(t._prim, FusionTensor) and t._prim.value is None


def check(got: burn.Tensor, want: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Shape and dtype first, then values (NaN where torch has NaN)."""
    values = got.to_numpy()
    expected = want.detach().numpy()
    assert values.shape == expected.shape
    assert values.dtype == expected.dtype
    np.testing.assert_allclose(values, expected, rtol=rtol, atol=atol, equal_nan=True)


def gradients_agree(fn: Callable[..., Any], base: str, *arrays: np.ndarray,
                    rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """The loss `fn` and the gradients of its arguments on the fusion device with autodiff
    (twice: planned, then from the plans) and on the inner backend with autodiff, against
    torch autograd."""
    theirs = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    tloss = fn(*theirs)
    tloss.backward()
    for dev in (f"{base}+fusion+autodiff", f"{base}+fusion+autodiff", f"{base}+autodiff"):
        mine = [burn.tensor(a, device=dev).require_grad() for a in arrays]
        loss = fn(*mine)
        grads = loss.backward()
        check(loss, tloss, rtol=rtol, atol=atol)
        for got, want in zip(mine, theirs, strict=True):
            grad = got.grad(grads)
            if want.grad is None:
                assert grad is None
                continue
            assert grad is not None
            check(grad, want.grad, rtol=rtol, atol=atol)


def folds_half_rounding(base: str) -> bool:
    """Whether the runtime of device `base` folds float16 round trips inside a kernel (NVIDIA's
    Vulkan driver under wgpu; docs/differences.md), probed once per runtime by burn-cube."""
    import burn_cube
    from burn_cube.runtime.probes import folds_half_rounding as probe

    return probe(burn_cube.runtime(base))


def reference(base: str, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
    """torch's result, computed with subnormals flushed to zero where the device flushes them
    (NVIDIA's Vulkan driver under wgpu: ``1 / (1 / 3e38)`` is inf there; docs/differences.md)."""
    import burn_cube
    from burn_cube.runtime.probes import flushes_subnormals

    flush = flushes_subnormals(burn_cube.runtime(base)) and torch.set_flush_denormal(True)
    try:
        return compute()
    finally:
        if flush:
            torch.set_flush_denormal(False)
