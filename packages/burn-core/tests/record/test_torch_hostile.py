"""Hostile `.pt` files: every allocation is bounded by what the file holds, every failure is a
typed error (never MemoryError, OverflowError or RecursionError), and no file changes how the
next one loads."""

from __future__ import annotations

import struct
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from burn import record
from burn.record.torch_import import MAX_DEPTH

torch = pytest.importorskip("torch")

PROTO = b"\x80\x02"
LIMIT = 16 << 20  # bytes any rejected file below may allocate (its real contents are tiny)


def _unicode(text: str) -> bytes:
    """BINUNICODE."""
    return b"X" + struct.pack("<I", len(text)) + text.encode()


def _zip(path: Path, pickle_bytes: bytes, storages: dict[str, bytes] | None = None,
         compress: int = zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", pickle_bytes)
        zf.writestr("archive/byteorder", "little")
        for key, data in (storages or {}).items():
            zf.writestr(f"archive/data/{key}", data, compress_type=compress)


def _rejected(path: Path, match: str) -> int:
    """Load `path` expecting a CorruptRecordError naming it; returns the peak allocation."""
    tracemalloc.start()
    try:
        with pytest.raises(record.CorruptRecordError, match=match) as info:
            record.read_pytorch(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(path) in str(info.value)
    return peak


def test_memo_index_cannot_grow_the_memo(tmp_path):
    path = tmp_path / "memo.pt"
    evil = PROTO + b"}" + b"r" + struct.pack("<I", 2**26) + b"."  # EMPTY_DICT LONG_BINPUT
    _zip(path, evil)
    assert _rejected(path, "memo index") < LIMIT
    legacy = tmp_path / "memo.pth"
    legacy.write_bytes(evil)
    assert _rejected(legacy, "memo index") < LIMIT


def test_declared_bytes_length_beyond_the_file(tmp_path):
    path = tmp_path / "bytes.pth"
    path.write_bytes(PROTO + b"\x8e" + struct.pack("<Q", 2**40) + b"abc.")  # BINBYTES8
    assert _rejected(path, "bytes") < LIMIT


def test_zero_stride_tensor_is_not_expanded(tmp_path):
    path = tmp_path / "expand.pt"
    torch.save({"w": torch.zeros(1).expand(23170, 23170)}, path)
    assert _rejected(path, "more elements than its storage") < LIMIT


def _rezip_deflated(path: Path, replace: Callable[[str, bytes], bytes]) -> None:
    with zipfile.ZipFile(path) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, replace(name, data))


def test_zip_entry_is_never_inflated_past_its_storage(tmp_path):
    path = tmp_path / "bomb.pt"
    torch.save({"w": torch.ones(4)}, path)
    bomb = bytes(32 << 20)  # the entry inflates to 32 MiB; the pickle declares 16 bytes
    _rezip_deflated(path, lambda name, data: bomb if "/data/" in name else data)
    assert path.stat().st_size < (1 << 20)
    assert _rejected(path, "expected 16") < LIMIT


def test_zip_bomb_declared_by_the_pickle_is_refused(tmp_path):
    path = tmp_path / "bomb.pt"
    torch.save({"w": torch.zeros(8 << 20)}, path)  # 32 MiB of zeros, deflated below
    _rezip_deflated(path, lambda name, data: data)
    assert path.stat().st_size < (1 << 20)
    assert _rejected(path, "inflate") < LIMIT


def test_deflated_checkpoint_of_real_weights_loads(tmp_path):
    path = tmp_path / "deflated.pt"
    weights = torch.randn(64, 32)
    torch.save({"w": weights}, path)
    _rezip_deflated(path, lambda name, data: data)
    arrays = record.read_pytorch(path)
    assert arrays["w"].shape == (64, 32) and arrays["w"].dtype == np.float32
    np.testing.assert_array_equal(arrays["w"], weights.numpy())


def _patch_central_entry(path: Path, entry: str, offset: int, value: int) -> None:
    """Overwrite the 2-byte field at `offset` of `entry`'s central directory record (8: its
    flags, 10: its compression method), as a damaged or hostile file would hold it."""
    raw = bytearray(path.read_bytes())
    at = raw.find(b"PK\x01\x02")
    while at >= 0:
        name_length = struct.unpack_from("<H", raw, at + 28)[0]
        if raw[at + 46:at + 46 + name_length].decode() == entry:
            struct.pack_into("<H", raw, at + offset, value)
            path.write_bytes(bytes(raw))
            return
        at = raw.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"no central record for {entry}")


@pytest.mark.parametrize(("field", "value"), [(8, 1), (10, zipfile.ZIP_DEFLATED),
                                              (10, zipfile.ZIP_BZIP2), (10, zipfile.ZIP_LZMA)],
                         ids=["encrypted", "deflated", "bzip2", "lzma"])
def test_damaged_zip_entries_are_typed_errors(tmp_path, field, value):
    """An entry flagged encrypted (zipfile raised RuntimeError) or whose stored bytes are read
    as a compressed stream (zlib.error, OSError, LZMAError) is a CorruptRecordError naming the
    file; a missing file stays FileNotFoundError."""
    path = tmp_path / "damaged.pt"
    torch.save({"w": torch.arange(64.0)}, path)
    with zipfile.ZipFile(path) as zf:
        storage = next(n for n in zf.namelist() if "/data/" in n)
    _patch_central_entry(path, storage, field, value)
    _rejected(path, "unreadable torch checkpoint")
    with pytest.raises(FileNotFoundError):
        record.read_pytorch(tmp_path / "missing.pt")


def test_self_containing_dict_is_a_typed_error(tmp_path):
    path = tmp_path / "cycle.pt"
    # d = {}; d["a"] = d
    _zip(path, PROTO + b"}q\x00" + _unicode("a") + b"h\x00s.")
    _rejected(path, f"deeper than {MAX_DEPTH}")


def test_deeply_nested_persistent_id_is_a_typed_error(tmp_path):
    path = tmp_path / "deep.pt"
    _zip(path, PROTO + b")" + b"\x85" * 200_000 + b"Q.")  # ((((),),),...) as a storage id
    _rejected(path, "persistent id")


def test_huge_sizes_are_a_typed_error(tmp_path):
    path = tmp_path / "huge.pt"
    torch.save({"w": torch.ones(4)}, path)
    with zipfile.ZipFile(path) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    pkl = next(n for n in entries if n.endswith("data.pkl"))
    size = b"\x8a\x09" + (2**70).to_bytes(9, "little")  # LONG1: size (2**70,)
    entries[pkl] = entries[pkl].replace(b"K\x04\x85", size + b"\x85")
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    _rejected(path, "exceeds its storage")


@pytest.mark.parametrize("target", ["torch\nFloatStorage", "torch._utils\n_rebuild_tensor_v2",
                                    "collections\nOrderedDict", "torch\nSize"])
def test_build_on_a_stand_in_is_refused_and_changes_nothing(tmp_path, target):
    evil = tmp_path / "evil.pt"
    state = b"}" + _unicode("dtype") + _unicode("garbage") + b"s"
    slots = b"N}" + _unicode("__defaults__") + b")s\x86"  # (None, {...}) slot state
    for body in (state, slots):
        _zip(evil, PROTO + b"c" + target.encode() + b"\n" + body + b"b.")
        with pytest.raises(record.UnsafePickleError, match="BUILD"):
            record.read_pytorch(evil)
    good = tmp_path / "good.pt"
    expected = {"w": torch.randn(3, 2), "b": torch.randn(2)}
    torch.save(expected, good)
    arrays = record.read_pytorch(good)
    for key, value in expected.items():
        assert arrays[key].shape == tuple(value.shape) and arrays[key].dtype == np.float32
        np.testing.assert_array_equal(arrays[key], value.numpy())
