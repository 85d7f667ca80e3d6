"""The typed intermediate representation shared by every target."""

from burn_cube.ir.nodes import *  # noqa: F403
