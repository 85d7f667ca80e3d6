"""Key remapping, partial loading reports and strict errors (shared by every format)."""

from __future__ import annotations

import numpy as np
import pytest

import burn
from burn import record
from burn.nn import Module, Param

from .helpers import DEVICES, Block, values

CPU = DEVICES[0]


class Renamed(Module):
    """Block's tensors under other names, plus one extra and one missing."""

    def __init__(self) -> None:
        src = Block(CPU, seed=1)
        self.dense = src.w32
        self.half = src.w16
        self.extra = Param(burn.zeros(7))
        self.blocks = src.layers


def _unchanged(target: Module, before: dict[str, tuple[str, np.ndarray]]) -> None:
    """Every tensor of `target` has the dtype and values it had in `before` (`values`)."""
    for key, (dtype, arr) in values(target).items():
        assert dtype == before[key][0]
        np.testing.assert_array_equal(arr, before[key][1])


@pytest.fixture(params=[".bpk", ".safetensors"])
def saved(request, tmp_path):
    path = tmp_path / f"renamed{request.param}"
    record.save(Renamed(), path)
    return path


def test_strict_load_lists_missing_and_unexpected_and_loads_nothing(saved):
    target = Block(CPU, seed=2)
    before = values(target)
    with pytest.raises(record.RecordKeyError) as info:
        record.load(target, saved)
    err = info.value
    assert str(saved) in str(err)
    assert set(err.report.missing) == {"w32", "w16", "wbf", "steps", "scalar",
                                       "layers.0.weight", "layers.1.weight"}
    assert set(err.report.unexpected) == {"dense", "half", "extra", "blocks.0.weight",
                                          "blocks.1.weight"}
    assert "layers.0.weight" in str(err) and "blocks.0.weight" in str(err)
    _unchanged(target, before)


def test_remap_and_partial_load_report(saved):
    target = Block(CPU, seed=2)
    remap = [(r"^dense$", "w32"), (r"^half$", "w16"), (r"^blocks\.", "layers."),
             (r"^extra$", None)]
    report = record.load(target, saved, remap=remap, strict=False)
    assert report.loaded == ["w32", "w16", "layers.0.weight", "layers.1.weight"]
    assert report.missing == ["wbf", "steps", "scalar"] and report.unexpected == []
    assert not report.ok
    np.testing.assert_array_equal(target.w32.to_numpy(), Block(CPU, seed=1).w32.to_numpy())


def test_shape_mismatch(saved):
    target = Block(CPU, seed=2)
    target.w32.set_(burn.zeros(4, 3))
    remap = [("^dense$", "w32")]
    only_w32 = _only(target, "w32")
    with pytest.raises(record.RecordShapeError, match=r"w32: module \(4, 3\) vs stored \(3, 4\)"):
        record.load(only_w32, saved, remap=[*remap, ("^(?!w32$)", None)])
    report = record.load(target, saved, remap=remap, strict=False)
    assert report.mismatched == {"w32": ((4, 3), (3, 4))}
    assert "w32" not in report.loaded and (target.w32.to_numpy() == 0).all()


def _only(module: Block, key: str) -> Module:
    class One(Module):
        pass

    one = One()
    setattr(one, key, getattr(module, key))
    return one


def test_remap_collision(saved):
    with pytest.raises(record.RecordKeyError, match="two stored keys"):
        record.load(Block(CPU), saved, remap=[(r"^(dense|half)$", "w32")])


@pytest.mark.parametrize("device", ["numpy", "cpu", "cpu+fusion+autodiff"])
def test_a_load_failing_on_a_late_tensor_loads_nothing(tmp_path, device):
    """A damaged last tensor (checksum) of a .bpk raises before any value is set: the module
    keeps every old value, as a strict key / shape mismatch does."""
    path = tmp_path / "block.bpk"
    record.save(Block(CPU, seed=1), path)
    raw = bytearray(path.read_bytes())
    raw[-8] ^= 0xFF  # inside the last stored tensor's bytes
    path.write_bytes(bytes(raw))
    target = Block(burn.Device(device), seed=2)
    before = values(target)
    with pytest.raises(record.CorruptRecordError):
        record.load(target, path)
    _unchanged(target, before)


@pytest.mark.parametrize("stored", ["float8_e4m3fn", "complex64"])
def test_a_stored_dtype_burn_lacks_is_a_typed_error_and_loads_nothing(tmp_path, stored):
    """A safetensors file whose last tensor is float8 (numpy has no such dtype) or complex
    raises RecordDTypeError (a DTypeError too) naming the key, the module unchanged."""
    import torch
    from safetensors.torch import save_file

    module = burn.nn.Linear(2, 3, device=CPU)
    shapes = {key: tuple(p.shape) for key, p in module.named_tensors()}
    path = tmp_path / "odd.safetensors"
    save_file({"weight": torch.ones(shapes["weight"]),
               "bias": torch.ones(shapes["bias"]).to(getattr(torch, stored))}, str(path))
    before = values(module)
    with pytest.raises(record.RecordDTypeError, match=r"^load_safetensors: .*key=bias") as info:
        record.load(module, path)
    assert isinstance(info.value, burn.errors.DTypeError)
    _unchanged(module, before)
