"""The synthetic task: predict the next value of a noisy sine wave (Burn's SinWaveDataset)."""

from __future__ import annotations

import numpy as np


def sine_sequences(n: int, seq_len: int, noise: float, seed: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """`n` windows of sin(freq * t + phase) + N(0, noise^2), freq ~ U(0.1, 0.4) and
    phase ~ U(0, 2 pi) per window, and the clean value that follows each.

    Args:
        n: windows.
        seq_len: steps per window.
        noise: standard deviation of the noise added to the inputs.
        seed: seed of the frequencies, phases and noise.
    Returns:
        (inputs [n, seq_len, 1], targets [n, 1]), float32.
    """
    rng = np.random.default_rng(seed)
    freq = rng.uniform(0.1, 0.4, size=(n, 1))
    phase = rng.uniform(0.0, 2 * np.pi, size=(n, 1))
    t = np.arange(seq_len + 1)[None, :]
    wave = np.sin(freq * t + phase)
    x = wave[:, :seq_len] + rng.normal(0.0, noise, size=(n, seq_len))
    return x[..., None].astype(np.float32), wave[:, seq_len:].astype(np.float32)
