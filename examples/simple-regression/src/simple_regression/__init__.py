"""Example: an MLP regressor trained with `burn.train.Learner` (see `__main__`)."""
