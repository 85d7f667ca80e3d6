"""`burn.fusion.stats()`: what the fusion decorators of this process have done."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(slots=True)
class FusionStats:
    """Counters of every fusion stream of the process.

    Attributes:
        streams: streams made (one per fusion device in use).
        flushes: times a stream ran its pending ops.
        ops_recorded: ops deferred into a stream.
        ops_eager: ops no fuser takes, run at once on the inner backend.
        plans: fused kernels built (distinct op-sequence signatures).
        cache_hits: fused blocks whose kernel came from the plan cache.
        kernels_launched: kernels the fusion devices launched: the streams' (fused blocks
            and single ops run by the inner backend's own kernel) and those of ops run at once
            (the inner burn-cube runtime's count while they run). An optimizer's one-kernel
            updates (`burn.backends.cube.optim_kernels`) run on the inner backend and are not
            counted. The runtime's count is the process's: while another thread launches on
            the same runtime (through any device of it) as an op runs at once, its kernels
            are counted too.
        ops_fused: recorded ops that ran inside a fused kernel of two ops or more.
        ops_dead: recorded ops skipped because nothing read their results.
        compile_s: seconds spent building and compiling new fused kernels.
    """

    streams: int = 0
    flushes: int = 0
    ops_recorded: int = 0
    ops_eager: int = 0
    plans: int = 0
    cache_hits: int = 0
    kernels_launched: int = 0
    ops_fused: int = 0
    ops_dead: int = 0
    compile_s: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """The counters by name."""
        return asdict(self)


STATS = FusionStats()


def stats() -> FusionStats:
    """A copy of the process's fusion counters (see `FusionStats`)."""
    return FusionStats(**asdict(STATS))


def reset_stats() -> None:
    """Set every fusion counter back to zero (the plan cache is kept)."""
    for name, value in asdict(FusionStats()).items():
        setattr(STATS, name, value)
