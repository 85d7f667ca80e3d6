"""Compile cache bound: pruning the entries used least recently, when due, and misses for
entries pruned under a reader."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cache_kernels import add_const, run

from burn_cube import cache
from burn_cube.cache import DiskCache, max_bytes, prune
from burn_cube.runtime.cpu import CpuRuntime

BLOCK = 4096


def _entry(root: Path, key: str, age: float, suffixes: tuple[str, ...] = (".so", ".sha256"),
           size: int = 3 * BLOCK) -> list[Path]:
    """Files of a fake entry ``key`` (a 40-hex key), last used ``age`` seconds ago."""
    paths = []
    for suffix in suffixes:
        path = root / f"{key}{suffix}"
        path.write_bytes(b"x" * size)
        then = time.time() - age
        os.utime(path, (then, then))
        paths.append(path)
    return paths


def _used_bytes(root: Path) -> int:
    return sum(p.stat().st_blocks * 512 or p.stat().st_size for p in root.iterdir()
               if p.is_file() and cache._ENTRY.fullmatch(p.name))


def test_prune_removes_whole_entries_least_recently_used_first(tmp_path: Path) -> None:
    keys = [f"{i:040x}" for i in range(6)]
    groups = {key: _entry(tmp_path, key, age=1000.0 * (6 - i)) for i, key in enumerate(keys)}
    index = _entry(tmp_path, "f" * 40, age=10.0, suffixes=(".index.json",), size=100)
    others = [tmp_path / "autotune.json", tmp_path / "flags-0123.txt"]
    for path in others:
        path.write_text("{}")
        os.utime(path, (0, 0))
    (tmp_path / "openmp").mkdir()
    fresh_temp, stale_temp = tmp_path / ".a.so.1.tmp", tmp_path / ".b.sha256.2.tmp"
    fresh_temp.write_bytes(b"partial")
    stale_temp.write_bytes(b"partial")
    os.utime(stale_temp, (0, 0))
    before = _used_bytes(tmp_path)
    per_entry = before // 6 - 1  # (the index entry takes at most a block)
    limit = before - 1

    freed = prune(tmp_path, limit, keep=0.5)

    after = _used_bytes(tmp_path)
    assert after <= 0.5 * limit and freed >= before - after
    survivors = [key for key in keys if groups[key][0].exists()]
    # the oldest went first, each entry whole (its .so and its digest together)
    assert survivors == keys[len(keys) - len(survivors):] and 0 < len(survivors) < 6
    assert all(all(p.exists() for p in groups[k]) or not any(p.exists() for p in groups[k])
               for k in keys)
    assert after + per_entry > 0.5 * limit  # no more than needed
    assert index[0].exists()  # the newest of all
    assert all(path.exists() for path in others) and (tmp_path / "openmp").is_dir()
    assert fresh_temp.exists() and not stale_temp.exists()


def test_prune_under_the_bound_removes_no_entry(tmp_path: Path) -> None:
    paths = _entry(tmp_path, "a" * 40, age=1e6)
    assert prune(tmp_path, _used_bytes(tmp_path)) == 0
    assert all(p.exists() for p in paths)


def test_a_hit_marks_its_entry_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    assert run(4.0) == 4.0
    (so,) = tmp_path.glob("*.so")
    digest = so.with_suffix(".sha256")
    index = next(tmp_path.glob("*.index.json"))
    for path in (so, digest, index):
        os.utime(path, (1000, 1000))
    _entry(tmp_path, "b" * 40, age=10.0)  # used more recently than the kernel, so far
    assert run(4.0) == 4.0  # a new runtime: a hit in the launch index, then on disk
    assert digest.stat().st_mtime > 1000 and index.stat().st_mtime > 1000
    assert so.stat().st_mtime == 1000  # (the artifact itself is never touched)
    # the other entry is now the one used least recently: pruning to one entry keeps ours
    prune(tmp_path, _used_bytes(tmp_path) - 1, keep=0.6)
    assert so.exists() and digest.exists() and not (tmp_path / ("b" * 40 + ".so")).exists()


def test_a_write_prunes_when_due(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    old = [_entry(tmp_path, f"{i:040x}", age=1e5 + i) for i in range(8)]
    monkeypatch.setenv("BURN_CUBE_CACHE_MAX_BYTES", str(_used_bytes(tmp_path)))
    runtime = CpuRuntime()
    x = np.zeros(100, np.float32)
    add_const.launch(runtime, 1, 128, x, 6.0)  # compiles: a write over the bound, no scan yet
    assert runtime.disk.pruning is not None
    runtime.disk.pruning.join(60)
    # the oldest went (ages grow along `old`), the newest stay
    assert not any(p.exists() for p in old[-1]) and all(p.exists() for p in old[0])
    assert (tmp_path / ".pruned").exists()
    (so,) = set(tmp_path.glob("*.so")) - {p for paths in old for p in paths}
    assert run(6.0) == 6.0 and so.exists()  # the new entry stays and loads
    # another write within PRUNE_EVERY (this process, or any other) scans nothing
    more = _entry(tmp_path, "c" * 40, age=1e6)
    assert run(7.0) == 7.0
    fresh = DiskCache(tmp_path)  # (as another process: its own clock, the marker's)
    fresh.put_index("d" * 40, {"artifact": "e" * 40, "externals": {}, "interface": {}})
    assert all(p.exists() for p in more)


def test_the_bound_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.delenv("BURN_CUBE_CACHE_MAX_BYTES", raising=False)
    assert max_bytes() == cache.MAX_BYTES == 1 << 30
    monkeypatch.setenv("BURN_CUBE_CACHE_MAX_BYTES", "1234")
    assert max_bytes() == 1234
    for bad in ("lots", "-5", "1.5"):
        monkeypatch.setenv("BURN_CUBE_CACHE_MAX_BYTES", bad)
        with pytest.warns(RuntimeWarning, match="BURN_CUBE_CACHE_MAX_BYTES"):
            assert max_bytes() == cache.MAX_BYTES
    # 0: unbounded, nothing scanned
    monkeypatch.setenv("BURN_CUBE_CACHE_MAX_BYTES", "0")
    paths = _entry(tmp_path, "a" * 40, age=1e6)
    DiskCache(tmp_path).put_index("b" * 40, {"artifact": "a" * 40, "externals": {},
                                             "interface": {}})
    assert all(p.exists() for p in paths) and not (tmp_path / ".pruned").exists()


def test_an_entry_pruned_as_it_loads_is_a_miss(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    """Another process removes the library between the digest check and the load: this one
    compiles it again instead of failing. (The entry comes from another process: one this
    process loaded stays loaded, its file gone or not.)"""
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(tmp_path))
    made = subprocess.run([sys.executable, "-c", "from cache_kernels import run; print(run(8.5))"],
                          cwd=Path(__file__).parent, capture_output=True, text=True, check=True)
    assert made.stdout.split() == ["8.5"] and list(tmp_path.glob("*.so"))
    runtime = CpuRuntime()
    found = runtime.disk.get

    def get_then_pruned(key: str, suffix: str, target: str = "") -> Path | None:
        path = found(key, suffix, target)
        if path is not None:
            path.unlink()
        return path

    monkeypatch.setattr(runtime.disk, "get", get_then_pruned)
    x = np.zeros(100, np.float32)
    add_const.launch(runtime, 1, 128, x, 8.5)
    assert float(x[0]) == 8.5 and list(tmp_path.glob("*.so"))  # built again
