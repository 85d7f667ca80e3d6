"""The Module base (discovery, paths, transforms, modes, summary) and Config save / load."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import burn
from burn import nn
from burn.nn import init

DEV = burn.Device("numpy").autodiff()


class Block(nn.Module):
    def __init__(self, d: int, device: burn.Device | str | None = None) -> None:
        self.linear = nn.Linear(d, d, device=device)
        self.norm = nn.BatchNorm(d, device=device)
        self.act = nn.Relu()

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        return self.act(self.norm(self.linear(x)))


class Net(nn.Module):
    def __init__(self, device: burn.Device | str | None = None) -> None:
        self.blocks = [Block(4, device), Block(4, device)]
        self.heads = {"a": nn.Linear(4, 2, device=device), "b": nn.Linear(4, 1, bias=False,
                                                                          device=device)}
        self.scale = nn.Param(burn.ones(1, device=device))
        self.dropout = nn.Dropout(0.5)
        self._cache = nn.Linear(4, 4)  # private: not discovered

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.heads["a"](self.dropout(x)) * self.scale


def test_discovery_and_dotted_names() -> None:
    net = Net()
    assert [n for n, _ in net.named_children()] == ["blocks.0", "blocks.1", "heads.a",
                                                      "heads.b", "dropout"]
    names = [n for n, _ in net.named_parameters()]
    assert names == ["blocks.0.linear.weight", "blocks.0.linear.bias", "blocks.0.norm.weight",
                     "blocks.0.norm.bias", "blocks.1.linear.weight", "blocks.1.linear.bias",
                     "blocks.1.norm.weight", "blocks.1.norm.bias", "heads.a.weight",
                     "heads.a.bias", "heads.b.weight", "scale"]
    buffers = [n for n, p in net.named_tensors() if isinstance(p, nn.Buffer)]
    assert buffers == ["blocks.0.norm.running_mean", "blocks.0.norm.running_var",
                       "blocks.1.norm.running_mean", "blocks.1.norm.running_var"]
    assert "blocks.1.norm" in dict(net.named_modules())
    assert net.num_params() == 2 * (16 + 4 + 8) + 8 + 2 + 4 + 1
    assert len({p.id for p in net.parameters()}) == len(names)


def test_to_device_keeps_ids_and_tracks_grads() -> None:
    net = Net()
    ids = [p.id for p in net.parameters()]
    assert net.to(DEV) is net and net.devices() == [DEV]
    assert [p.id for p in net.parameters()] == ids
    out = net(burn.ones(3, 4, device=DEV)).sum()
    grads = out.backward()
    assert all(p.grad(grads) is not None for p in net.parameters()
               if not p.shape == (4, 1))  # heads.b is unused
    assert net.blocks[0].norm.running_mean.grad(grads) is None


def test_train_eval_recursive() -> None:
    net = Net().eval()
    assert not any(m.training for _, m in net.named_modules())
    x = burn.ones(2, 4)
    np.testing.assert_array_equal(net(x).to_numpy(), net(x).to_numpy())  # dropout off
    net.train()
    assert net.dropout.training and net.blocks[1].norm.training


def test_freeze_unfreeze() -> None:
    net = Net().to(DEV).freeze()
    assert not any(p.trainable for p in net.parameters())
    assert not net.blocks[0].linear.weight.is_require_grad()
    net.unfreeze()
    assert all(p.trainable for p in net.parameters())
    assert net.blocks[0].linear.weight.is_require_grad()
    assert not net.blocks[0].norm.running_var.trainable
    with pytest.raises(ValueError):
        net.blocks[0].norm.running_var.trainable = True


def test_map_and_visit() -> None:
    net = Net()
    net.map(lambda path, p: burn.zeros_like(p) if path.endswith("bias") else p.value())
    seen: dict[str, float] = {}
    net.visit(lambda path, p: seen.__setitem__(path, float(p.to_numpy().sum())))
    assert seen["heads.a.bias"] == 0.0 and seen["blocks.0.norm.running_var"] == 4.0
    assert len(seen) == len(list(net.named_tensors()))


def test_repr_and_summary() -> None:
    net = Net()
    text = repr(net)
    assert "(blocks.0): Block(" in text and "Linear(d_input=4, d_output=2, bias=True)" in text
    assert "BatchNorm(4, eps=1e-05, momentum=0.1, affine=True)" in text
    summary = net.summary()
    assert "blocks.0.norm.running_mean" in summary and "buffer" in summary
    assert f"params: {net.num_params():,}" in summary


@dataclass
class NetConfig(nn.Config):
    linear: nn.LinearConfig
    norm: nn.LayerNormConfig
    kernel: tuple[int, ...] = (3, 3)

    def init(self, device: burn.Device | str | None = None) -> nn.Module:
        return self.linear.init(device)


CONFIGS = [
    nn.LinearConfig(4, 3, initializer=init.XavierUniform(2.0)),
    nn.Conv2dConfig(2, 4, (3, 1), padding="same", initializer=init.KaimingNormal()),
    nn.ConvTranspose1dConfig(2, 4, 3, stride=2),
    nn.EmbeddingConfig(10, 4),
    nn.BatchNormConfig(3, momentum=0.2),
    nn.LayerNormConfig((4, 5)),
    nn.GroupNormConfig(2, 4),
    nn.InstanceNormConfig(3, affine=True),
    nn.RmsNormConfig(8, eps=1e-6),
    nn.DropoutConfig(0.2),
    nn.MaxPool2dConfig((2, 2), stride=1),
    nn.AdaptiveAvgPool1dConfig(4),
    nn.InterpolateConfig(scale_factor=2.0, mode="bilinear"),
    nn.PReluConfig(3, 0.1),
    nn.SwiGluConfig(4, 8, initializer=init.Orthogonal()),
    nn.CrossEntropyLossConfig(weight=(1.0, 2.0), label_smoothing=0.1),
    NetConfig(nn.LinearConfig(2, 2), nn.LayerNormConfig(2)),
]


@pytest.mark.parametrize("config", CONFIGS, ids=[type(c).__name__ for c in CONFIGS])
def test_config_json_round_trip_and_init(config: nn.Config, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    config.save(path)
    loaded = type(config).load(path)
    assert loaded == config
    module = loaded.init(DEV)
    assert isinstance(module, nn.Module)
    assert all(p.device == DEV for _, p in module.named_tensors())


def test_config_initializer_is_used() -> None:
    layer = nn.LinearConfig(3, 2, initializer=init.Constant(0.5)).init()
    np.testing.assert_array_equal(layer.weight.to_numpy(), np.full((3, 2), 0.5))
    np.testing.assert_array_equal(layer.bias.to_numpy(), np.full(2, 0.5))  # type: ignore


def test_ops_on_params_give_plain_tensors() -> None:
    """A Param is a Tensor, but results of ops on it are plain Tensors (no id, not discovered
    as parameters when stored on a module)."""
    device = burn.Device("numpy").autodiff()
    param, other = nn.Param(burn.randn(3, device=device)), burn.randn(3, device=device)
    results = [param * 2.0, param + other, other + param, param + param, -param, param.exp(),
               param[0:2], param.reshape(3, 1), param.sum()]
    assert all(type(r) is burn.Tensor for r in results), [type(r) for r in results]
