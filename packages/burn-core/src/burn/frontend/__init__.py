"""The tensor frontend: `Tensor`, creation functions and the free functions on tensors."""

from burn.frontend.creation import (
    arange,
    bernoulli,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    normal,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    seed,
    tensor,
    uniform,
    zeros,
    zeros_like,
)
from burn.frontend.grids import cartesian_grid, diag_mask, tril_mask, triu_mask
from burn.frontend.indexing import one_hot, where
from burn.frontend.layout import cat, stack
from burn.frontend.reduction import logsumexp
from burn.frontend.signal import blackman_window, hamming_window, hann_window
from burn.frontend.tensor import Tensor

__all__ = [
    "Tensor", "arange", "bernoulli", "cat", "empty", "empty_like", "eye", "from_dlpack",
    "from_numpy", "full", "full_like", "logsumexp", "normal", "one_hot", "ones", "ones_like",
    "rand", "randint", "randn", "seed", "stack", "tensor", "uniform", "where", "zeros",
    "zeros_like", "blackman_window", "cartesian_grid", "diag_mask", "hamming_window",
    "hann_window", "tril_mask", "triu_mask",
]
