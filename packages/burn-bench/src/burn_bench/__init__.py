"""Benchmark suites comparing burn with numpy and PyTorch in the same run."""
