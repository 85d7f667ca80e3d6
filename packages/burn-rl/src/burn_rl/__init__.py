"""Reinforcement learning with burn: environments (gymnasium), transition buffers, policies,
exploration, agents (DQN, PPO), metrics, checkpoints and evaluation."""
