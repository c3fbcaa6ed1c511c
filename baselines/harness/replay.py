"""The replay buffer of the host loop (NumPy, framework-free)."""

from __future__ import annotations

import numpy as np

from ..cells import CELLS_DTYPE


class ReplayBuffer:
    """A circular buffer of transitions, sampled uniformly; observations are stored as their cells.

    A transition's observation and next observation are their ``(agent, goal)`` cells
    (:mod:`doors_gym_baselines.cells`), what every network reads: four bytes each instead of the grid.
    """

    def __init__(self, capacity: int, seed: int) -> None:
        self.capacity = capacity
        self.cells = np.zeros((capacity, 2), dtype=CELLS_DTYPE)
        self.next_cells = np.zeros((capacity, 2), dtype=CELLS_DTYPE)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=np.float32)
        self.size = 0
        self._cursor = 0
        self._rng = np.random.default_rng(seed)

    def add(
        self,
        cells: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_cells: np.ndarray,
        terminated: np.ndarray,
    ) -> None:
        """Stores a batch of transitions (overwriting the oldest when full)."""
        count = len(actions)
        index = (self._cursor + np.arange(count)) % self.capacity
        self.cells[index] = cells
        self.next_cells[index] = next_cells
        self.actions[index] = actions
        self.rewards[index] = rewards
        self.terminated[index] = terminated
        self._cursor = int((self._cursor + count) % self.capacity)
        self.size = min(self.capacity, self.size + count)

    def sample(self, batch_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(cells, actions, rewards, next_cells, terminated)`` of ``batch_size`` random transitions."""
        index = self._rng.integers(0, self.size, batch_size)
        return (
            self.cells[index],
            self.actions[index],
            self.rewards[index],
            self.next_cells[index],
            self.terminated[index],
        )
