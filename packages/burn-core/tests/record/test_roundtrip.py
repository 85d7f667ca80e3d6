"""Round trips through burnpack and safetensors, memory mapping, dtype policy, metadata."""

from __future__ import annotations

import numpy as np
import pytest

import burn
from burn import record

from .helpers import DEVICES, Block, assert_same, mapped

EXTENSIONS = [".bpk", ".safetensors"]


@pytest.mark.parametrize("device", DEVICES, ids=str)
@pytest.mark.parametrize("ext", EXTENSIONS)
def test_round_trip_every_dtype(tmp_path, device, ext):
    source, target = Block(device, seed=1), Block(device, seed=2)
    ids = {k: p.id for k, p in target.named_tensors()}
    record.save(source, tmp_path / f"m{ext}", metadata={"epoch": "3"})
    report = record.load(target, tmp_path / f"m{ext}")
    assert report.ok and report.metadata == {"epoch": "3"}
    assert report.loaded == [k for k, _ in target.named_tensors()]
    assert_same(source, target)
    assert {k: p.id for k, p in target.named_tensors()} == ids
    assert target.devices() == [device]
    if device.is_autodiff:
        assert target.w32.is_require_grad() and not target.steps.is_require_grad()


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_native_load_copies_and_is_usable(tmp_path, device, mmap):
    path = tmp_path / "m.bpk"
    record.save(Block(device, seed=1), path)
    model = Block(device, seed=2)
    record.load(model, path, mmap=mmap)
    assert_same(Block(device, seed=1), model)
    for _, p in model.named_tensors():  # copied through the backend, even from a map
        assert not mapped(p.inner()._prim)
    before = model.w32.to_numpy()
    x = burn.ones(2, 3, device=device)
    out = (x @ model.w32 + 1.0).sum()
    if device.is_autodiff:
        grads = (out * 2.0).backward()
        np.testing.assert_allclose(model.w32.grad(grads).to_numpy(), np.full((3, 4), 4.0))
    edited = model.w32.value()
    edited[0:1, :] = 0.0
    assert (edited.to_numpy()[0] == 0).all()
    np.testing.assert_array_equal(model.w32.to_numpy(), before)


def test_overwriting_a_loaded_file_keeps_loaded_values(tmp_path):
    path = tmp_path / "m.bpk"
    first, second = Block(DEVICES[0], seed=1), Block(DEVICES[0], seed=2)
    record.save(first, path)
    loaded = Block(DEVICES[0], seed=3)
    record.load(loaded, path)
    record.save(second, path)  # atomic replace: the mapped old file stays intact
    assert_same(first, loaded)
    record.load(loaded, path)
    assert_same(second, loaded)


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_dtype_policy(tmp_path, ext):
    path = tmp_path / f"m{ext}"
    record.save(Block(DEVICES[0], seed=1), path)
    cast = Block(DEVICES[0])
    cast.w32.set_(cast.w32.cast(burn.float64))
    cast.steps.set_(cast.steps.cast(burn.int32))
    record.load(cast, path, dtype="cast")
    assert cast.w32.dtype == burn.float64 and cast.steps.dtype == burn.int32
    kept = Block(DEVICES[0])
    kept.w32.set_(kept.w32.cast(burn.float64))
    record.load(kept, path, dtype="keep")
    assert kept.w32.dtype == burn.float32
    np.testing.assert_array_equal(cast.w32.to_numpy(), kept.w32.to_numpy().astype(np.float64))
    with pytest.raises(record.RecordError, match="dtype policy"):
        record.load(kept, path, dtype="round")


def test_format_selection(tmp_path):
    model = Block(DEVICES[0])
    record.save(model, tmp_path / "m.ckpt", format="burnpack")
    assert record.load(Block(DEVICES[0], 5), tmp_path / "m.ckpt", format="burnpack").ok
    with pytest.raises(record.UnknownFormatError, match="extension"):
        record.save(model, tmp_path / "m.bin")
    with pytest.raises(record.UnknownFormatError, match="import-only"):
        record.save(model, tmp_path / "m.pt")
    with pytest.raises(record.UnknownFormatError, match="unknown format"):
        record.load(model, tmp_path / "m.ckpt", format="onnx")
    with pytest.raises(record.RecordError, match="str to str"):
        record.save(model, tmp_path / "m.bpk", metadata={"epoch": 3})


def test_empty_and_scalar_tensors(tmp_path):
    from burn.nn import Buffer, Module

    class Odd(Module):
        def __init__(self, fill: float) -> None:
            self.empty = Buffer(burn.zeros(0, 3))
            self.flag = Buffer(burn.tensor([True, False]))
            self.scalar = Buffer(burn.tensor(fill))

    for ext in EXTENSIONS:
        record.save(Odd(1.0), tmp_path / f"o{ext}")
        target = Odd(0.0)
        record.load(target, tmp_path / f"o{ext}")
        assert_same(Odd(1.0), target)
