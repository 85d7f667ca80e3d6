"""Backends declare the dtypes they support; the frontend refuses the others with a typed error,
and the conformance suite counts "declared unsupported and raising that error" as conformant."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import burn
from burn.backend import registry
from burn.backends.numpy import NumpyBackend
from burn.errors import UnsupportedDTypeError

REPO = Path(__file__).resolve().parents[4]

BACKEND_SOURCE = """
from burn.backends.numpy import NumpyBackend
from burn.device import Device
from burn.dtype import DType


class NoHalf(NumpyBackend):
    '''The NumPy backend without 16-bit floats (CLAIMS: whether it says it has them).'''

    def supports(self, dtype):
        return CLAIMS or dtype not in (DType.float16, DType.bfloat16)

    def device_of(self, x):
        return Device("nohalf")

    def float_from_data(self, data, device):
        if data.dtype.itemsize == 2:
            from burn.errors import UnsupportedDTypeError
            raise UnsupportedDTypeError("from_data", "no 16-bit floats", dtype="float16",
                                        device="nohalf")
        return super().float_from_data(data, device)
"""


class NoHalf(NumpyBackend):
    def supports(self, dtype: burn.DType) -> bool:
        return dtype not in (burn.float16, burn.bfloat16)

    def device_of(self, x: object) -> burn.Device:
        return burn.Device("nohalf")


@pytest.fixture
def nohalf() -> Iterator[str]:
    burn.register_backend("nohalf", NoHalf)
    yield "nohalf"
    registry._targets[registry.BACKEND_GROUP].pop("nohalf", None)
    registry._loaded.clear()


@pytest.mark.parametrize("make, op", [
    (lambda d: burn.zeros(2, dtype=burn.float16, device=d), "zeros"),
    (lambda d: burn.tensor([1.0], dtype=burn.bfloat16, device=d), "tensor"),
    (lambda d: burn.randn(3, dtype=burn.float16, device=d), "randn"),
    (lambda d: burn.arange(3, dtype=burn.float16, device=d), "arange"),
    (lambda d: burn.ones(2, device=d).to(burn.float16), "cast"),
])
def test_unsupported_dtype_is_a_typed_error_naming_op_dtype_device(nohalf, make, op):
    with pytest.raises(UnsupportedDTypeError, match=op) as info:
        make(nohalf)
    assert info.value.details["device"] == "nohalf"
    assert info.value.details["dtype"] in ("float16", "bfloat16")
    assert burn.ones(2, device=nohalf).dtype is burn.float32  # supported dtypes still work


def _run_conformance(tmp_path: Path, claims: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "burnext_nohalf.py").write_text(
        f"CLAIMS = {claims}\n" + textwrap.dedent(BACKEND_SOURCE))
    dist = tmp_path / "burnext_nohalf-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: burnext-nohalf\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[burn.backends]\nnohalf = burnext_nohalf:NoHalf\n")
    env = {**os.environ, "BURN_DEVICE": "nohalf",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    suite = REPO / "packages/burn-core/tests/conformance/test_math.py"
    return subprocess.run([sys.executable, "-m", "pytest", str(suite), "-o", "addopts=", "-p",
                           "no:cacheprovider", "-k", "forward and exp and float16"],
                          env=env, capture_output=True, text=True, timeout=300, cwd=REPO)


def test_conformance_accepts_a_declared_unsupported_dtype(tmp_path):
    run = _run_conformance(tmp_path, claims=False)
    assert run.returncode == 0, run.stdout[-2000:]
    assert " passed" in run.stdout and "failed" not in run.stdout


def test_conformance_fails_a_backend_that_claims_a_dtype_it_refuses(tmp_path):
    run = _run_conformance(tmp_path, claims=True)
    assert run.returncode == 1 and " failed" in run.stdout, run.stdout[-2000:]
