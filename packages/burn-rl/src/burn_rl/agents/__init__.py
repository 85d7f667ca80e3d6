"""Agents: DQN and PPO."""
