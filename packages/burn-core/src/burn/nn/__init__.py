"""Neural-network modules: the Module base, Params, Configs, initializers, layers and losses."""

from burn.nn.config import Config
from burn.nn.module import Buffer, Module
from burn.nn.param import Param

__all__ = ["Buffer", "Config", "Module", "Param"]
