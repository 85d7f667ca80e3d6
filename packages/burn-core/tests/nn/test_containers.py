"""Containers (Sequential, ModuleList, ModuleDict), Flatten / Unflatten and in-memory state
dicts, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
from burn import nn
from burn.errors import BurnIndexError, ShapeError, ValueRangeError

torch.set_num_threads(1)
DEV = burn.Device("numpy").autodiff()
RNG = np.random.default_rng(3)


def _randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _copy_linear_weights(module: nn.Module, ref: torch.nn.Module) -> None:
    """torch's state_dict into `module` by name, Linear weights transposed."""
    linear = {f"{p}.weight" for p, m in module.named_modules() if isinstance(m, nn.Linear)}
    state = {k: (v.numpy().T if k in linear else v.numpy()) for k, v in ref.state_dict().items()}
    assert module.load_state_dict(state) == nn.IncompatibleKeys([], [])


def test_sequential_matches_torch_forward_and_backward() -> None:
    model = nn.Sequential(nn.Linear(4, 6, device=DEV), nn.Relu(), nn.Linear(6, 3, device=DEV))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    assert [k for k, _ in model.named_parameters()] == [k for k, _ in ref.named_parameters()]
    _copy_linear_weights(model, ref)
    a = _randn(5, 4)
    x, tx = burn.tensor(a, device=DEV).require_grad(), torch.tensor(a, requires_grad=True)
    out, tout = model(x), ref(tx)
    assert out.shape == tuple(tout.shape) and out.dtype == burn.float32
    np.testing.assert_allclose(out.to_numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    grads = out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(x.grad(grads).to_numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model[2].bias.grad(grads).to_numpy(), ref[2].bias.grad.numpy(),
                               rtol=1e-5, atol=1e-6)
    head = model[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is model[0]
    assert model[-1] is model[2]
    with pytest.raises(BurnIndexError, match="Sequential"):
        model[3]


def test_module_list_and_dict_names_as_torch() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            self.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
            self.heads = nn.ModuleDict({"a": nn.Linear(2, 1)})

    class TorchNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)])
            self.heads = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 1)})

    net, ref = Net(), TorchNet()
    assert [k for k, _ in net.named_parameters()] == [k for k, _ in ref.named_parameters()]
    net.blocks.append(nn.Linear(2, 3)).extend([nn.Relu()])
    net.blocks.insert(0, nn.Identity())
    ref.blocks.append(torch.nn.Linear(2, 3)).extend([torch.nn.ReLU()])
    ref.blocks.insert(0, torch.nn.Identity())
    net.heads["b"] = nn.Linear(2, 4)
    ref.heads["b"] = torch.nn.Linear(2, 4)
    assert [k for k, _ in net.named_parameters()] == [k for k, _ in ref.named_parameters()]
    assert "blocks.1.bias" in dict(net.named_parameters())
    assert len(net.blocks) == len(ref.blocks) == 5
    assert [type(m).__name__ for m in net.blocks[1:3]] == ["Linear", "Linear"]
    assert isinstance(net.blocks[1:3], nn.ModuleList)
    assert net.heads.keys() == list(ref.heads.keys()) and "b" in net.heads
    assert [k for k, _ in net.heads.items()] == ["a", "b"] and len(net.heads.values()) == 2
    assert list(net.heads) == ["a", "b"]
    with pytest.raises(TypeError, match="ModuleList"):
        net.blocks.append(3)  # type: ignore[arg-type]
    with pytest.raises(ValueRangeError, match="ModuleDict"):
        net.heads["x.y"] = nn.Relu()
    with pytest.raises(KeyError, match="ModuleDict"):
        net.heads["zz"]


@pytest.mark.parametrize("start, end", [(1, -1), (0, 2), (2, 3)])
def test_flatten_unflatten(start: int, end: int) -> None:
    a = _randn(2, 3, 4, 5)
    out, tout = nn.Flatten(start, end)(burn.tensor(a)), torch.nn.Flatten(start, end)(
        torch.tensor(a))
    assert out.shape == tuple(tout.shape)
    np.testing.assert_array_equal(out.to_numpy(), tout.numpy())
    back = nn.Unflatten(1, (3, -1))(burn.tensor(a.reshape(2, 60)))
    tback = torch.nn.Unflatten(1, (3, -1))(torch.tensor(a.reshape(2, 60)))
    assert back.shape == tuple(tback.shape) == (2, 3, 20)
    np.testing.assert_array_equal(back.to_numpy(), tback.numpy())
    with pytest.raises(ShapeError):
        nn.Unflatten(1, (7, 7))(burn.tensor(a.reshape(2, 60)))


def test_state_dict_round_trip_and_buffers() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm(4))
    state = model.state_dict()
    assert list(state) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                           "1.running_var"]
    other = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm(4))
    ids = [p.id for p in other.parameters()]
    other.load_state_dict(state)
    for key, value in other.state_dict().items():
        np.testing.assert_array_equal(value.to_numpy(), state[key].to_numpy())
    assert [p.id for p in other.parameters()] == ids


def test_load_state_dict_strict_and_partial() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(4, 2))  # "0" mismatches
    before = model[0].weight.to_numpy()
    state = {k: v.numpy() for k, v in ref.state_dict().items()}
    with pytest.raises(ShapeError, match=r"load_state_dict: shape mismatch for '0.weight' "
                       r"\(key=0.weight, module=\(3, 4\), state=\(5, 4\)\)"):
        model.load_state_dict({"0.weight": np.zeros((5, 4), np.float32)}, strict=False)
    with pytest.raises(ShapeError, match=r"'0.bias'.*module=\(4,\), state=\(3,\)"):
        model.load_state_dict({"0.bias": state["0.bias"]}, strict=False)
    np.testing.assert_array_equal(model[0].weight.to_numpy(), before)  # nothing loaded
    partial = {"1.bias": state["1.bias"], "extra.weight": np.zeros(2, np.float32)}
    with pytest.raises(nn.StateDictKeyError, match="missing_keys=.*0.weight.*unexpected_keys="
                       r"\['extra.weight'\]"):
        model.load_state_dict(partial)
    result = model.load_state_dict(partial, strict=False)
    tref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    tresult = tref.load_state_dict({"1.bias": torch.tensor(state["1.bias"]),
                                    "extra.weight": torch.zeros(2)}, strict=False)
    assert result.missing_keys == tresult.missing_keys
    assert result.unexpected_keys == tresult.unexpected_keys
    np.testing.assert_array_equal(model[1].bias.to_numpy(), state["1.bias"])


def test_load_state_dict_casts_to_module_dtype_and_device() -> None:
    model = nn.Linear(2, 2, device=DEV)
    model.load_state_dict({"weight": np.ones((2, 2)), "bias": torch.zeros(2, dtype=torch.float64)})
    assert model.weight.dtype == burn.float32 and model.bias.dtype == burn.float32
    assert model.weight.device == DEV and model.weight.is_require_grad()
