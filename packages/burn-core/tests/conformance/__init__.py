"""Backend conformance suite (see conftest.py)."""
