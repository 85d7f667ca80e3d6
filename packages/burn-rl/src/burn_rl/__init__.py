"""Reinforcement learning with burn: environments (gymnasium), transition buffers, policies,
exploration, agents (DQN, PPO), metrics, checkpoints and evaluation."""

from importlib import metadata as _metadata

from burn_rl.agents.dqn import DqnAgent, DqnConfig, dqn_loss, dqn_targets
from burn_rl.agents.ppo import ActorCritic, PpoAgent, PpoConfig, gae, ppo_loss
from burn_rl.async_policy import AsyncPolicy
from burn_rl.buffer import (
    NStepAccumulator,
    PrioritizedReplayBuffer,
    ReplayBuffer,
    Transition,
    TransitionBatch,
)
from burn_rl.environment import Environment, GymEnvironment, StepResult, make
from burn_rl.errors import (
    ActionSpaceError,
    BufferNotReadyError,
    CheckpointError,
    ObservationShapeError,
    RlError,
    UnknownEnvironmentError,
)
from burn_rl.evaluate import EvalResult, evaluate
from burn_rl.exploration import (
    ExponentialSchedule,
    LinearSchedule,
    Schedule,
    boltzmann,
    epsilon_greedy,
)
from burn_rl.metrics import EpisodeTracker, RlLog, RlMetrics
from burn_rl.nets import Mlp
from burn_rl.policy import Policy
from burn_rl.sum_tree import SumTree

__all__ = [
    "ActionSpaceError", "ActorCritic", "AsyncPolicy", "BufferNotReadyError", "CheckpointError",
    "DqnAgent", "DqnConfig", "Environment", "EpisodeTracker", "EvalResult", "ExponentialSchedule",
    "GymEnvironment", "LinearSchedule", "Mlp", "NStepAccumulator", "ObservationShapeError",
    "Policy", "PpoAgent", "PpoConfig", "PrioritizedReplayBuffer", "ReplayBuffer", "RlError",
    "RlLog", "RlMetrics", "Schedule", "StepResult", "SumTree", "Transition", "TransitionBatch",
    "UnknownEnvironmentError", "boltzmann", "dqn_loss", "dqn_targets", "epsilon_greedy",
    "evaluate", "gae", "make", "ppo_loss",
]

__version__ = _metadata.version("burn-rl")  # the one version: pyproject.toml
