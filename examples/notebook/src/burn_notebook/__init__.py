"""Burn's notebook example: `tour.ipynb`, and a headless runner for it."""
