"""Atomic writes and truncated / corrupt files."""

from __future__ import annotations

import zipfile

import pytest

from burn import record
from burn.record import native, safetensors_format

from .helpers import DEVICES, Block, assert_same

CPU = DEVICES[0]


class _DiskFull:
    """A writable file that fails after `budget` bytes (a crash mid-write)."""

    def __init__(self, path, mode, budget=100):
        self._f = open(path, mode)  # noqa: SIM115
        self._budget = budget

    def write(self, data) -> int:
        data = memoryview(data).cast("B")
        if len(data) > self._budget:
            self._f.write(data[: self._budget])
            self._f.flush()
            raise OSError(28, "No space left on device")
        self._budget -= len(data)
        return self._f.write(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


def _crashing_save_file(arrays, path, metadata=None):
    with _DiskFull(path, "wb") as f:
        f.write(b"\0" * 1000)


@pytest.mark.parametrize("ext", [".bpk", ".safetensors"])
def test_crash_mid_write_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch, ext):
    path = tmp_path / f"m{ext}"
    record.save(Block(CPU, seed=1), path)
    old = path.read_bytes()
    monkeypatch.setattr(native, "open", _DiskFull, raising=False)
    monkeypatch.setattr(safetensors_format, "save_file", _crashing_save_file)
    with pytest.raises(OSError, match="No space"):
        record.save(Block(CPU, seed=2), path)
    with pytest.raises(OSError, match="No space"):
        record.save(Block(CPU, seed=2), tmp_path / f"new{ext}")
    assert path.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    monkeypatch.undo()
    loaded = Block(CPU, seed=3)
    record.load(loaded, path)
    assert_same(Block(CPU, seed=1), loaded)


@pytest.mark.parametrize("ext", [".bpk", ".safetensors", ".pt", ".pth"])
@pytest.mark.parametrize("cut", [0, 5, 30, 200, -1])
def test_truncated_files_raise_corrupt_naming_the_file(tmp_path, ext, cut):
    path = tmp_path / f"m{ext}"
    if ext in (".pt", ".pth"):  # .pth: the legacy (non-zip) torch format
        torch = pytest.importorskip("torch")
        torch.save({"w": torch.ones(100)}, path, _use_new_zipfile_serialization=ext == ".pt")
    else:
        record.save(Block(CPU), path)
    data = path.read_bytes()
    path.write_bytes(data[: cut if cut >= 0 else len(data) - 7])
    with pytest.raises(record.CorruptRecordError) as info:
        record.load(Block(CPU), path, strict=False)
    assert str(path) in str(info.value)


def test_native_corruption_detected(tmp_path):
    path = tmp_path / "m.bpk"
    record.save(Block(CPU), path)
    good = path.read_bytes()
    for offset, message in [(0, "not a burnpack"), (9, "version"), (30, "checksum")]:
        bad = bytearray(good)
        bad[offset] ^= 0xFF
        path.write_bytes(bytes(bad))
        with pytest.raises(record.CorruptRecordError, match=message):
            record.load(Block(CPU), path)


def test_not_a_torch_checkpoint(tmp_path):
    path = tmp_path / "m.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(record.CorruptRecordError, match="data.pkl"):
        record.load(Block(CPU), path)


def test_missing_file_is_not_corrupt(tmp_path):
    for ext in [".bpk", ".safetensors", ".pt"]:
        with pytest.raises(FileNotFoundError):
            record.load(Block(CPU), tmp_path / f"absent{ext}")
