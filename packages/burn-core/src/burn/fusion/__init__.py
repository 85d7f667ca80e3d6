"""Fusion: lazy op streams fused into generated kernels (Burn's fusion backend).

``Device("cpu").fusion()`` (``"cpu+fusion"``, ``"wgpu+fusion+autodiff"``) records elementwise
ops instead of running them and runs each block of them as one burn-cube kernel at the next
sync point; see `burn.fusion.backend.Fusion`. `stats()` says what the fusion devices of the
process have done (streams, plans, cache hits, kernels launched, compile time).
"""

from burn.fusion.backend import Fusion
from burn.fusion.handle import FusionTensor
from burn.fusion.stats import FusionStats, reset_stats, stats

__all__ = ["Fusion", "FusionStats", "FusionTensor", "reset_stats", "stats"]
