"""System metrics: CPU use and memory use, read with psutil when installed, else from /proc."""

from __future__ import annotations

import os
from typing import Any

from burn.train.metrics.base import BatchInfo, MeanMetric, Metric
from burn.train.step import StepOutput

_UNLOADED: Any = object()
#: psutil (optional dependency, burn-core[train]), imported by the first reading rather than with
#: `burn.train`; None when it is not installed.
psutil: Any = _UNLOADED


def _psutil() -> Any:
    """The psutil module, or None when it is not installed."""
    global psutil
    if psutil is _UNLOADED:
        try:
            import psutil as module
        except ImportError:
            module = None
        psutil = module
    return psutil


def cpu_times() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot (nan, nan if unknown)."""
    ps = _psutil()
    if ps is not None:
        t = ps.cpu_times()
        idle = t.idle + getattr(t, "iowait", 0.0)
        total = sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)
        return total - idle, total
    try:
        with open("/proc/stat") as f:
            fields = [float(v) for v in f.readline().split()[1:]]
    except OSError:
        return float("nan"), float("nan")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    # guest times (fields 8, 9) are already counted in user / nice
    total = sum(fields[:8])
    return total - idle, total


def process_rss() -> float:
    """Resident memory of this process in bytes (nan if unknown)."""
    ps = _psutil()
    if ps is not None:
        return float(ps.Process().memory_info().rss)
    try:
        with open("/proc/self/statm") as f:
            return float(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return float("nan")


class CpuUseMetric(Metric):
    """Machine-wide CPU use in percent since the epoch started."""

    name = "cpu_percent"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._start = cpu_times()

    def update(self, output: StepOutput, info: BatchInfo) -> None:
        """Nothing to do: the value is read from the CPU counters."""

    def value(self) -> float:
        """Busy share of the CPU seconds since `reset`, clamped to [0, 100].

        Returns:
            The percentage, or nan when no CPU time has passed or the counters are unknown. The
            clamp absorbs the rounding of the float counters' differences (busy is total - idle).
        """
        busy, total = cpu_times()
        d_total = total - self._start[1]
        if not d_total > 0:
            return float("nan")
        return min(max(100.0 * (busy - self._start[0]) / d_total, 0.0), 100.0)


class MemoryUseMetric(MeanMetric):
    """Mean resident memory of this process over the epoch's steps, in MiB."""

    name = "memory_mib"

    def update(self, output: StepOutput, info: BatchInfo) -> None:
        self.add(process_rss() / 2**20, 1)
