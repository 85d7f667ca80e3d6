"""Run one GELU-tanh kernel on every available burn-cube runtime and compare with numpy."""

from __future__ import annotations

import numpy as np

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Tensor, f32


@bc.kernel
def gelu_tanh(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def main() -> None:
    """Launch on each runtime, print which ran and the max error against numpy."""
    x = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    expected = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
    cube_dim = 256
    ran = []
    for name in bc.available():
        rt = bc.runtime(name)
        out = rt.allocate(x.shape, bc.f32)
        gelu_tanh.launch(rt, -(-x.size // cube_dim), cube_dim, rt.upload(x), out)
        err = float(np.max(np.abs(out.numpy() - expected)))
        status = "ok" if err < 1e-5 else "MISMATCH"
        print(f"{name:5s} ({rt.properties.device}): max abs error {err:.2e} -> {status}")
        ran.append(name)
    print(f"runtimes that ran: {', '.join(ran)}")


if __name__ == "__main__":
    main()
