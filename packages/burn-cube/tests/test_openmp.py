"""The cpu runtime's private OpenMP runtime (`runtime/openmp.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from burn_cube.runtime import openmp
from burn_cube.runtime.cpu import find_compiler

#: Prints the OpenMP libraries mapped and the process's thread count before and after a
#: kernel launch large enough to run in parallel (OMP_NUM_THREADS=2 in its environment).
SCRIPT = """
import os, sys
import numpy as np
if sys.argv[1] == "torch":
    import torch  # loads torch's libgomp RTLD_GLOBAL first
    torch.set_num_threads(1)  # torch's OpenMP team: one thread
    torch.ones(1 << 20).exp()
import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Tensor, f32

@bc.kernel
def double(x: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        x[i] = x[i] * 2.0

x = np.ones(1 << 20, np.float32)
double.launch("cpu", 1, 16, x)  # compiled and loaded; 16 units run on the calling thread
before = len(os.listdir("/proc/self/task"))
double.launch("cpu", (1 << 20) // 256, 256, x)
after = len(os.listdir("/proc/self/task"))
maps = {line.split()[-1].rsplit("/", 1)[-1] for line in open("/proc/self/maps") if "gomp" in line}
print(float(x[0]), after - before, *sorted(maps))
"""


def private_available() -> bool:
    return sys.platform == "linux" and openmp.private_openmp(find_compiler()) is not None


def run_script(folder: Path, first: str) -> list[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    script = folder / "script.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), first], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(not private_available(), reason="no private libgomp copy (not gcc/ELF)")
def test_kernels_run_on_the_private_copy(tmp_path: Path) -> None:
    value, new_threads, *libs = run_script(tmp_path, "burn")
    assert value == "4.0"
    assert libs == [openmp.SONAME]  # the shared libgomp is never loaded
    assert new_threads == "1"  # the private team's second thread


@pytest.mark.skipif(not private_available(), reason="no private libgomp copy (not gcc/ELF)")
def test_torch_libgomp_loaded_first_is_not_used(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    value, new_threads, *libs = run_script(tmp_path, "torch")
    assert value == "4.0"
    assert libs == [openmp.SONAME, "libgomp.so.1"]
    # bound to torch's team (set to one thread) the launch would start no thread
    assert new_threads == "1"


@pytest.mark.skipif(not private_available(), reason="no private libgomp copy (not gcc/ELF)")
def test_rename_soname_round_trip() -> None:
    folder = openmp.private_openmp(find_compiler())
    assert folder is not None
    data = bytearray((folder / openmp.SONAME).read_bytes())
    original = bytes(data)
    openmp.rename_soname(data, openmp.SONAME.encode(), b"libgomp.so.1")
    assert len(data) == len(original) and data != original
    openmp.rename_soname(data, b"libgomp.so.1", openmp.SONAME.encode())
    assert bytes(data) == original
    with pytest.raises(ValueError, match="soname is not"):
        openmp.rename_soname(data, b"libgomp.so.1", b"libxx.so")


def test_rename_soname_refuses_non_elf() -> None:
    with pytest.raises(ValueError, match="ELF64"):
        openmp.rename_soname(bytearray(b"#!/bin/sh\n" * 8), b"libgomp.so.1", b"libbc.so")
    with pytest.raises(ValueError, match="longer"):
        openmp.rename_soname(bytearray(b"\x7fELF\x02\x01" + bytes(64)), b"a.so", b"longer.so")


@pytest.mark.skipif(not private_available(), reason="no private libgomp copy (not gcc/ELF)")
def test_copy_is_recorded_per_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    folder = openmp._copy(find_compiler())
    assert folder is not None and (folder / openmp.SONAME).is_file()

    monkeypatch.setattr(openmp.subprocess, "run", _no_compiler)
    assert openmp._copy(find_compiler()) == folder


def test_no_libgomp_is_recorded_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path / "cache"))
    compiler = tmp_path / "cc"
    compiler.write_text("#!/bin/sh\nexit 1\n")
    compiler.chmod(0o755)
    assert openmp._copy(str(compiler)) is None  # the compiler names no libgomp
    monkeypatch.setattr(openmp.subprocess, "run", _no_compiler)
    assert openmp._copy(str(compiler)) is None  # the record stands: nothing runs
    assert openmp.link_flags(None) == ()


def _no_compiler(*args: object, **kwargs: object) -> None:
    raise AssertionError("the compiler ran again")


@pytest.mark.parametrize("user", [None, ("OMP_WAIT_POLICY", "PASSIVE"), ("GOMP_SPINCOUNT", "7")])
def test_brief_spinning_while_the_copy_loads(user: tuple[str, str] | None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """While a libgomp loads, idle threads are told to spin `SPIN_COUNT` times, then sleep;
    a user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is left as it is; nothing stays set after."""
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(name, raising=False)
    if user is not None:
        monkeypatch.setenv(*user)
    with openmp.brief_spinning():
        inside = os.environ.get("GOMP_SPINCOUNT")
    if user is None:
        assert inside == str(openmp.SPIN_COUNT)
        assert "GOMP_SPINCOUNT" not in os.environ
    else:
        assert os.environ.get(user[0]) == user[1]
        assert inside == (user[1] if user[0] == "GOMP_SPINCOUNT" else None)


def test_brief_spinning_from_threads_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads loading kernels at once (a device's first use from several) each see the
    spin count set while inside, never fail restoring it, and leave nothing set."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    seen: list[str | None] = []
    failures: list[BaseException] = []
    barrier = threading.Barrier(8)

    def load() -> None:
        barrier.wait()
        try:
            for _ in range(200):
                with openmp.brief_spinning():
                    seen.append(os.environ.get("GOMP_SPINCOUNT"))
        except BaseException as exc:  # (a KeyError restoring the variable)
            failures.append(exc)

    threads = [threading.Thread(target=load) for _ in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    assert len(seen) == 8 * 200 and set(seen) == {str(openmp.SPIN_COUNT)}
    assert "GOMP_SPINCOUNT" not in os.environ
