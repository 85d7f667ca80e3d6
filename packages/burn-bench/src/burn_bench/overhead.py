"""Per-op overhead: `a + b` on 64-element float32 tensors, burn vs numpy vs PyTorch eager; and
what recording costs (`burn.profile()` on a Profile device) against the plain numpy device."""

from __future__ import annotations

import numpy as np
import torch

import burn
from burn_bench.timing import Candidate, measure_interleaved, report

SIZE = 64
TORCH, TORCH_GRAD = "torch eager a + b", "torch eager a + b (requires_grad)"
PLAIN = "burn numpy a + b"


def run() -> str:
    """Measure (candidates interleaved) and return the report table."""
    data = np.random.default_rng(0).standard_normal((2, SIZE)).astype(np.float32)
    a_np, b_np = data[0], data[1]
    a_t, b_t = torch.from_numpy(data[0].copy()), torch.from_numpy(data[1].copy())
    a_tg, b_tg = a_t.clone().requires_grad_(), b_t.clone().requires_grad_()
    plain = burn.Device("numpy")
    a, b = burn.tensor(data[0], device=plain), burn.tensor(data[1], device=plain)
    tracked = plain.autodiff()
    a_g = burn.tensor(data[0], device=tracked).require_grad()
    b_g = burn.tensor(data[1], device=tracked).require_grad()
    profiled = plain.profile()
    a_p, b_p = burn.tensor(data[0], device=profiled), burn.tensor(data[1], device=profiled)
    with burn.profile() as recording:
        results = measure_interleaved([
            Candidate("numpy a + b", lambda: a_np + b_np, vs=TORCH),
            Candidate(TORCH, lambda: a_t + b_t),
            Candidate(TORCH_GRAD, lambda: a_tg + b_tg),
            Candidate(PLAIN, lambda: a + b, vs=TORCH),
            Candidate("burn numpy+autodiff a + b", lambda: a_g + b_g, vs=TORCH_GRAD),
            Candidate("burn numpy+profile a + b, recording", lambda: a_p + b_p, vs=PLAIN),
        ])
    extra = (results[-1].seconds - results[3].seconds) * 1e6
    return (report("per-op overhead, a + b, 64 x float32", results)
            + f"\nrecording adds {extra:.2f} us per op ({len(recording)} ops recorded)")
