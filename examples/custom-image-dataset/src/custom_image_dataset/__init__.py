"""Example: a small CNN trained on an image folder through `ImageFolderDataset` (see `__main__`)."""
