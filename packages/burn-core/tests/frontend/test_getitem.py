"""t[...] and t[...] = v against torch / numpy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

X = np.arange(24).reshape(2, 3, 4)
INDICES = [
    (0,), (slice(None), 1), (Ellipsis, 2), (None, 1, slice(None)), (-1, -1, -1),
    (slice(1, 1),), ([-1],), ([0, 1],), (slice(None), [2, 0], [1, 3]),
    ([1, 0], slice(None), [0, 3]), (0, slice(None), [0, 1]), (slice(None), [[0, 1], [2, 1]]),
    (slice(None), None, [0, 1]), (Ellipsis, None), (slice(0, 3, 2), slice(None, None, 3)),
]
NEGATIVE_STEPS = [(slice(None, None, -1),), (None, 1, slice(None, None, -2)),
                  (slice(5, 0, -1), slice(-1, 0, -2))]


def _burn_index(ix: tuple) -> tuple:
    return tuple(burn.tensor(i.numpy()) if isinstance(i, torch.Tensor) else i for i in ix)


@pytest.mark.parametrize("ix", INDICES + [(torch.tensor(X)[..., 0] > 5,),
                                          (slice(None), torch.tensor(X)[0] > 3)], ids=str)
def test_getitem_and_setitem_match_torch(ix: tuple) -> None:
    ref = torch.tensor(X)[ix]
    out = burn.tensor(X)[_burn_index(ix)]
    assert out.shape == tuple(ref.shape)
    np.testing.assert_array_equal(out.to_numpy(), ref.numpy())
    t, tt = burn.tensor(X), torch.tensor(X)
    value = torch.arange(ref.numel()).reshape(ref.shape) + 100
    tt[ix] = value
    t[_burn_index(ix)] = burn.tensor(value.numpy())
    np.testing.assert_array_equal(t.to_numpy(), tt.numpy())


@pytest.mark.parametrize("ix", NEGATIVE_STEPS, ids=str)
def test_negative_steps_match_numpy(ix: tuple) -> None:
    np.testing.assert_array_equal(burn.tensor(X)[ix].to_numpy(), X[ix])
    t, ref = burn.tensor(X), X.copy()
    ref[ix] = -1
    t[ix] = -1
    np.testing.assert_array_equal(t.to_numpy(), ref)


def test_setitem_broadcasts_scalars_and_casts() -> None:
    t = burn.zeros(2, 3)
    t[:, 1] = 5
    t[0] = burn.tensor([1, 2, 3])  # int values cast to float32
    t[t > 4] = -1.0
    assert t.dtype == burn.float32
    assert t.tolist() == [[1.0, 2.0, 3.0], [0.0, -1.0, 0.0]]


def test_getitem_returns_a_copy_and_zero_dim() -> None:
    t = burn.tensor([1.0, 2.0])
    c = t[...]
    c[0] = 9.0
    assert t.tolist() == [1.0, 2.0]
    s = burn.tensor(3.0)
    assert s[...].shape == () and s[None].shape == (1,)


def test_setitem_under_autodiff_records_the_assignment() -> None:
    device = burn.Device("numpy").autodiff()
    x = burn.ones(2, 3, device=device).require_grad()
    y = x * 2.0
    y[0] = 0.0
    grads = y.sum().backward()
    assert x.grad(grads).tolist() == [[0.0] * 3, [2.0] * 3]
