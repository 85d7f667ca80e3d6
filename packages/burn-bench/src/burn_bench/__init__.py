"""Benchmark suites comparing burn with numpy and PyTorch in the same run."""

from importlib import metadata as _metadata

__version__ = _metadata.version("burn-bench")  # the one version: pyproject.toml
