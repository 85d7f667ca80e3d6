"""The op suites compute what their references compute (shape, dtype, then values)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn_bench.ops import BUILDERS


def _arrays(out: Any) -> list[np.ndarray]:
    items = out if isinstance(out, tuple) else (out,)
    result = []
    for item in items:
        if isinstance(item, torch.Tensor):
            result.append(item.detach().numpy())
        elif isinstance(item, burn.Tensor):
            result.append(item.numpy())
        else:
            result.append(np.asarray(item))
    return result


@pytest.mark.parametrize("backend", ["numpy", "numpy+autodiff"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bench", sorted(BUILDERS))
def test_burn_matches_references(bench: str, dtype: str, backend: str) -> None:
    calls = BUILDERS[bench](6, dtype, burn.Device(backend))
    assert "burn" in calls and "torch" in calls
    outs = {name: _arrays(fn()) for name, fn in calls.items()}
    for name, arrays in outs.items():
        assert len(arrays) == len(outs["burn"]), name
        for got, ref in zip(outs["burn"], arrays, strict=True):
            assert got.shape == ref.shape, (name, got.shape, ref.shape)
            want = np.dtype(bool) if bench == "bool_select" else np.dtype(dtype)
            assert got.dtype == ref.dtype == want, (name, got.dtype, ref.dtype)
            if bench == "random":  # different generators: same range only
                assert got.min() >= 0 and got.max() < 1 and got.std() > 0
            else:
                np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5, err_msg=name)


def test_without_torch_the_reference_is_left_out() -> None:
    """torch is an optional extra: without it (`import torch` fails) the op suites still run
    burn against numpy, and the results say torch is absent."""
    script = ("import sys; sys.modules['torch'] = None\n"
              "from burn_bench.runner import run_grid\n"
              "doc = run_grid(['unary', 'autodiff'], ['numpy'], ['float32'], 4,"
              " ['torch', 'numpy'], rounds=1, min_time=0.0005)\n"
              "print(json.dumps([sorted(r['times']) for r in doc['rows']]))")
    out = subprocess.run([sys.executable, "-c", "import json\n" + script], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    assert json.loads(out) == [["burn", "numpy"], ["burn"]]
