"""Run one GELU-tanh kernel on every burn-cube runtime of this process and compare with numpy;
runtimes that cannot run here are listed with the reason: `python -m custom_cube_kernel`."""

from __future__ import annotations

import argparse

import numpy as np

import burn_cube as bc
from burn_cube import ABSOLUTE_POS, Tensor, f32
from burn_cube.errors import RuntimeUnavailableError
from burn_cube.runtime import NAMES


@bc.kernel
def gelu_tanh(x: Tensor[f32], out: Tensor[f32]):
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + bc.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def main(argv: list[str] | None = None) -> int:
    """Launch on each runtime, print which ran (with the max error against numpy) and which
    were skipped and why; returns 1 when a result mismatches."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1 << 20, help="elements (default: 2^20)")
    parser.add_argument("--smoke", action="store_true", help="a quick check: 4096 elements")
    args = parser.parse_args(argv)
    if args.size < 1:
        parser.error(f"--size must be at least 1, got {args.size}")
    x = np.random.default_rng(0).standard_normal(4096 if args.smoke else args.size)
    x = x.astype(np.float32)
    expected = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
    cube_dim = 256
    ran: list[str] = []
    skipped: list[str] = []
    failed: list[str] = []
    for name in NAMES:
        try:
            rt = bc.runtime(name)
        except RuntimeUnavailableError as e:
            skipped.append(f"{name} ({e})")
            continue
        out = rt.allocate(x.shape, bc.f32)
        gelu_tanh.launch(rt, -(-x.size // cube_dim), cube_dim, rt.upload(x), out)
        err = float(np.max(np.abs(out.numpy() - expected)))
        status = "ok" if err < 1e-5 else "MISMATCH"
        print(f"{name:5s} ({rt.properties.device}): max abs error {err:.2e} -> {status}")
        (ran if status == "ok" else failed).append(name)
    print(f"runtimes that ran: {', '.join(ran + failed) or 'none'}")
    for line in skipped:
        print(f"skipped: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
