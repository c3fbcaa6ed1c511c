"""The reference optimum on every layout: breadth-first search on the episode's own walls, in NumPy and JAX.

The search runs on a wall mask, ``(..., H, W)`` bool (True on wall cells), so it serves every level:
fixed doors, doors drawn per episode, any number of walls. Every function over arrays takes ``xp``
(``numpy`` or ``jax.numpy``), as :mod:`doors_gym.core` does; with ``jax.numpy`` they are jittable and
vmappable (the search is a ``lax.while_loop``), so a compiled training loop can score a policy's
optimality gap without leaving the program:

- :func:`distance_field`: fewest steps from every cell to a goal (the search itself);
- :func:`optimal_action`: the oracle's action, a shortest-path step, ties broken by the larger reward
  (SPEC), then by the lower action index;
- :func:`optimal_steps` and :func:`optimality_gap`: a batch of episodes against the optimum;
- :class:`OraclePolicy`: the oracle over NumPy grid observations (which show the walls), any level;
- :func:`evaluate_oracle`: the oracle played in ``Doors-v0`` from every start/goal pair of a fixed layout.

A move into a wall or off the grid leaves the agent in place and every other move is reversible, so
the steps from a cell to the goal are the steps of a search spreading from the goal over open cells.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from doors_gym import core
from doors_gym.core import AGENT, GOAL, MOVES, STAY, WALL, DoorsParams

UNREACHABLE = np.iinfo(np.int32).max
"""The distance of a wall cell, or of a cell no path joins to the goal."""
DISTANCE_DTYPE = np.int32


def _spread(cells: Any, xp: Any) -> Any:
    """``(..., H, W)`` bool: True where a cell's neighbour up, down, left or right (inside the grid) is True."""
    if xp is np:
        out = np.zeros_like(cells)
        out[..., 1:, :] |= cells[..., :-1, :]
        out[..., :-1, :] |= cells[..., 1:, :]
        out[..., :, 1:] |= cells[..., :, :-1]
        out[..., :, :-1] |= cells[..., :, 1:]
        return out
    batch = [(0, 0)] * (cells.ndim - 2)
    from_above = xp.pad(cells[..., :-1, :], batch + [(1, 0), (0, 0)])
    from_below = xp.pad(cells[..., 1:, :], batch + [(0, 1), (0, 0)])
    from_left = xp.pad(cells[..., :, :-1], batch + [(0, 0), (1, 0)])
    from_right = xp.pad(cells[..., :, 1:], batch + [(0, 0), (0, 1)])
    return from_above | from_below | from_left | from_right


def _one_cell(shape: tuple[int, int], row: Any, col: Any, xp: Any) -> Any:
    """``batch + (H, W)`` bool, True at ``(row, col)`` only (``row`` and ``col`` of batch shape)."""
    rows = xp.arange(shape[0])[:, None] == xp.asarray(row)[..., None, None]
    cols = xp.arange(shape[1])[None, :] == xp.asarray(col)[..., None, None]
    return rows & cols


def distance_field(walls: Any, goal_row: Any, goal_col: Any, xp: Any = np) -> Any:
    """Fewest steps from every cell to the goal: breadth-first search on the layout ``walls``.

    Args:
        walls: ``batch + (H, W)`` bool, True on wall cells (a batch of layouts, or one for every goal).
        goal_row: integer array of a batch shape that broadcasts with ``walls``' (``()`` for one goal).
        goal_col: integer array of the same shape, the goal's column.
        xp: ``numpy`` (a Python loop of whole-array shifts, one per step of distance) or ``jax.numpy``
            (a ``lax.while_loop``: jittable and vmappable; under ``vmap`` it runs until every search ends).

    Returns:
        ``broadcast batch + (H, W)`` int32: 0 on the goal, :data:`UNREACHABLE` on walls and on cells no
        path joins to the goal (everywhere, when the goal is a wall).
    """
    walls = xp.asarray(walls, dtype=bool)
    shape = tuple(walls.shape[-2:])
    goal = _one_cell(shape, goal_row, goal_col, xp)
    batch = np.broadcast_shapes(walls.shape[:-2], goal.shape[:-2])
    open_cells = xp.broadcast_to(~walls, batch + shape)
    frontier = xp.broadcast_to(goal, batch + shape) & open_cells
    distances = xp.where(frontier, 0, UNREACHABLE).astype(DISTANCE_DTYPE)

    def expand(carry: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        frontier, distances, step = carry
        frontier = _spread(frontier, xp) & open_cells & (distances == UNREACHABLE)
        return frontier, xp.where(frontier, step + 1, distances).astype(DISTANCE_DTYPE), step + 1

    if xp is np:
        carry = (frontier, distances, 0)
        while carry[0].any():
            carry = expand(carry)
        return carry[1]
    from jax import lax

    carry = (frontier, distances, xp.asarray(0, dtype=DISTANCE_DTYPE))
    return lax.while_loop(lambda carry: carry[0].any(), expand, carry)[1]


def successors(walls: Any, row: Any, col: Any, xp: Any = np) -> tuple[Any, Any]:
    """Where each of the five actions leads from ``(row, col)`` on the layout ``walls`` (SPEC's move rule).

    Args:
        walls: ``batch + (H, W)`` bool, the layout(s).
        row, col: integer arrays of the batch shape (or broadcasting to it), the agent's cell.
        xp: ``numpy`` or ``jax.numpy``.

    Returns:
        ``(rows, cols)``, each ``batch + (5,)`` int32, indexed by action.
    """
    walls = xp.asarray(walls, dtype=bool)
    height, width = walls.shape[-2:]
    row = xp.asarray(row, dtype=core.POSITION_DTYPE)[..., None]
    col = xp.asarray(col, dtype=core.POSITION_DTYPE)[..., None]
    target_row = xp.clip(row + xp.asarray([move[0] for move in MOVES], dtype=core.POSITION_DTYPE), 0, height - 1)
    target_col = xp.clip(col + xp.asarray([move[1] for move in MOVES], dtype=core.POSITION_DTYPE), 0, width - 1)
    blocked = _cells_at(walls, target_row, target_col, xp)
    return xp.where(blocked, row, target_row), xp.where(blocked, col, target_col)


def _cells_at(grids: Any, row: Any, col: Any, xp: Any) -> Any:
    """``grids[..., row, col]`` per batch element: ``grids`` ``batch + (H, W)``, ``row``/``col`` ``batch + (k,)``."""
    height, width = grids.shape[-2:]
    batch = np.broadcast_shapes(grids.shape[:-2], row.shape[:-1])
    flat = xp.broadcast_to(grids.reshape(grids.shape[:-2] + (height * width,)), batch + (height * width,))
    index = xp.broadcast_to(row * width + col, batch + row.shape[-1:])
    return xp.take_along_axis(flat, index, axis=-1)


def optimal_action(
    walls: Any, distances: Any, agent_row: Any, agent_col: Any, goal_row: Any, goal_col: Any, xp: Any = np
) -> Any:
    """The oracle's action: a step along a shortest path, the largest reward among those (then the lowest index).

    Args:
        walls: ``batch + (H, W)`` bool, the layout(s).
        distances: ``batch + (H, W)`` int32, :func:`distance_field` of the same layout(s) and goal(s).
        agent_row, agent_col, goal_row, goal_col: integer arrays of the batch shape.
        xp: ``numpy`` or ``jax.numpy``.

    Returns:
        ``batch`` int32 actions; ``STAY`` on the goal and where no path joins the agent to the goal.
    """
    rows, cols = successors(walls, agent_row, agent_col, xp)
    here = _cells_at(distances, xp.asarray(agent_row)[..., None], xp.asarray(agent_col)[..., None], xp)
    after = _cells_at(distances, rows, cols, xp)
    on_path = (after == here - 1) & (here != UNREACHABLE)
    goal_row, goal_col = xp.asarray(goal_row)[..., None], xp.asarray(goal_col)[..., None]
    before = core.distance(xp.asarray(agent_row)[..., None], xp.asarray(agent_col)[..., None], goal_row, goal_col, xp)
    rewards = core.reward(before, core.distance(rows, cols, goal_row, goal_col, xp))
    best = xp.argmax(xp.where(on_path, rewards, -np.inf), axis=-1)
    return xp.where(on_path.any(axis=-1), best, STAY).astype(core.POSITION_DTYPE)


def optimal_steps(walls: Any, agent_row: Any, agent_col: Any, goal_row: Any, goal_col: Any, xp: Any = np) -> Any:
    """Fewest steps from the agent to the goal of each episode: ``batch`` int32 (:data:`UNREACHABLE` if none).

    ``walls`` is ``batch + (H, W)`` bool (or one ``(H, W)`` layout for all); the positions are integer
    arrays of the batch shape. Jittable and vmappable with ``xp=jax.numpy``.
    """
    distances = distance_field(walls, goal_row, goal_col, xp)
    return _cells_at(distances, xp.asarray(agent_row)[..., None], xp.asarray(agent_col)[..., None], xp)[..., 0]


def optimality_gap(optimal: Any, steps_taken: Any, reached: Any, xp: Any = np) -> Any:
    """``1 - SPL`` per episode (success weighted by path length): 0 on a shortest path, 1 when the goal is missed.

    Args:
        optimal: the episodes' :func:`optimal_steps` from their starts (int).
        steps_taken: the steps the policy took (int).
        reached: bool, whether it reached the goal.
        xp: ``numpy`` or ``jax.numpy``.

    Returns:
        float32 in ``[0, 1]``, ``1 - reached * optimal / max(steps_taken, optimal)`` (0 when the agent
        starts on the goal and stays there).
    """
    optimal = xp.asarray(optimal).astype(np.float32)
    longest = xp.maximum(xp.asarray(steps_taken).astype(np.float32), optimal)
    efficiency = xp.where(longest > 0, optimal / xp.maximum(longest, 1.0), 1.0)
    return (1.0 - xp.where(xp.asarray(reached), efficiency, 0.0)).astype(np.float32)


def layout_walls(params: DoorsParams) -> np.ndarray:
    """``(H, W)`` bool: the wall cells of a fixed layout."""
    return params.layout == WALL


def path_lengths(params: DoorsParams, goal_cell: int) -> np.ndarray:
    """``(H * W,)`` int32: fewest steps from every cell to ``goal_cell`` (``UNREACHABLE`` on walls), fixed layout."""
    row, col = divmod(int(goal_cell), params.width)
    return distance_field(layout_walls(params), row, col).reshape(-1)


def greedy_actions(params: DoorsParams, goal_cell: int) -> np.ndarray:
    """``(H * W,)`` int: the oracle's action in every cell of a fixed layout for one goal (``stay`` on the goal)."""
    walls = layout_walls(params)
    row, col = divmod(int(goal_cell), params.width)
    distances = distance_field(walls, row, col)
    cell_row, cell_col = np.divmod(np.arange(params.num_cells), params.width)
    return optimal_action(walls, distances, cell_row, cell_col, row, col).astype(np.int64)


class OraclePolicy:
    """The shortest-path policy over grid observations, on every level: ``policy(obs) -> action``.

    The walls, the agent and the goal are read from the observation (``obs_mode="grid"``), so the
    episode's own doors are used wherever they were drawn. Takes one observation ``(H * W,)`` or a
    batch ``(..., H * W)`` and returns an int or an int64 array of the batch shape; ``stay`` where no
    goal is visible (the agent covers it). Distance fields are kept per (layout, goal), the
    :data:`CACHE_SIZE` most recent.

    Raises:
        ValueError: when the observation's last axis is not ``H * W`` of ``params``.
    """

    CACHE_SIZE = 1024

    def __init__(self, params: DoorsParams | None = None) -> None:
        self.params = params or DoorsParams()
        self._fields: dict[bytes, np.ndarray] = {}

    def _distances(self, walls: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """``(N, H, W)`` distance fields of ``N`` flat wall masks and goal cells, searching only new ones."""
        keys = [key.tobytes() for key in np.concatenate([np.packbits(walls, axis=1), goal[:, None].view(np.uint8)], 1)]
        missing = {key: index for index, key in enumerate(keys) if key not in self._fields}
        if missing:
            picked = np.fromiter(missing.values(), dtype=np.intp)
            grids = walls[picked].reshape((-1, *self.params.grid_size))
            fields = distance_field(grids, *np.divmod(goal[picked], self.params.width))
            while len(self._fields) + len(missing) > self.CACHE_SIZE and self._fields:
                del self._fields[next(iter(self._fields))]
            self._fields.update(zip(missing, fields))
        return np.stack([self._fields[key] for key in keys])

    def __call__(self, obs: Any) -> Any:
        obs = np.asarray(obs)
        if obs.shape[-1] != self.params.num_cells:
            raise ValueError(f"obs has shape {obs.shape}: expected (..., {self.params.num_cells})")
        batch = obs.reshape(-1, self.params.num_cells)
        walls = batch == WALL
        agent = np.argmax(batch == AGENT, axis=1)
        goal = np.argmax(batch == GOAL, axis=1).astype(np.int64)
        distances = self._distances(walls, goal)
        grids = walls.reshape(distances.shape)
        width = self.params.width
        actions = optimal_action(grids, distances, *np.divmod(agent, width), *np.divmod(goal, width))
        actions = np.where((batch == GOAL).any(axis=1), actions, STAY).astype(np.int64)
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
    """Runs the oracle in ``Doors-v0`` from every start/goal pair of a fixed layout.

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
