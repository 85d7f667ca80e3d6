"""Burn's wgan example: a Wasserstein GAN with weight clipping that generates digits."""

from burn_wgan.model import Critic, Generator
from burn_wgan.training import WganConfig, train

__all__ = ["Critic", "Generator", "WganConfig", "train"]
