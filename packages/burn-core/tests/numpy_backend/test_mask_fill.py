"""float_mask_fill on float32 / float64 selects by bits: bit for bit np.where's result (NaN,
inf, -0.0, broadcasting, 0-d and non-contiguous operands), and torch's masked_fill."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from burn.backends.numpy import NumpyBackend

B: Any = NumpyBackend()  # type: ignore[abstract]
VALUES = [0.0, -0.0, 1.5, -np.inf, np.nan, 1e300]


def _cases(rng: np.random.Generator, dtype: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    x = rng.standard_normal((5, 7)).astype(dtype)
    x[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    scalar = np.asarray(rng.standard_normal(()).astype(dtype))
    return [
        (x, rng.random((5, 7)) < 0.5),
        (x, rng.random(7) < 0.5),  # mask broadcasts over rows
        (x, rng.random((3, 5, 1)) < 0.5),  # both broadcast
        (x, np.array(True)),
        (x.T, rng.random((7, 5)) < 0.5),  # non-contiguous x
        (scalar, np.array(False)),
        (scalar, rng.random(3) < 0.5),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("value", VALUES)
def test_mask_fill_equals_where_bit_for_bit(dtype: Any, value: float) -> None:
    rng = np.random.default_rng(0)
    for x, mask in _cases(rng, dtype):
        with np.errstate(all="ignore"):
            expected = np.asarray(np.where(mask, dtype(value), x))
        out = B.float_mask_fill(x, mask, value)
        assert isinstance(out, np.ndarray)
        assert out.shape == expected.shape and out.dtype == np.dtype(dtype)
        assert np.ascontiguousarray(out).tobytes() == np.ascontiguousarray(expected).tobytes()


def test_mask_fill_matches_torch_masked_fill() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 6, 24, 24)).astype(np.float32)
    x[0, 0, 0, :3] = [np.nan, np.inf, -np.inf]
    mask = rng.random(x.shape) < 0.5
    out = B.float_mask_fill(x, mask, 0.0)
    expected = torch.from_numpy(x).masked_fill(torch.from_numpy(mask), 0.0).numpy()
    assert out.shape == expected.shape and out.dtype == expected.dtype
    assert out.tobytes() == expected.tobytes()
