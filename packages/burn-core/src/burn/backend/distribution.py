"""The argument record of the random ops (`float_random`): a distribution and its parameters.

Its own module, re-exported by `burn.backend.protocol`, so that the frontend's random creation
functions can name it without importing the protocol at `import burn`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Distribution:
    """A random distribution: `uniform(low, high)`, `normal(mean, std)` or `bernoulli(prob)`."""

    kind: Literal["uniform", "normal", "bernoulli"]
    a: float = 0.0
    b: float = 1.0
