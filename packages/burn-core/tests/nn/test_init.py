"""Initializers: shape, dtype, device, bounds and statistics against torch's formulas."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import burn
from burn.errors import ValueRangeError
from burn.nn import init

DEV = burn.Device("numpy").autodiff()
SHAPE = (64, 32, 3, 3)  # torch layout [out, in, kh, kw]
FAN_IN, FAN_OUT = 32 * 9, 64 * 9


def test_fans_and_gain_match_torch() -> None:
    assert init.fans(SHAPE) == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(SHAPE))
    for name, param in [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("selu", None),
                        ("sigmoid", None), ("conv2d", None), ("leaky_relu", None)]:
        assert init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param))
    with pytest.raises(ValueRangeError, match="fans"):
        init.fans(5)


def test_constants() -> None:
    t = init.constant((2, 3), 1.5, device=DEV)
    assert t.shape == (2, 3) and t.dtype == burn.float32 and t.device == DEV
    np.testing.assert_array_equal(t.to_numpy(), np.full((2, 3), 1.5))
    assert init.zeros(4).to_numpy().sum() == 0 and init.ones(4).to_numpy().sum() == 4
    assert init.ones(3, dtype=burn.float64).dtype == burn.float64


def test_uniform_and_normal_statistics() -> None:
    u = init.uniform((200, 100), -2.0, 3.0).to_numpy()
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    n = init.normal((200, 100), 1.0, 0.5).to_numpy()
    assert abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 0.5) < 0.02


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming(mode: str) -> None:
    fan = FAN_IN if mode == "fan_in" else FAN_OUT
    gain = init.calculate_gain("relu")
    u = init.kaiming_uniform(SHAPE, gain, mode).to_numpy()  # type: ignore[arg-type]
    bound = gain * math.sqrt(3 / fan)
    assert u.shape == SHAPE and np.abs(u).max() <= bound and np.abs(u).max() > 0.99 * bound
    assert abs(u.std() - bound / math.sqrt(3)) < 0.02 * bound
    n = init.kaiming_normal(SHAPE, gain, mode).to_numpy()  # type: ignore[arg-type]
    assert abs(n.std() - gain / math.sqrt(fan)) < 0.02 * gain / math.sqrt(fan)
    assert abs(n.mean()) < 0.05 * n.std()


def test_xavier() -> None:
    bound = 2.0 * math.sqrt(6 / (FAN_IN + FAN_OUT))
    u = init.xavier_uniform(SHAPE, gain=2.0).to_numpy()
    assert np.abs(u).max() <= bound and np.abs(u).max() > 0.99 * bound
    std = math.sqrt(2 / (FAN_IN + FAN_OUT))
    assert abs(init.xavier_normal(SHAPE).to_numpy().std() - std) < 0.02 * std


def test_explicit_fans_override_layout() -> None:
    u = init.kaiming_uniform((1000, 10), 1.0, fan_in=4).to_numpy()  # e.g. Linear [in, out]
    assert np.abs(u).max() <= math.sqrt(3 / 4) and np.abs(u).max() > 0.95 * math.sqrt(3 / 4)
    b = init.kaiming_uniform(10, 1.0, fan_in=4, fan_out=10)  # 1-d with explicit fans
    assert b.shape == (10,)
    with pytest.raises(ValueRangeError, match="mode"):
        init.kaiming_uniform((2, 2), mode="fan")  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", [(5, 8), (8, 5), (4, 2, 3)])
def test_orthogonal(shape: tuple[int, ...]) -> None:
    q = init.orthogonal(shape, gain=2.0, device=DEV)
    assert q.shape == shape and q.dtype == burn.float32 and q.device == DEV
    flat = q.to_numpy().reshape(shape[0], -1).astype(np.float64) / 2.0
    small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(small, np.eye(min(flat.shape)), atol=1e-5)
    with pytest.raises(ValueRangeError):
        init.orthogonal(3)


def test_seeded_reproducible() -> None:
    burn.seed(11, DEV)
    a = init.KaimingNormal().init(SHAPE, DEV).to_numpy()
    burn.seed(11, DEV)
    b = init.kaiming_normal(SHAPE, device=DEV).to_numpy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("record", [
    init.Constant(0.3), init.Zeros(), init.Ones(), init.Uniform(-1, 2), init.Normal(1, 3),
    init.KaimingUniform(1.0, "fan_out"), init.KaimingNormal(), init.XavierUniform(0.5),
    init.XavierNormal(), init.Orthogonal(2.0),
])
def test_records_build_and_round_trip(record: init.Initializer) -> None:
    t = record.init((6, 4), DEV, fan_in=4, fan_out=6)
    assert t.shape == (6, 4) and t.device == DEV and t.dtype == burn.float32
    assert init.Initializer.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_unknown_record_kind() -> None:
    with pytest.raises(ValueRangeError, match="unknown kind"):
        init.Initializer.from_dict({"kind": "nope"})


def test_torch_default_matches_torch_linear_bound() -> None:
    t = init.TORCH_DEFAULT.init((400, 25), fan_in=400, fan_out=25).to_numpy()
    bound = 1 / math.sqrt(400)  # torch.nn.Linear(400, 25): U(-1/sqrt(in), 1/sqrt(in))
    assert np.abs(t).max() <= bound and np.abs(t).max() > 0.99 * bound
