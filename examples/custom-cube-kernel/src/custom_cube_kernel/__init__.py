"""Example: a custom burn-cube kernel on every available runtime."""
