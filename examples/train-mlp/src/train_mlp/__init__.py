"""Example: a small MLP trained with burn tensors and autodiff."""
