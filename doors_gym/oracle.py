"""The reference optimum: a shortest-path policy and its figures on every start/goal pair."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from doors_gym import core
from doors_gym.core import AGENT, GOAL, STAY, DoorsParams

UNREACHABLE = np.iinfo(np.int32).max


def path_lengths(params: DoorsParams, goal_cell: int) -> np.ndarray:
    """``(H * W,)`` int32: fewest steps from every cell to ``goal_cell`` (``UNREACHABLE`` on walls).

    Breadth-first search as repeated relaxation over the transition table of
    :func:`doors_gym.core.all_transitions`, so it follows the env's own rules.
    """
    next_cell = core.all_transitions(params)
    lengths = np.full(params.num_cells, UNREACHABLE, dtype=np.int64)
    lengths[goal_cell] = 0
    while True:
        through_neighbour = lengths[next_cell].min(axis=1) + 1
        relaxed = np.minimum(lengths, through_neighbour)
        relaxed[goal_cell] = 0
        if np.array_equal(relaxed, lengths):
            lengths[params.layout.reshape(-1) == core.WALL] = UNREACHABLE  # moves out of a wall cell count otherwise
            return np.minimum(lengths, UNREACHABLE).astype(np.int32)
        lengths = relaxed


def greedy_actions(params: DoorsParams, goal_cell: int) -> np.ndarray:
    """``(H * W,)`` int: the oracle's action in every cell for one goal.

    Among the actions that shorten the path by one step, the one with the
    largest reward (ties: lowest action index); ``stay`` on the goal.
    """
    next_cell = core.all_transitions(params)
    lengths = path_lengths(params, goal_cell).astype(np.int64)
    distances = core.distances_to(params, *divmod(goal_cell, params.width))
    rewards = core.reward(distances[:, None], distances[next_cell])
    on_path = lengths[next_cell] == lengths[:, None] - 1
    scores = np.where(on_path, rewards, -np.inf)
    actions = np.argmax(scores, axis=1)
    actions[~on_path.any(axis=1)] = STAY
    return actions


class OraclePolicy:
    """Shortest-path policy over observations: ``policy(obs) -> action``.

    Works on one observation ``(H * W,)`` or a batch ``(N, H * W)`` (returns an
    int or an ``(N,)`` array). Tables are built per goal cell on first use.
    """

    def __init__(self, params: DoorsParams | None = None) -> None:
        self.params = params or DoorsParams()
        self._tables: dict[int, np.ndarray] = {}

    def _table(self, goal_cell: int) -> np.ndarray:
        table = self._tables.get(goal_cell)
        if table is None:
            table = self._tables[goal_cell] = greedy_actions(self.params, goal_cell)
        return table

    def __call__(self, obs: Any) -> Any:
        obs = np.asarray(obs)
        if obs.shape[-1] != self.params.num_cells:
            raise ValueError(f"obs has shape {obs.shape}: expected (..., {self.params.num_cells})")
        batch = obs.reshape(-1, self.params.num_cells)
        agent = np.argmax(batch == AGENT, axis=1)
        has_goal = (batch == GOAL).any(axis=1)
        goal = np.argmax(batch == GOAL, axis=1)
        actions = np.array(
            [self._table(int(g))[a] if visible else STAY for a, g, visible in zip(agent, goal, has_goal)],
            dtype=np.int64,
        )
        return int(actions[0]) if obs.ndim == 1 else actions.reshape(obs.shape[:-1])


@dataclasses.dataclass(frozen=True)
class OracleFigures:
    """The oracle over every start/goal pair of a layout.

    ``returns``, ``lengths`` and ``success`` are ``(W, W)`` arrays indexed by
    ``[agent_col, goal_col]``.
    """

    returns: np.ndarray
    lengths: np.ndarray
    success: np.ndarray

    @property
    def success_rate(self) -> float:
        """Share of pairs where the goal is reached within the limit."""
        return float(self.success.mean())

    @property
    def mean_step_reward(self) -> float:
        """Total reward over total steps of all pairs (the study's rolling-reward metric): 0.776 by default."""
        return float(self.returns.sum() / self.lengths.sum())

    @property
    def longest_path(self) -> int:
        """The most steps any pair needs."""
        return int(self.lengths.max())


def evaluate_oracle(params: DoorsParams | None = None, max_episode_steps: int | None = None) -> OracleFigures:
    """Runs the oracle in ``Doors-v0`` from every start/goal pair.

    Args:
        params: the layout (default: the default layout).
        max_episode_steps: the time limit (default: ``params.max_episode_steps``,
            60 on the default layout).
    """
    from doors_gym.envs.doors import DoorsEnv

    params = params or DoorsParams()
    limit = max_episode_steps or params.max_episode_steps or core.DEFAULT_MAX_EPISODE_STEPS
    env = DoorsEnv(grid_size=params.grid_size, door_cols=params.door_cols, max_episode_steps=limit)
    policy = OraclePolicy(env.params)
    width = params.width
    returns = np.zeros((width, width))
    lengths = np.zeros((width, width), dtype=np.int64)
    success = np.zeros((width, width), dtype=bool)
    for agent_col in range(width):
        for goal_col in range(width):
            obs, _ = env.reset(options={"agent_pos": (params.height - 1, agent_col), "goal_pos": (0, goal_col)})
            terminated = truncated = False
            while not (terminated or truncated):
                obs, reward, terminated, truncated, _ = env.step(policy(obs))
                returns[agent_col, goal_col] += reward
                lengths[agent_col, goal_col] += 1
            success[agent_col, goal_col] = terminated
    return OracleFigures(returns=returns, lengths=lengths, success=success)
