"""Example: a regressor trained on a CSV file through a `DataframeDataset` (see `__main__`)."""
