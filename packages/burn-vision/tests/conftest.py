"""Fixtures: each op runs on the NumPy backend twice, through its host fast path and through
the default burn-ops path (the one every backend runs)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import burn
import burn_vision
from burn_vision.extension import VisionOps, register_vision_ops, vision_ops


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A skipped test is a failure here: every reference this suite needs is installed."""
    if call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception):
        call.excinfo = None
        raise AssertionError(f"{item.nodeid} was skipped")


#: the cube backends each `path` test also runs on (their burn-cube kernels); "cuda" only where
#: an NVIDIA GPU is (deselected elsewhere, the reason printed in the summary). cpu and wgpu are
#: never deselected: without burn-cube or a Vulkan driver their tests fail, saying why.
CUBE_DEVICES = ("cpu", "wgpu", "cuda")
GPU_ONLY_DEVICES = ("cuda",)


def _unavailable(name: str) -> str | None:
    """Why backend `name` cannot run here, or None."""
    info = {b.name: b for b in burn.available_backends()}.get(name)
    if info is None:
        return "not registered"
    return None if info.available else info.reason or "unavailable"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_nvcc: compiles CUDA C (deselected without nvcc)")


def _deselection_notes() -> list[str]:
    lines = [f"burn-vision: {name} tests deselected ({reason})" for name in GPU_ONLY_DEVICES
             if (reason := _unavailable(name))]
    if shutil.which("nvcc") is None:
        lines.append("burn-vision: needs_nvcc tests deselected (nvcc is not on PATH)")
    return lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say which tests were deselected and why (also under -q)."""
    for line in _deselection_notes():
        terminalreporter.write_line(line)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests on a GPU backend this machine cannot run, or needing an absent nvcc, are
    deselected (not skipped: a skip fails this suite); the summary says why."""
    absent = {name for name in GPU_ONLY_DEVICES if _unavailable(name)}
    no_nvcc = shutil.which("nvcc") is None
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        spec = getattr(item, "callspec", None)
        params = spec.params if spec is not None else {}
        device = params.get("path", params.get("device"))
        unrunnable = device in absent or (no_nvcc and item.get_closest_marker("needs_nvcc"))
        (drop if unrunnable else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(params=["fast", "default", *CUBE_DEVICES])
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with the NumPy fast paths ("fast"), the default ops ("default"), or on a
    cube backend's device (its burn-cube kernels) as the default device."""
    fast = vision_ops(burn.Device("numpy"))
    if request.param == "default":
        register_vision_ops("numpy", VisionOps())
    elif request.param in CUBE_DEVICES:
        burn.set_default_device(request.param)
    try:
        yield request.param
    finally:
        register_vision_ops("numpy", fast)
        burn.set_default_device(None)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def check(actual: burn.Tensor, expected: np.ndarray, dtype: burn.DType, atol: float = 0.0
          ) -> None:
    """Shape, dtype, then values."""
    assert actual.shape == expected.shape
    assert actual.dtype == dtype
    np.testing.assert_allclose(actual.to_numpy(), expected, atol=atol, rtol=0)


assert burn_vision.__version__ == "0.1.0"
