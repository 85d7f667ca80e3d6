"""Compile cache: hits, corrupt entries, concurrent writers."""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cache_kernels import run

import burn_cube as bc
from burn_cube.errors import CompileError
from burn_cube.kernel import IRKernel
from burn_cube.runtime import cpu
from burn_cube.runtime.cpu import CpuRuntime

SCRIPT = """
import numpy as np, burn_cube as bc
from burn_cube import ABSOLUTE_POS, Tensor, f32

@bc.kernel
def add_five(x: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        x[i] = x[i] + 5.0

x = np.zeros(8, np.float32)
add_five.launch("cpu", 1, 8, x)
print(x[0])
"""


def entries(root: Path) -> list[Path]:
    return sorted(root.glob("*.so"))


def test_hit_in_memory_and_on_disk() -> None:
    root = Path(os.environ["BURN_CUBE_CACHE_DIR"])
    before = len(entries(root))
    assert run(7.0) == 7.0
    after = entries(root)
    assert len(after) == before + 1
    mtime = max(p.stat().st_mtime_ns for p in after)
    assert run(7.0) == 7.0  # a new runtime: served from disk
    assert len(entries(root)) == before + 1
    assert max(p.stat().st_mtime_ns for p in entries(root)) == mtime


def test_corrupt_entry_is_recompiled_with_warning() -> None:
    root = Path(os.environ["BURN_CUBE_CACHE_DIR"])
    before = set(entries(root))
    assert run(3.0) == 3.0
    (newest,) = set(entries(root)) - before
    # Truncate through a new file: a loaded library must never be modified in place.
    truncated = newest.with_suffix(".partial")
    truncated.write_bytes(newest.read_bytes()[:100])
    os.replace(truncated, newest)
    with pytest.warns(RuntimeWarning, match="corrupt compile-cache entry"):
        assert run(3.0) == 3.0
    assert len(newest.read_bytes()) > 100


def _worker(_: int) -> float:
    return run(11.0)


def test_concurrent_writers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    with mp.get_context("spawn").Pool(4) as pool:
        assert pool.map(_worker, range(4)) == [11.0] * 4
    sos = entries(tmp_path)
    assert len(sos) == 1 and not list(tmp_path.glob(".*tmp")) and not list(
        tmp_path.glob(".build-*"))
    assert run(11.0) == 11.0  # the surviving entry verifies and loads


def test_fresh_process_hit(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    root = Path(os.environ["BURN_CUBE_CACHE_DIR"])
    for run_index in range(2):
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             check=True)
        assert out.stdout.strip() == "5.0"
        if run_index == 0:
            snapshot = entries(root)
    assert entries(root) == snapshot  # the second process compiled nothing


INDEX_SCRIPT = """
import numpy as np, burn_cube as bc
from burn_cube import ABSOLUTE_POS, Tensor, f32

OFFSET = {offset}

@bc.kernel
def shift(x: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        x[i] = x[i] + {addend} + OFFSET

x = np.zeros(8, np.float32)
shift.launch("cpu", 1, 8, x)
print(x[0], shift.stats["lowered"], shift.stats["index_hits"])
"""


def test_launch_index_skips_lowering_and_misses_when_stale(tmp_path: Path) -> None:
    script = tmp_path / "script.py"

    def run_script(addend: float, offset: float) -> list[str]:
        script.write_text(INDEX_SCRIPT.format(addend=addend, offset=offset))
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              check=True).stdout.split()

    assert run_script(1.0, 0.0) == ["1.0", "1", "0"]  # cold: lowered and compiled
    assert run_script(1.0, 0.0) == ["1.0", "0", "1"]  # fresh process: index hit, no lowering
    assert run_script(2.0, 0.0) == ["2.0", "1", "0"]  # kernel source changed: stale, missed
    assert run_script(2.0, 3.0) == ["5.0", "1", "0"]  # a global it reads changed: missed
    assert run_script(2.0, 3.0) == ["5.0", "0", "1"]


def test_cache_dir_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BURN_CUBE_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert bc.cache.cache_dir() == tmp_path / ".cache" / "burn-cube"
    assert isinstance(CpuRuntime().disk.root, Path)


def _only_entry(root: Path) -> Path:
    (entry,) = entries(root)
    return entry


def test_key_follows_the_real_target(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    real = cpu.native_target(cpu.find_compiler())
    assert real and "-march=native" not in real  # what the flag resolves to, not its text
    assert run(13.0) == 13.0
    first = _only_entry(tmp_path)
    monkeypatch.setattr(cpu, "native_target", lambda compiler: real + "\n-mother-cpu")
    assert run(13.0) == 13.0  # another CPU: its own entry, never the first one
    assert len(entries(tmp_path)) == 2 and first in entries(tmp_path)


def test_entry_built_for_another_target_is_rebuilt(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    assert run(17.0) == 17.0
    digest = _only_entry(tmp_path).with_suffix(".sha256")
    actual = digest.read_text().split()[0]
    digest.write_text(f"{actual} {bc.cache.fingerprint('a cpu with other features')}\n")
    with pytest.warns(RuntimeWarning, match="built for another target"):
        assert run(17.0) == 17.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run(17.0) == 17.0  # the rebuilt entry verifies


def test_non_utf8_digest_is_a_corrupt_entry(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    assert run(19.0) == 19.0
    _only_entry(tmp_path).with_suffix(".sha256").write_bytes(b"\xff\xfe\x00\x9c digest")
    with pytest.warns(RuntimeWarning, match="corrupt compile-cache entry"):
        assert run(19.0) == 19.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run(19.0) == 19.0


@pytest.mark.parametrize("index", ['{"artifact": 5, "externals": [], "interface": "x"}',
                                   '{"artifact": "../x", "externals": {}, "interface": {}}',
                                   "[" * 100_000], ids=["types", "path", "nested"])
def test_malformed_launch_index_is_a_miss_and_rewritten(tmp_path: Path, index: str) -> None:
    script = tmp_path / "script.py"
    script.write_text(INDEX_SCRIPT.format(addend=1.0, offset=0.0))
    env = {**os.environ, "BURN_CUBE_CACHE_DIR": str(tmp_path / "cache")}

    def run_script() -> list[str]:
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              check=True, env=env).stdout.split()

    assert run_script() == ["1.0", "1", "0"]
    (path,) = (tmp_path / "cache").glob("*.index.json")
    path.write_text(index)
    assert run_script() == ["1.0", "1", "0"]  # a miss: lowered again, the index rewritten
    assert run_script() == ["1.0", "0", "1"]


def test_a_new_runtime_never_reuses_a_dead_ones_compiled_kernel(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In-memory compiled kernels belong to their runtime object: one made after another died
    (and so perhaps at its address) looks the kernel up again through its own caches."""
    import gc

    from cache_kernels import add_const

    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    for _ in range(3):
        assert run(2.0) == 2.0
        gc.collect()
    assert len(add_const._compiled) == 0  # nothing kept for runtimes that are gone
    rt = CpuRuntime()
    x = np.zeros(4, np.float32)
    add_const.launch(rt, 1, 128, x, 1.0)
    assert len(add_const._compiled) == 1 and rt in add_const._compiled


def test_native_target_is_kept_per_compiler_and_cpu(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    compiler = cpu.find_compiler()
    asked: list[list[str]] = []
    real_output = bc.cache._output

    def output(command: list[str]) -> str:
        asked.append(command)
        return real_output(command)

    monkeypatch.setattr(bc.cache, "_output", output)
    bc.cache.native_target.cache_clear()
    try:
        first = bc.cache.native_target(compiler)
        assert len(asked) == 2  # the version and the resolved -march=native
        bc.cache.native_target.cache_clear()
        assert bc.cache.native_target(compiler) == first and len(asked) == 2  # kept on disk
        monkeypatch.setattr(bc.cache, "_cpuinfo", lambda: "model name: another cpu")
        bc.cache.native_target.cache_clear()
        assert bc.cache.native_target(compiler) == first and len(asked) == 4  # asked again
    finally:
        bc.cache.native_target.cache_clear()


def _scale_ir(factor: float, builds: list[float]) -> Any:
    builds.append(factor)
    b = bc.KernelBuilder("scale_by")
    x = b.tensor("x", bc.f32, rank=1, write=False)
    out = b.tensor("out", bc.f32, rank=1, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        out[pos] = x[pos] * factor
    return b.build()


def test_built_kernel_builds_its_ir_only_on_an_index_miss(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    rt = CpuRuntime()
    builds: list[float] = []
    data = np.arange(6, dtype=np.float32)

    def launch(kernel: Any) -> np.ndarray:
        x, out = rt.upload(data), rt.allocate(data.shape, bc.f32)
        kernel.launch(rt, 1, 256, x, out)
        return np.asarray(rt.download(out))

    first = IRKernel.built("scale", "test:scale-by-3", lambda: _scale_ir(3.0, builds))
    assert builds == [] and first.name == "scale"
    np.testing.assert_array_equal(launch(first), data * 3)
    assert builds == [3.0] and first.name == "scale_by"
    again = IRKernel.built("scale", "test:scale-by-3", lambda: _scale_ir(3.0, builds))
    np.testing.assert_array_equal(launch(again), data * 3)
    assert builds == [3.0] and again.stats["index_hits"] == 1  # the index had it
    assert again.kernel.body and builds == [3.0, 3.0]  # its IR, built when asked for
    assert IRKernel(_scale_ir(3.0, [])).hash == again.hash


def test_built_kernel_build_errors_raise_at_resolve(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))

    def fail() -> Any:
        raise CompileError("no line form", "scale")

    kernel = IRKernel.built("scale", "test:unbuildable", fail)
    with pytest.raises(CompileError, match="no line form"):
        kernel.resolve(CpuRuntime())


def test_a_kernels_interface_is_whole_once_another_thread_can_read_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """While one thread takes a kernel's interface (`_interface`), another that finds it
    (`_signature` non-None: `bind` goes on to read `names` and the launch layout) finds all
    of it: threads launching a new kernel at once raised AttributeError there."""
    def shift_ir() -> Any:
        b = bc.KernelBuilder("shift_by")
        out = b.tensor("out", bc.f32, rank=1, write=True)
        amount = b.scalar("amount", bc.f32)
        with b.if_(b.ABSOLUTE_POS < out.len):
            out[b.ABSOLUTE_POS] = out[b.ABSOLUTE_POS] + amount
        return b.build()

    kernel = IRKernel.built("shift", "test:interface-order", shift_ir)
    seen: list[bool] = []
    module = importlib.import_module("burn_cube.kernel")  # (bc.kernel is the decorator)
    real = module.int_range

    def another_thread_reads(dtype: Any) -> Any:  # (called while the layout is made)
        if not seen:
            params = kernel._params
            seen.append(params is None or all(
                hasattr(kernel, name) for name in ("names", "_layout", "_dims", "_units")))
        return real(dtype)

    monkeypatch.setattr(module, "int_range", another_thread_reads)
    assert kernel._signature().name == "shift_by"
    assert seen == [True]
