"""asv benchmarks of Burn for Python (see asv.conf.json and packages/burn-bench/README.md)."""
