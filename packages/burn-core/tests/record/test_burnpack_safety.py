"""Burnpack loading is safe against files changed after loading and detects damaged data."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest

from burn import record
from burn.record.native import ALIGN, MAGIC, read_native

from .helpers import DEVICES, Block, assert_same, values

CPU = DEVICES[0]


def test_loaded_values_survive_truncating_the_file(tmp_path):
    """Run in a child: with a memory-mapped load, the truncation kills it with SIGBUS."""
    path = tmp_path / "m.bpk"
    record.save(Block(CPU, seed=1), path)
    script = textwrap.dedent(f"""
        import os, numpy as np, burn
        from burn import record
        from tests_helpers import Block
        path = {str(path)!r}
        model = Block(burn.Device("numpy"), seed=2)
        record.load(model, path)
        source, _ = record.read_native(path)
        os.truncate(path, 0)
        np.testing.assert_array_equal(model.w32.to_numpy(),
                                      Block(burn.Device("numpy"), seed=1).w32.to_numpy())
        try:
            source["w32"].read()
        except record.CorruptRecordError as e:
            print("ok", e)
    """)
    helpers = tmp_path / "tests_helpers.py"
    helpers.write_text((__import__("pathlib").Path(__file__).parent / "helpers.py").read_text())
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("ok") and str(path) in proc.stdout


@pytest.mark.parametrize("mmap", [False, True])
def test_rewriting_the_file_in_place_keeps_loaded_values(tmp_path, mmap):
    path = tmp_path / "m.bpk"
    record.save(Block(CPU, seed=1), path)
    model = Block(CPU, seed=2)
    record.load(model, path, mmap=mmap)
    with open(path, "r+b") as f:  # not atomic: the same inode, new bytes
        f.write(b"\xff" * path.stat().st_size)
    assert_same(Block(CPU, seed=1), model)


def _data_ranges(path) -> dict[str, range]:
    """Absolute byte range of every stored tensor."""
    raw = path.read_bytes()
    length = struct.unpack_from("<Q", raw, 16)[0]
    start = 24 + length
    tensors = json.loads(raw[24:start])["tensors"]
    return {k: range(start + t["offset"], start + t["offset"] + t["nbytes"])
            for k, t in tensors.items()}


def test_every_single_byte_mutation_is_detected_or_harmless(tmp_path):
    path = tmp_path / "m.bpk"
    record.save(Block(CPU, seed=1), path)
    good = path.read_bytes()
    expected = values(Block(CPU, seed=1))
    ranges = _data_ranges(path)
    owner = {i: k for k, r in ranges.items() for i in r}
    rng = np.random.default_rng(0)
    positions = [*rng.integers(0, len(good), 300).tolist(), *owner]
    detected = 0
    for position in positions:
        bad = bytearray(good)
        bad[position] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(bad))
        model = Block(CPU, seed=2)
        try:
            record.load(model, path)
        except record.RecordChecksumError as e:
            assert owner.get(position) == e.key and str(path) in str(e)
            detected += 1
            continue
        except record.CorruptRecordError:
            assert position not in owner
            continue
        assert position not in owner, f"mutated byte {position} of {owner.get(position)} loaded"
        got = values(model)
        for key, (dtype, arr) in expected.items():
            assert got[key][0] == dtype and got[key][1].shape == arr.shape
            np.testing.assert_array_equal(got[key][1], arr, err_msg=key)
    assert detected >= len(owner)


def test_verify_false_skips_the_checksum(tmp_path):
    path = tmp_path / "m.bpk"
    record.save(Block(CPU, seed=1), path)
    bad = bytearray(path.read_bytes())
    bad[_data_ranges(path)["w32"].start] ^= 0x40
    path.write_bytes(bytes(bad))
    with pytest.raises(record.RecordChecksumError, match="w32"):
        record.load(Block(CPU), path)
    model = Block(CPU)
    record.load(model, path, verify=False)
    original = Block(CPU, seed=1).w32.to_numpy()
    assert model.w32.shape == original.shape and model.w32.dtype == Block(CPU).w32.dtype
    assert (model.w32.to_numpy() != original).sum() == 1


def _write_version_1(path, arrays: dict[str, np.ndarray]) -> None:
    """The version 1 layout: as version 2 without the per-tensor crc32."""
    index, offset, blobs = {}, 0, b""
    for key, arr in arrays.items():
        index[key] = {"dtype": arr.dtype.name, "shape": list(arr.shape), "offset": offset,
                      "nbytes": arr.nbytes}
        blobs += arr.tobytes() + b"\0" * (-arr.nbytes % ALIGN)
        offset = len(blobs)
    header = json.dumps({"tensors": index, "metadata": {"v": "1"}}).encode()
    header += b" " * (-(24 + len(header)) % ALIGN)
    path.write_bytes(struct.pack("<8sIIQ", MAGIC, 1, zlib.crc32(header), len(header))
                     + header + blobs)


def test_version_1_files_still_load(tmp_path):
    path = tmp_path / "old.bpk"
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.arange(3)}
    _write_version_1(path, arrays)
    source, metadata = read_native(path)
    assert metadata == {"v": "1"}
    for key, arr in arrays.items():
        got = source[key].read()
        assert got.shape == arr.shape and got.dtype == arr.dtype
        np.testing.assert_array_equal(got, arr)


def test_deeply_nested_header_is_corrupt_not_recursion(tmp_path):
    path = tmp_path / "m.bpk"
    header = b"[" * 200_000
    path.write_bytes(struct.pack("<8sIIQ", MAGIC, 2, zlib.crc32(header), len(header)) + header)
    with pytest.raises(record.CorruptRecordError, match="malformed header"):
        read_native(path)
