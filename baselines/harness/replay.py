"""The replay buffer of the host loop (NumPy, framework-free)."""

from __future__ import annotations

import numpy as np

from ..cells import CELLS_DTYPE


class ReplayBuffer:
    """A circular buffer of transitions, sampled uniformly; observations are stored as their cells.

    A transition's observation and next observation are their ``(agent, goal)`` cells
    (:mod:`doors_gym_baselines.cells`), what every network reads: four bytes each instead of the grid.
    Where the input carries door columns (``doors`` of them per observation), they are stored once per
    transition: a transition never crosses an episode's end (next-step autoreset), so its next
    observation has the same doors. Bytes per transition (:meth:`bytes_per_transition`) never depend on
    ``H * W``.
    """

    def __init__(self, capacity: int, seed: int, doors: int = 0) -> None:
        self.capacity = capacity
        self.cells = np.zeros((capacity, 2), dtype=CELLS_DTYPE)
        self.next_cells = np.zeros((capacity, 2), dtype=CELLS_DTYPE)
        self.doors = np.zeros((capacity, doors), dtype=CELLS_DTYPE)
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
        self.cells[index] = cells[:, :2]
        self.next_cells[index] = next_cells[:, :2]
        self.doors[index] = cells[:, 2:]
        self.actions[index] = actions
        self.rewards[index] = rewards
        self.terminated[index] = terminated
        self._cursor = int((self._cursor + count) % self.capacity)
        self.size = min(self.capacity, self.size + count)

    def sample(self, batch_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(cells, actions, rewards, next_cells, terminated)`` of ``batch_size`` random transitions (cells with
        their door columns where the buffer holds doors)."""
        index = self._rng.integers(0, self.size, batch_size)
        cells, next_cells = self.cells[index], self.next_cells[index]
        if self.doors.shape[1]:
            doors = self.doors[index]
            cells, next_cells = np.concatenate([cells, doors], axis=1), np.concatenate([next_cells, doors], axis=1)
        return (cells, self.actions[index], self.rewards[index], next_cells, self.terminated[index])

    def bytes_per_transition(self) -> int:
        """Bytes one stored transition takes (every array's row)."""
        arrays = (self.cells, self.next_cells, self.doors, self.actions, self.rewards, self.terminated)
        return sum(array[0].nbytes if array.ndim > 1 else array.itemsize for array in arrays)
