"""Example: an MLP or a small CNN trained on MNIST with `burn.train.Learner` (see `__main__`)."""
