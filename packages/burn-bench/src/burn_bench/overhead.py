"""Per-op overhead: `a + b` on 64-element float32 tensors, burn vs numpy vs PyTorch eager."""

from __future__ import annotations

import numpy as np
import torch

import burn
from burn_bench.timing import Measurement, measure, report

SIZE = 64


def run() -> str:
    """Measure and return the report table."""
    data = np.random.default_rng(0).standard_normal((2, SIZE)).astype(np.float32)
    results: list[Measurement] = []

    a_np, b_np = data[0], data[1]
    results.append(measure("numpy a + b", lambda: a_np + b_np, vs="torch eager a + b"))

    a_t, b_t = torch.from_numpy(data[0].copy()), torch.from_numpy(data[1].copy())
    results.append(measure("torch eager a + b", lambda: a_t + b_t))
    a_tg, b_tg = a_t.clone().requires_grad_(), b_t.clone().requires_grad_()
    results.append(measure("torch eager a + b (requires_grad)", lambda: a_tg + b_tg))

    plain = burn.Device("numpy")
    a, b = burn.tensor(data[0], device=plain), burn.tensor(data[1], device=plain)
    results.append(measure("burn numpy a + b", lambda: a + b, vs="torch eager a + b"))
    tracked = plain.autodiff()
    a_g = burn.tensor(data[0], device=tracked).require_grad()
    b_g = burn.tensor(data[1], device=tracked).require_grad()
    results.append(measure("burn numpy+autodiff a + b", lambda: a_g + b_g,
                           vs="torch eager a + b (requires_grad)"))
    return report("per-op overhead, a + b, 64 x float32", results)
