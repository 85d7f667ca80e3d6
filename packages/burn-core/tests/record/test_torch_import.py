"""PyTorch checkpoint import: values equal torch's, adapters, and refusal of code in pickles."""

from __future__ import annotations

import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import burn
from burn import record
from burn.nn import Buffer, Module, Param

from .helpers import DEVICES

torch = pytest.importorskip("torch")
CPU = DEVICES[0]


class Linear(Module):
    """burn layout: weight [in, out]."""

    def __init__(self, d_in: int, d_out: int) -> None:
        self.weight = Param(burn.zeros(d_in, d_out))
        self.bias = Param(burn.zeros(d_out))


class TorchLayout(Module):
    """A linear layer that keeps torch's [out, in] weights."""

    torch_transpose_weight = False

    def __init__(self, d_in: int, d_out: int) -> None:
        self.weight = Param(burn.zeros(d_out, d_in))


class BatchNorm(Module):
    def __init__(self, n: int) -> None:
        self.gamma = Param(burn.zeros(n))
        self.beta = Param(burn.zeros(n))
        self.running_mean = Buffer(burn.zeros(n))
        self.running_var = Buffer(burn.zeros(n))


class Net(Module):
    def __init__(self) -> None:
        self.layers = [Linear(3, 4), BatchNorm(4), TorchLayout(4, 2)]
        self.table = Buffer(burn.zeros(6, 4))
        self.window = Buffer(burn.zeros(2, 3))


def _torch_checkpoint(path) -> dict:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                              torch.nn.Linear(4, 2, bias=False))
    net(torch.randn(8, 3))  # update the running statistics
    state = net.state_dict()
    base = torch.arange(24.0).reshape(4, 6)
    state["table"] = base.t()  # non-contiguous view
    state["window"] = base[1:3, 2:5]  # offset view sharing base's storage
    state["base"] = base
    torch.save({"model": state, "epoch": 3}, path)
    return state


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_torch_state_dict_loads_with_torch_values(tmp_path, device):
    path = tmp_path / "net.pt"
    state = _torch_checkpoint(path)
    net = Net().to(device)
    report = record.load(net, path, remap=[(r"^model\.", ""), (r"^(\d)\.", r"layers.\1."),
                                           (r"^base$", None)])
    assert report.ok
    t = {k: v.numpy() for k, v in state.items()}
    got = {k: p.to_numpy() for k, p in net.named_tensors()}
    np.testing.assert_array_equal(got["layers.0.weight"], t["0.weight"].T)
    np.testing.assert_array_equal(got["layers.0.bias"], t["0.bias"])
    np.testing.assert_array_equal(got["layers.1.gamma"], t["1.weight"])
    np.testing.assert_array_equal(got["layers.1.beta"], t["1.bias"])
    np.testing.assert_array_equal(got["layers.1.running_mean"], t["1.running_mean"])
    np.testing.assert_array_equal(got["layers.1.running_var"], t["1.running_var"])
    np.testing.assert_array_equal(got["layers.2.weight"], t["2.weight"])
    np.testing.assert_array_equal(got["table"], t["table"])
    np.testing.assert_array_equal(got["window"], t["window"])


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_read_pytorch_dtypes_and_shared_storage(tmp_path, zip_format):
    path = tmp_path / "mixed.pth"
    base = torch.randn(5, 4)
    state = {"bf16": torch.randn(3, 2).to(torch.bfloat16), "f16": torch.randn(4).half(),
             "i64": torch.arange(6).reshape(2, 3), "flag": torch.tensor([True, False]),
             "step": torch.tensor(7), "col": base[:, 1], "rows": base[2:]}
    torch.save(state, path, _use_new_zipfile_serialization=zip_format)
    arrays = record.read_pytorch(path)
    for key, value in state.items():
        expected = value.float().numpy() if value.dtype == torch.bfloat16 else value.numpy()
        assert arrays[key].shape == tuple(value.shape), key
        np.testing.assert_array_equal(arrays[key].astype(expected.dtype), expected, err_msg=key)
    assert str(arrays["bf16"].dtype) == "bfloat16"


class _Exploit:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _torch_like_zip(path, payload: object) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        buf = io.BytesIO()
        pickle.Pickler(buf, protocol=2).dump(payload)
        zf.writestr("archive/data.pkl", buf.getvalue())
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/version", "3\n")


def test_pickle_that_runs_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    _torch_like_zip(path, {"weight": _Exploit(str(marker))})
    with pytest.raises(record.UnsafePickleError, match=r"(posix|os|nt)\.system"):
        record.load(Net(), path)
    assert not marker.exists()
    pickle.loads(zipfile.ZipFile(path).read("archive/data.pkl"))  # the payload is live
    assert marker.exists()


def test_legacy_pickle_that_runs_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pth"
    path.write_bytes(pickle.dumps(_Exploit(str(marker)), protocol=2))
    with pytest.raises(record.UnsafePickleError, match="system"):
        record.read_pytorch(path)
    assert not marker.exists()


def test_real_burn_layers_match_torch_forward(tmp_path):
    linear = pytest.importorskip("burn.nn.linear")
    norm = pytest.importorskip("burn.nn.norm")

    class Net2(Module):
        def __init__(self) -> None:
            self.fc = linear.Linear(3, 4)
            self.bn = norm.BatchNorm(4)

        def forward(self, x):
            return self.bn(self.fc(x))

    reference = torch.nn.Sequential()
    reference.fc, reference.bn = torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)
    reference(torch.randn(16, 3))
    reference.eval()
    torch.save(reference.state_dict(), tmp_path / "net.pt")
    net = Net2()
    assert record.load(net, tmp_path / "net.pt").ok
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    expected = reference(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(net.eval()(burn.tensor(x)).to_numpy(), expected, atol=1e-5)


def test_unknown_global_and_bad_geometry(tmp_path):
    path = tmp_path / "odd.pt"
    _torch_like_zip(path, {"x": burn.errors.BurnError})
    with pytest.raises(record.UnsafePickleError, match="burn.errors.BurnError"):
        record.read_pytorch(path)
    torch.save({"w": torch.ones(4)}, path)
    with zipfile.ZipFile(path) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    pkl = next(n for n in entries if n.endswith("data.pkl"))
    entries[pkl] = entries[pkl].replace(b"K\x04\x85", b"K\x40\x85")  # size (4,) -> (64,)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    with pytest.raises(record.CorruptRecordError, match="exceeds its storage"):
        record.read_pytorch(path)
