"""Backend conformance suite: every op of docs/tensor-api.md against PyTorch (CPU).

The backend under test is `burn.default_device()`, i.e. $BURN_DEVICE (default "numpy"). Forward
tests run on the `device` fixture, backward tests on `grad_device` (the autodiff form of it), so
the whole suite runs for "numpy" and for "numpy+autodiff" alike. Nothing is skipped: a skip is
turned into a failure, and every test names its op with `@pytest.mark.op(name)` (xtask ops-table
builds docs/ops.md from those names).
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

import burn
from burn.errors import UnsupportedDTypeError

_HERE = Path(__file__).parent.resolve()

# Tiny tensors: thread pools only cost time (CI has two cores and runs two suites).
torch.set_num_threads(1)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "op(name): the tensor-API op a conformance test checks (for xtask ops-table)")


def pytest_report_header(config: pytest.Config) -> str:
    return f"burn conformance: BURN_DEVICE={os.environ.get('BURN_DEVICE', '<unset>')}"


def _in_suite(item: pytest.Item) -> bool:
    return _HERE in Path(str(item.path)).resolve().parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problems = []
    for item in items:
        if not _in_suite(item):
            continue
        if item.get_closest_marker("op") is None:
            problems.append(f"{item.nodeid}: no @pytest.mark.op(name)")
        if item.get_closest_marker("xfail") is not None or item.get_closest_marker("skip"):
            problems.append(f"{item.nodeid}: xfail / skip markers are not allowed")
    if problems:
        raise pytest.UsageError("conformance suite:\n  " + "\n  ".join(problems))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and _in_suite(item):
        report.outcome = "failed"
        report.longrepr = f"conformance tests never skip; this one did: {report.longrepr}"


def _names(nodeid: str, dtype: str) -> bool:
    """Whether a test id names `dtype` as a parameter ("float16" is not named by "bfloat16")."""
    return re.search(rf"(?<![a-z]){dtype}(?![0-9])", nodeid) is not None


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> object:
    """A test passes when the op equals PyTorch's, or when it is parametrized by a dtype the
    backend declares unsupported (`Backend.supports`) and the op raises UnsupportedDTypeError
    for that dtype. The refusal of a dtype the test did not ask for (an op computing through
    float64 on a device without it) stays a failure."""
    outcome = yield
    error = outcome.excinfo[1] if outcome.excinfo else None
    if isinstance(error, UnsupportedDTypeError) and _in_suite(pyfuncitem):
        dtype = burn.DType(error.details["dtype"])
        backend = burn.Device(error.details["device"]).backend
        if not backend.supports(dtype) and _names(pyfuncitem.nodeid, dtype.value):
            pyfuncitem.user_properties.append(("unsupported", dtype.value))
            outcome.force_result(True)


@pytest.fixture(scope="session")
def device() -> burn.Device:
    """The device under test (from $BURN_DEVICE)."""
    return burn.default_device()


@pytest.fixture(autouse=True)
def _device_errors_fail_their_own_test(device: burn.Device) -> Iterator[None]:
    """A check that failed in a device kernel (an index out of range, an integer division by
    zero) is raised at the next sync point: sync after each test, so it fails the test that
    caused it rather than the next one."""
    yield
    burn.sync(device)


@pytest.fixture(scope="session")
def grad_device(device: burn.Device) -> burn.Device:
    """`device` if it tracks gradients, else its autodiff form."""
    return device if device.is_autodiff else device.autodiff()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test id (reproducible, different per test)."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


# --- the op table: on a device with the Profile decorator ("numpy+profile"), every op the suite
# runs is checked against the op table's shape and dtype rules as it runs; with
# BURN_OP_COVERAGE=1 the session also fails unless every op of the table ran.
_REPORT: list[object] = []


@pytest.fixture(scope="session", autouse=True)
def _op_table_check(device: burn.Device) -> object:
    if "profile" not in device.decorators:
        yield None
        return
    with burn.profile(verify=True) as report:
        _REPORT.append(report)
        yield report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _REPORT or os.environ.get("BURN_OP_COVERAGE") != "1":
        return
    from burn.ir import OPS

    # Moving between two devices of one backend needs a backend with two devices.
    exempt = {f"{kind}_to_device" for kind in ("float", "int", "bool")}
    missing = sorted(set(OPS) - exempt - _REPORT[0].op_names)  # type: ignore[attr-defined]
    if missing:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nconformance suite: {len(missing)} ops of the op table never ran: "
              + ", ".join(missing))
    else:
        print(f"\nconformance suite: all {len(OPS) - len(exempt)} ops of the op table (but "
              f"{', '.join(sorted(exempt))}) ran and matched their shape and dtype rules")
