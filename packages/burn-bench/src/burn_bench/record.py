"""Module save / load: a 105M-parameter model (25 x 2048 x 2048 float32) in burnpack and
safetensors, against `safetensors.numpy.save_file` / `load_file`, candidates interleaved and
compared like with like (fsync'd saves with fsync'd saves, full reads with full reads); and the
resident memory a burnpack load adds (it memory-maps the file: no copy)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

import burn
from burn import record
from burn.nn import Module, Param
from burn_bench.timing import Candidate, measure_interleaved, report

COUNT, SIDE = 25, 2048
MIB = 1 << 20


class _Model(Module):
    def __init__(self, make: Callable[[int], burn.Tensor]) -> None:
        self.layers = [Param(make(i)) for i in range(COUNT)]


def _random(i: int) -> burn.Tensor:
    return burn.tensor(np.random.default_rng(i).standard_normal((SIDE, SIDE), np.float32))


def _untouched(_: int) -> burn.Tensor:
    """Uncommitted memory (empty pages are not resident until written)."""
    return burn.empty(SIDE, SIDE)


def _status(field: str) -> int:
    """A /proc/self/status field in bytes (0 where /proc is unavailable)."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return 0
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(found.group(1)) * 1024 if found else 0


def _reset_peak() -> bool:
    """Reset the peak RSS (VmHWM) counter; False where the kernel does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _memory(name: str, load: Callable[[], object]) -> str:
    """RSS growth (and peak growth) of one load call; `load` returns what holds the values."""
    before = _status("VmRSS")
    peak_known = _reset_peak()
    kept = load()
    grown, peak = _status("VmRSS") - before, _status("VmHWM") - before
    del kept
    peak_text = f", peak +{peak / MIB:.0f} MiB" if peak_known else ""
    return f"{name:<36} RSS {grown / MIB:+.0f} MiB{peak_text}"


def _loaded(path: Path) -> Module:
    model = _Model(_untouched)
    record.load(model, path)
    return model


def _synced(save: Callable[..., None], arrays: dict[str, np.ndarray], path: Path) -> None:
    save(arrays, path)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def _read_all(values: list[np.ndarray]) -> float:
    """Touch every value (fault every mapped page in)."""
    return sum(float(v.sum()) for v in values)


def run() -> str:
    """Measure and return the report tables."""
    source = _Model(_random)
    arrays = {k: np.asarray(p.to_numpy()) for k, p in source.named_tensors()}
    size = sum(a.nbytes for a in arrays.values())
    target = _Model(_untouched)
    with tempfile.TemporaryDirectory() as tmp:
        native, st, raw = Path(tmp, "m.bpk"), Path(tmp, "m.safetensors"), Path(tmp, "raw.st")
        st_save, st_load = "safetensors save_file", "safetensors load_file"
        saves = measure_interleaved([
            Candidate(st_save, lambda: save_file(arrays, raw)),
            Candidate("safetensors save_file + fsync", lambda: _synced(save_file, arrays, raw),
                      vs=st_save),
            Candidate("burn save .bpk (atomic, fsync)", lambda: record.save(source, native),
                      vs="safetensors save_file + fsync"),
            Candidate("burn save .safetensors (atomic, fsync)",
                      lambda: record.save(source, st), vs="safetensors save_file + fsync"),
        ], rounds=5)
        # like with like: full reads against full reads; the lazy mmap load is listed alone
        loads = measure_interleaved([
            Candidate(st_load, lambda: load_file(raw)),
            Candidate("burn load .bpk (mmap, lazy)", lambda: record.load(target, native)),
            Candidate("burn load .safetensors", lambda: record.load(target, st), vs=st_load),
            Candidate(st_read := "safetensors load_file + read all",
                      lambda: _read_all(list(load_file(raw).values()))),
            Candidate("burn load .bpk + read all (copies)", lambda: _read_all(
                [p.to_numpy() for _, p in _loaded(native).named_tensors()]), vs=st_read),
        ], rounds=3)
        memory = [
            _memory("burn load .bpk (mmap)", lambda: _loaded(native)),
            _memory("burn load .safetensors", lambda: _loaded(st)),
            _memory(st_load, lambda: load_file(raw)),
        ]
    title = f"{COUNT} x {SIDE}x{SIDE} float32 ({size / MIB:.0f} MiB)"
    return "\n\n".join([
        report(f"save, {title}", saves),
        report(f"load, {title}", loads),
        "## resident memory added by one load (model allocated, untouched)\n"
        + "\n".join(memory),
    ])
