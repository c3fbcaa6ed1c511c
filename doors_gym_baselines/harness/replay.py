"""The replay buffer of the host loop (NumPy, framework-free), and the layout table both replay buffers share.

A transition never crosses an episode's end (next-step autoreset on the host, same-step autoreset in the scan),
so its observation and next observation have the same doors: the doors are an episode's, not a transition's.
Both buffers store per transition an int32 index into a small table of layouts (each wall's door columns, int16,
one row per episode), at every level, so the bytes per stored transition are the same at every level; where the
doors are fixed the table is one empty row and every index is 0. Rows are taken per env: env ``e``'s ``k``-th
layout goes to row ``e * M + k % M`` (:func:`layouts_per_env` gives ``M``), taken when its door columns differ
from its current row's (two episodes in a row with the same doors share one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from doors_gym.core import DoorsParams

from ..learners.cells import CELLS_DTYPE

LAYOUT_DTYPE = np.int32
"""A stored transition's row in the layout table."""
NO_LAYOUT = -1
"""The door column of a row no layout was written to yet (a door column is ``>= 0``)."""


def learned_reward(reward: Any, step_cost: float) -> Any:
    """The reward a learner stores for ``reward`` (NumPy or JAX arrays): less the training-only ``step_cost`` (the
    hyperparameter; 0: the env's own). Every loop tracks the env's reward; only the TD target sees this one."""
    return reward - step_cost if step_cost else reward


def min_episode_steps(params: DoorsParams) -> int:
    """The fewest steps an episode of ``params`` lasts: ``min(H - 1, max_episode_steps)``.

    The agent starts on the bottom row and the goal is on the top row, a step moves one row at most, and the time
    limit (None: none) may end an episode sooner.
    """
    reach = params.height - 1
    return reach if params.max_episode_steps is None else min(reach, params.max_episode_steps)


def layouts_per_env(capacity: int, num_envs: int, min_episode_steps: int) -> int:
    """``M``, the layout table's rows per env: ``ceil(ceil(capacity / num_envs) / min_episode_steps) + 2``.

    A row is written again only after ``M - 1`` more layouts of its env, each at least ``min_episode_steps``
    transitions long, so every transition of the row's episodes has been overwritten by then: the ring holds
    the last ``capacity`` transitions, and an env adds at least its share of them.

    Raises:
        ValueError: ``capacity``, ``num_envs`` or ``min_episode_steps`` below 1, naming it.
    """
    for name, value in (("capacity", capacity), ("num_envs", num_envs), ("min_episode_steps", min_episode_steps)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}={value!r} is invalid: expected an integer >= 1")
    per_env = -(-capacity // num_envs)
    return -(-per_env // min_episode_steps) + 2


class ReplayBuffer:
    """A circular buffer of transitions, sampled uniformly; observations are stored as their cells.

    A transition's observation and next observation are their ``(agent, goal)`` cells
    (:mod:`doors_gym_baselines.learners.cells`), what every network reads: four bytes each instead of the grid.
    Where the input carries door columns (``doors`` of them per observation) they are the episode's layout,
    kept once per episode in the layout table (see the module's docstring): ``num_envs * M`` rows of ``doors``
    int16 (:meth:`layout_bytes`; ``M`` from ``capacity``, ``num_envs`` and ``min_episode_steps``, which
    :func:`min_episode_steps` gives for a layout). Per transition: the cells (int16, 4 B each side), the
    action (int64), reward and termination flag (float32) and the layout's row (int32), 28 B at every level
    (:meth:`bytes_per_transition`). The defaults ``num_envs=1, min_episode_steps=1`` are safe for any
    caller, with the largest table.

    Raises:
        ValueError: ``capacity``, ``num_envs`` or ``min_episode_steps`` below 1, naming it.
    """

    def __init__(
        self,
        capacity: int,
        seed: int,
        doors: int = 0,
        *,
        num_envs: int = 1,
        min_episode_steps: int = 1,
        n_step: int = 1,
        gamma: float = 1.0,
    ) -> None:
        self.layouts_per_env = layouts_per_env(capacity, num_envs, min_episode_steps)
        self.capacity = capacity
        self.num_envs = num_envs
        self.cells = np.zeros((capacity, 2), dtype=CELLS_DTYPE)
        self.next_cells = np.zeros((capacity, 2), dtype=CELLS_DTYPE)
        self.layout = np.zeros(capacity, dtype=LAYOUT_DTYPE)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=np.float32)
        rows = num_envs * self.layouts_per_env if doors else 1
        self.layouts = np.full((rows, doors), NO_LAYOUT, dtype=CELLS_DTYPE)
        self._layouts_taken = np.zeros(num_envs, dtype=np.int64)
        self.size = 0
        self._cursor = 0
        self._rng = np.random.default_rng(seed)
        self.n_step, self.gamma = n_step, np.float32(gamma)
        if n_step > 1:  # each slot's next transition of its env and episode (-1: none, or not written yet)
            self.next_slot = np.full(capacity, -1, dtype=np.int32)
            self._last_slot = np.full(num_envs, -1, dtype=np.int64)

    def add(
        self,
        cells: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_cells: np.ndarray,
        terminated: np.ndarray,
        envs: np.ndarray | None = None,
        ended: np.ndarray | None = None,
    ) -> None:
        """Stores a batch of transitions (overwriting the oldest when full).

        ``cells`` and ``next_cells`` are ``(count, 2 + doors)``, the door columns once per episode (a
        transition's next observation has its observation's doors). ``envs``: the env each transition comes
        from, distinct, in ``[0, num_envs)`` (default ``0 .. count - 1``); read only where the buffer holds doors
        or follows returns over several steps. ``ended``: where the transition ended its episode (terminated or
        truncated), read only with ``n_step > 1``: a multi-step return follows an env's transitions until one
        ended.

        Raises:
            ValueError: ``envs`` out of range or repeated, where the buffer holds doors.
        """
        count = len(actions)
        index = (self._cursor + np.arange(count)) % self.capacity
        self.cells[index] = cells[:, :2]
        self.next_cells[index] = next_cells[:, :2]
        self.layout[index] = self._layout_rows(cells[:, 2:], envs)
        self.actions[index] = actions
        self.rewards[index] = rewards
        self.terminated[index] = terminated
        if self.n_step > 1:
            self._link(index, np.arange(count) if envs is None else np.asarray(envs), np.asarray(ended, dtype=bool))
        self._cursor = int((self._cursor + count) % self.capacity)
        self.size = min(self.capacity, self.size + count)

    def _layout_rows(self, doors: np.ndarray, envs: np.ndarray | None) -> np.ndarray | int:
        """The table rows of ``doors`` ``(count, doors)`` from ``envs``, a new row per env whose layout changed."""
        if not self.layouts.shape[1]:
            return 0
        envs = np.arange(len(doors)) if envs is None else np.asarray(envs)
        if len(envs) and (envs.min() < 0 or envs.max() >= self.num_envs or len(np.unique(envs)) < len(envs)):
            raise ValueError(f"envs={envs.tolist()!r} is invalid: expected distinct envs in [0, {self.num_envs})")
        first = envs * self.layouts_per_env
        current = first + self._layouts_taken[envs] % self.layouts_per_env
        self._layouts_taken[envs] += np.any(self.layouts[current] != doors, axis=1)
        rows = first + self._layouts_taken[envs] % self.layouts_per_env
        self.layouts[rows] = doors
        return rows

    def _link(self, index: np.ndarray, envs: np.ndarray, ended: np.ndarray) -> None:
        """Makes the slots ``index`` the next transitions of their envs' last ones, and the last ones of their envs
        (none where their episode ended). A slot written is newer than every slot linked to it, so a link never
        outlives the slot it points to."""
        self.next_slot[index] = -1
        previous = self._last_slot[envs]
        going = previous >= 0
        self.next_slot[previous[going]] = index[going]
        self._last_slot[envs] = np.where(ended, -1, index)

    def sample(self, batch_size: int) -> tuple[np.ndarray, ...]:
        """``(cells, actions, rewards, next_cells, terminated)`` of ``batch_size`` random transitions: cells
        ``(batch_size, 2 + doors)`` int16 (the door columns from the layout table), actions int64, the rest
        float32 ``(batch_size,)``.

        With ``n_step > 1`` each transition is followed through its env's next ones for up to ``n_step`` steps,
        stopping at its episode's end or at the newest: ``rewards`` holds ``sum(gamma ** k * reward_k)`` over the
        ``m`` steps taken, ``next_cells`` and ``terminated`` are the last step's, and ``discounts`` (``gamma **
        m``, float32) follows as a sixth array (the fully jitted arm's ``sample_multi_step`` computes the same).
        """
        index = self._rng.integers(0, self.size, batch_size)
        if self.n_step > 1:
            return self.multi_step(index)
        cells, next_cells = self.cells[index], self.next_cells[index]
        if self.layouts.shape[1]:
            doors = self.layouts[self.layout[index]]
            cells, next_cells = np.concatenate([cells, doors], axis=1), np.concatenate([next_cells, doors], axis=1)
        return (cells, self.actions[index], self.rewards[index], next_cells, self.terminated[index])

    def multi_step(self, index: np.ndarray) -> tuple[np.ndarray, ...]:
        """:meth:`sample`'s multi-step batch (``n_step > 1``) at the slots ``index`` (int ``(batch,)``)."""
        returns = self.rewards[index].copy()
        discounts = np.full(index.size, self.gamma, dtype=np.float32)
        last = index.copy()
        for _ in range(self.n_step - 1):
            following = self.next_slot[last]
            take = following >= 0
            returns[take] += discounts[take] * self.rewards[following[take]]
            discounts[take] *= self.gamma
            last[take] = following[take]
        cells, next_cells = self.cells[index], self.next_cells[last]
        if self.layouts.shape[1]:
            doors = self.layouts[self.layout[index]]
            cells, next_cells = np.concatenate([cells, doors], axis=1), np.concatenate([next_cells, doors], axis=1)
        return cells, self.actions[index], returns, next_cells, self.terminated[last], discounts

    def bytes_per_transition(self) -> int:
        """Bytes one stored transition takes (every per-transition array's row; 28 at every level, 32 with
        multi-step returns, whose link to the next transition is an int32)."""
        arrays = (self.cells, self.next_cells, self.layout, self.actions, self.rewards, self.terminated)
        links = (self.next_slot,) if self.n_step > 1 else ()
        return sum(array[0].nbytes if array.ndim > 1 else array.itemsize for array in (*arrays, *links))

    def layout_bytes(self) -> int:
        """Bytes of the layout table (0 where the doors are fixed), besides the transitions."""
        return self.layouts.nbytes
