"""The replay buffer of the host-loop arms (NumPy, framework-free)."""

from __future__ import annotations

import numpy as np

CELL_DTYPE = np.int8
"""Stored observations: cell codes 0..3 fit int8, half the memory of the env's int16."""


class ReplayBuffer:
    """A circular buffer of transitions with int8 observations, sampled uniformly.

    Observations are stored as int8 cell codes (the env's int16 values, exactly);
    a sample returns them so, and the networks read the same cells either way.
    """

    def __init__(self, capacity: int, num_cells: int, seed: int) -> None:
        self.capacity = capacity
        self.obs = np.zeros((capacity, num_cells), dtype=CELL_DTYPE)
        self.next_obs = np.zeros((capacity, num_cells), dtype=CELL_DTYPE)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=np.float32)
        self.size = 0
        self._cursor = 0
        self._rng = np.random.default_rng(seed)

    def add(
        self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray, terminated: np.ndarray
    ) -> None:
        """Stores a batch of transitions (overwriting the oldest when full)."""
        count = len(actions)
        index = (self._cursor + np.arange(count)) % self.capacity
        self.obs[index] = obs
        self.next_obs[index] = next_obs
        self.actions[index] = actions
        self.rewards[index] = rewards
        self.terminated[index] = terminated
        self._cursor = int((self._cursor + count) % self.capacity)
        self.size = min(self.capacity, self.size + count)

    def sample(self, batch_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(obs, actions, rewards, next_obs, terminated)`` of ``batch_size`` random transitions."""
        index = self._rng.integers(0, self.size, batch_size)
        return self.obs[index], self.actions[index], self.rewards[index], self.next_obs[index], self.terminated[index]
