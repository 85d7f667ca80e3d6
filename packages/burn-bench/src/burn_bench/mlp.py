"""One MLP training step (784-256-10, batch 64): forward, cross-entropy, backward, SGD update."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import torch

import burn
import burn.functional as F
from burn_bench.timing import Candidate, measure_interleaved, report

BATCH, IN, HIDDEN, OUT = 64, 784, 256, 10
LR = 0.01


def _data() -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    weights = [
        (rng.standard_normal((IN, HIDDEN)) / np.sqrt(IN)).astype(np.float32),
        np.zeros(HIDDEN, np.float32),
        (rng.standard_normal((HIDDEN, OUT)) / np.sqrt(HIDDEN)).astype(np.float32),
        np.zeros(OUT, np.float32),
    ]
    x = rng.standard_normal((BATCH, IN)).astype(np.float32)
    y = rng.integers(0, OUT, BATCH)
    return weights, x, y


def torch_step_fn() -> Callable[[], None]:
    """A closure running one torch training step."""
    weights, x, y = _data()
    params = [torch.from_numpy(w.copy()).requires_grad_() for w in weights]
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def step() -> None:
        w1, b1, w2, b2 = params
        logits = torch.relu(xt @ w1 + b1) @ w2 + b2
        loss = torch.nn.functional.cross_entropy(logits, yt)
        loss.backward()
        with torch.no_grad():
            for p in params:
                if p.grad is None:
                    raise RuntimeError("torch step: a parameter received no gradient")
                p -= LR * p.grad
                p.grad = None

    return step


def burn_step_fn(device: burn.Device) -> Callable[[], None]:
    """A closure running one burn training step on `device` (an autodiff device)."""
    weights, x, y = _data()
    params = [burn.tensor(w, device=device).require_grad() for w in weights]
    xb = burn.tensor(x, device=device)
    targets = burn.one_hot(burn.tensor(y, device=device), OUT).float()

    def step() -> None:
        w1, b1, w2, b2 = params
        logits = F.relu(xb @ w1 + b1) @ w2 + b2
        loss = -(F.log_softmax(logits, 1) * targets).sum() / BATCH
        grads = loss.backward()
        for i, p in enumerate(params):
            grad = p.grad(grads)
            if grad is None:
                raise RuntimeError("burn step: a parameter received no gradient")
            updated = p.inner() - LR * grad
            params[i] = burn.Tensor.from_inner(updated, device).require_grad()

    return step


def run() -> str:
    """Measure and return the report table."""
    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    results = measure_interleaved([
        Candidate("torch eager step", torch_step_fn()),
        Candidate("burn numpy+autodiff step", burn_step_fn(burn.Device("numpy").autodiff()),
                  vs="torch eager step"),
    ])
    return report(f"MLP 784-256-10 batch 64 training step ({threads} threads)", results)
