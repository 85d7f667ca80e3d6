"""burn-vision."""
