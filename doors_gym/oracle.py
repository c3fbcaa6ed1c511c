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
import functools
import itertools
import math
from typing import Any

import numpy as np

from doors_gym import core
from doors_gym.core import AGENT, GOAL, MOVES, STAY, WALL, DoorsParams, DoorsState

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


def _cells_at(grids: Any, row: Any, col: Any, xp: Any) -> Any:
    """``grids[..., row, col]`` per batch element: ``grids`` ``batch + (H, W)``, ``row``/``col`` ``batch + (k,)``."""
    height, width = grids.shape[-2:]
    batch = np.broadcast_shapes(grids.shape[:-2], row.shape[:-1])
    flat = xp.broadcast_to(grids.reshape(grids.shape[:-2] + (height * width,)), batch + (height * width,))
    index = xp.broadcast_to(row * width + col, batch + row.shape[-1:])
    return xp.take_along_axis(flat, index, axis=-1)


def optimal_action(distances: Any, agent_row: Any, agent_col: Any, goal_row: Any, goal_col: Any, xp: Any = np) -> Any:
    """The oracle's action: a step along a shortest path, the largest reward among those (then the lowest index).

    A move into a wall or off the grid never shortens the path (a wall's distance is :data:`UNREACHABLE`,
    and staying keeps the distance), so only the cell each action aims at is read: no move rule is needed.

    Args:
        distances: ``batch + (H, W)`` int32, the :func:`distance_field` of each episode's layout and goal.
        agent_row: integer array of the batch shape, the agent's row.
        agent_col: the agent's column, likewise.
        goal_row: the goal's row, likewise.
        goal_col: the goal's column, likewise.
        xp: ``numpy`` or ``jax.numpy``.

    Returns:
        ``batch`` int32 actions; ``STAY`` on the goal and where no path joins the agent to the goal.
    """
    height, width = distances.shape[-2:]
    row = xp.asarray(agent_row).astype(core.POSITION_DTYPE)[..., None]
    col = xp.asarray(agent_col).astype(core.POSITION_DTYPE)[..., None]
    rows = xp.clip(row + xp.asarray([move[0] for move in MOVES], dtype=core.POSITION_DTYPE), 0, height - 1)
    cols = xp.clip(col + xp.asarray([move[1] for move in MOVES], dtype=core.POSITION_DTYPE), 0, width - 1)
    here = _cells_at(distances, row, col, xp)
    on_path = (_cells_at(distances, rows, cols, xp) == here - 1) & (here != UNREACHABLE)
    goal_row = xp.asarray(goal_row).astype(core.POSITION_DTYPE)[..., None]
    goal_col = xp.asarray(goal_col).astype(core.POSITION_DTYPE)[..., None]
    before = core.distance(row, col, goal_row, goal_col, xp)
    rewards = core.reward(before, core.distance(rows, cols, goal_row, goal_col, xp))
    best = xp.argmax(xp.where(on_path, rewards, -np.inf), axis=-1)
    return xp.where(on_path.any(axis=-1), best, STAY).astype(core.POSITION_DTYPE)


def episode_walls(params: DoorsParams, state: DoorsState, xp: Any = np) -> Any:
    """The walls of each episode of ``state``, ``batch + (H, W)`` bool: its own doors where they are random."""
    return core.wall_mask(params, core.episode_doors(params, state, xp), xp)


def state_distances(params: DoorsParams, state: DoorsState, xp: Any = np) -> Any:
    """``batch + (H, W)`` int32: each episode's :func:`distance_field` to its goal on its own layout."""
    return distance_field(episode_walls(params, state, xp), state.goal_row, state.goal_col, xp)


def optimal_steps(params: DoorsParams, state: DoorsState, xp: Any = np) -> Any:
    """Fewest steps left from each episode's agent to its goal on its own layout: ``batch`` int32.

    Jittable and vmappable with ``xp=jax.numpy`` (``params`` static): on the start states of a batch of
    evaluation episodes, it is what a greedy policy's steps are compared with (:func:`optimality_gap`).
    """
    row = xp.asarray(state.agent_row).astype(core.POSITION_DTYPE)[..., None]
    col = xp.asarray(state.agent_col).astype(core.POSITION_DTYPE)[..., None]
    return _cells_at(state_distances(params, state, xp), row, col, xp)[..., 0]


def oracle_action(params: DoorsParams, state: DoorsState, xp: Any = np) -> Any:
    """The oracle's action in each episode of ``state`` (:func:`optimal_action` on its own layout), ``batch`` int32.

    Jittable and vmappable with ``xp=jax.numpy`` (``params`` static).
    """
    distances = state_distances(params, state, xp)
    return optimal_action(distances, state.agent_row, state.agent_col, state.goal_row, state.goal_col, xp)


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


def path_lengths(params: DoorsParams, goal_cell: int) -> np.ndarray:
    """``(H * W,)`` int32: fewest steps from every cell to ``goal_cell`` (``UNREACHABLE`` on walls), fixed layout."""
    row, col = divmod(int(goal_cell), params.width)
    return distance_field(core.wall_mask(params), row, col).reshape(-1)


def greedy_actions(params: DoorsParams, goal_cell: int) -> np.ndarray:
    """``(H * W,)`` int: the oracle's action in every cell of a fixed layout for one goal (``stay`` on the goal)."""
    row, col = divmod(int(goal_cell), params.width)
    distances = distance_field(core.wall_mask(params), row, col)
    cell_row, cell_col = np.divmod(np.arange(params.num_cells), params.width)
    return optimal_action(distances, cell_row, cell_col, row, col).astype(np.int64)


class OraclePolicy:
    """The shortest-path policy over observations, on every level: ``policy(obs) -> action``.

    The walls, the agent and the goal are read from the observation, so each episode's own doors are
    used wherever they were drawn. Observations are those of ``params.obs_mode``: ``grid`` (one
    ``(H * W,)`` or a batch ``(..., H * W)``), ``flat`` (``(..., H * W * 4)``) or ``onehot``
    (``(..., H, W, 4)``). Returns an int for one observation, else an int64 array of the batch shape;
    ``stay`` where no goal is visible (the agent covers it). Distance fields are kept per (layout,
    goal), the :attr:`CACHE_SIZE` most recent.

    Raises:
        ValueError: for another ``obs_mode`` (``rgb``, ``coords``) or an observation of the wrong shape.
    """

    CACHE_SIZE = 1024

    def __init__(self, params: DoorsParams | None = None) -> None:
        self.params = params or DoorsParams()
        if self.params.obs_mode not in _CELL_SHAPES:
            raise ValueError(
                f"obs_mode={self.params.obs_mode!r} is not supported by OraclePolicy: "
                f"expected one of {list(_CELL_SHAPES)}"
            )
        self._fields: dict[bytes, np.ndarray] = {}

    def _codes(self, obs: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
        """``(N, H * W)`` cell codes of a batch of observations, and the batch shape."""
        cell_shape = _CELL_SHAPES[self.params.obs_mode](self.params)
        if obs.shape[obs.ndim - len(cell_shape) :] != cell_shape:
            raise ValueError(f"obs has shape {obs.shape}: expected (..., {', '.join(map(str, cell_shape))})")
        batch_shape = obs.shape[: obs.ndim - len(cell_shape)]
        if self.params.obs_mode == "grid":
            return obs.reshape(-1, self.params.num_cells), batch_shape
        return np.argmax(obs.reshape(-1, self.params.num_cells, core.NUM_CELL_TYPES), axis=-1), batch_shape

    def _distances(self, walls: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """``(N, H, W)`` distance fields of ``N`` flat wall masks and goal cells, searching only new ones."""
        keys = [key.tobytes() for key in np.concatenate([np.packbits(walls, axis=1), goal[:, None].view(np.uint8)], 1)]
        found = {key: self._fields[key] for key in keys if key in self._fields}
        missing = {key: index for index, key in enumerate(keys) if key not in found}
        if missing:
            picked = np.fromiter(missing.values(), dtype=np.intp)
            grids = walls[picked].reshape((-1, *self.params.grid_size))
            found.update(zip(missing, distance_field(grids, *np.divmod(goal[picked], self.params.width))))
            for key in missing:  # the newest last; the oldest leave first
                self._fields[key] = found[key]
            while len(self._fields) > self.CACHE_SIZE:
                del self._fields[next(iter(self._fields))]
        return np.stack([found[key] for key in keys])

    def __call__(self, obs: Any) -> Any:
        codes, batch_shape = self._codes(np.asarray(obs))
        agent = np.argmax(codes == AGENT, axis=1)
        goal = np.argmax(codes == GOAL, axis=1).astype(np.int64)
        distances = self._distances(codes == WALL, goal)
        width = self.params.width
        actions = optimal_action(distances, *np.divmod(agent, width), *np.divmod(goal, width))
        actions = np.where((codes == GOAL).any(axis=1), actions, STAY).astype(np.int64)
        return int(actions[0]) if not batch_shape else actions.reshape(batch_shape)


_CELL_SHAPES = {
    "grid": lambda params: (params.num_cells,),
    "flat": lambda params: (params.num_cells * core.NUM_CELL_TYPES,),
    "onehot": lambda params: (*params.grid_size, core.NUM_CELL_TYPES),
}
"""The observation modes :class:`OraclePolicy` reads, and the shape of one observation in each."""


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
    """Plays the oracle in ``Doors-v0`` from every start/goal pair of a layout with fixed doors.

    Args:
        params: the layout (default: the default layout).
        max_episode_steps: the time limit (default: ``params.max_episode_steps``, else the
            layout's default, 60 on the default layout).

    Raises:
        ValueError: with random doors (:func:`level_figures` estimates those).
    """
    from doors_gym.envs.doors import DoorsEnv

    params = params or DoorsParams()
    if params.random_doors:
        raise ValueError("doors='random' has no single layout to play every pair on: use oracle.level_figures")
    limit = max_episode_steps or params.max_episode_steps or core.default_time_limit(params.grid_size, params.n_walls)
    env = DoorsEnv(
        grid_size=params.grid_size, door_cols=params.door_cols, n_walls=params.n_walls, max_episode_steps=limit
    )
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


SOLVED_SUCCESS = 0.99
"""SPEC's "Solved": greedy success at least this share of episodes."""
SOLVED_REWARD_SHARE = 0.966
"""SPEC's "Solved": rolling reward at least this share of the level's optimal mean step reward."""
Z_95 = 1.959964
"""The two-sided 95 % quantile of the normal distribution."""


def pair_lengths(walls: Any) -> np.ndarray:
    """Fewest steps from every start to every goal: ``batch + (W, W)`` int32 indexed ``[agent_col, goal_col]``.

    Starts are the bottom row's cells and goals the top row's (SPEC's episode start); ``walls`` is
    ``batch + (H, W)`` bool. The searches from all ``W`` goals of a layout run at once as bits of
    64-bit words (a cell holds the set of goals whose search has reached it), so a step of all of
    them costs one shift of ``H * W`` words per 64 goals; they stop once every start is reached.
    :data:`UNREACHABLE` where a start cannot reach a goal.
    """
    walls = np.asarray(walls, dtype=bool)
    batch, (height, width) = walls.shape[:-2], walls.shape[-2:]
    words = -(-width // 64)
    goal = np.arange(width)
    frontier = np.zeros(batch + (words, height, width), dtype=np.uint64)
    frontier[..., goal // 64, 0, goal] = np.left_shift(np.uint64(1), (goal % 64).astype(np.uint64))
    open_cells = np.where(walls, np.uint64(0), ~np.uint64(0))[..., None, :, :]
    frontier &= open_cells
    reached = frontier.copy()
    lengths = np.full(batch + (width, words * 64), UNREACHABLE, dtype=DISTANCE_DTYPE)
    bits = np.arange(64, dtype=np.uint64)
    step = 0
    while True:
        arrived = (frontier[..., -1, :, None] >> bits) & np.uint64(1)  # batch + (words, agent, bit)
        arrived = np.moveaxis(arrived, -3, -2).reshape(batch + (width, words * 64)).astype(bool)
        lengths[arrived] = step
        if not frontier.any() or not (lengths[..., :width] == UNREACHABLE).any():
            return lengths[..., :width]
        frontier = _spread(frontier, np) & open_cells & ~reached
        reached |= frontier
        step += 1


def start_distances(height: int, width: int) -> np.ndarray:
    """``(W, W)`` float32: the distance of every start to every goal, ``[agent_col, goal_col]`` (an oracle's return)."""
    agent_col, goal_col = np.meshgrid(np.arange(width), np.arange(width), indexing="ij")
    return core.distance(np.full_like(agent_col, height - 1), agent_col, np.zeros_like(goal_col), goal_col)


@dataclasses.dataclass(frozen=True)
class LayoutSums:
    """Per layout, over its ``W * W`` start/goal pairs: the oracle's summed return and steps, pairs reached, longest.

    Each field is a ``(layouts,)`` array; a pair counts as reached when its shortest path fits the time limit.
    """

    returns: np.ndarray
    steps: np.ndarray
    reached: np.ndarray
    longest: np.ndarray


def layout_sums(walls: np.ndarray, max_episode_steps: int | None, chunk_cells: int = 2**24) -> LayoutSums:
    """The oracle's :class:`LayoutSums` on ``(layouts, H, W)`` wall masks, searched ``chunk_cells`` cells at a time.

    Raises:
        ValueError: when some pair needs more steps than ``max_episode_steps`` (its return would depend on
            where the oracle stands at the limit; SPEC's default limits always leave room).
    """
    walls = np.asarray(walls, dtype=bool)
    count, height, width = walls.shape
    chunk = max(1, chunk_cells // (height * width * width))
    lengths = np.concatenate([pair_lengths(walls[start : start + chunk]) for start in range(0, count, chunk)])
    longest = lengths.reshape(count, -1).max(axis=1)
    if (longest == UNREACHABLE).any():
        raise ValueError("walls cut some start off its goal: every start must reach every goal (SPEC)")
    if max_episode_steps is not None and longest.max() > max_episode_steps:
        raise ValueError(
            f"max_episode_steps={max_episode_steps} is below the longest shortest path, {longest.max()} steps: "
            "the figures need every pair reached (leave the level's default limit)"
        )
    returns = np.full(count, start_distances(height, width).astype(np.float64).sum())
    steps = lengths.reshape(count, -1).sum(axis=1, dtype=np.int64)
    return LayoutSums(returns=returns, steps=steps, reached=np.full(count, width * width), longest=longest)


@dataclasses.dataclass(frozen=True)
class LevelFigures:
    """The oracle's figures at a level: exact where ``exact``, else estimates over ``layouts`` sampled layouts.

    Attributes:
        mean_step_reward: total return over total steps of all episodes (the rolling-reward metric).
        mean_step_reward_ci: its 95 % confidence interval (both ends the figure itself when exact).
        success_rate: share of episodes that reach the goal within the time limit.
        longest_path: the most steps any pair needs (over the sampled layouts when not exact).
        layouts: how many layouts the figures cover (1 for fixed doors).
        exact: whether every layout (each equally likely) and every start/goal pair was counted.
        seed: the seed the layouts were drawn with (None when exact).
    """

    mean_step_reward: float
    mean_step_reward_ci: tuple[float, float]
    success_rate: float
    longest_path: int
    layouts: int
    exact: bool
    seed: int | None = None

    @property
    def solved_rolling_reward(self) -> float:
        """SPEC's "Solved" bar for the rolling reward: 96.6 % of :attr:`mean_step_reward`, to 3 decimals (0.75 on
        ``Doors-v0``)."""
        return round(SOLVED_REWARD_SHARE * self.mean_step_reward, 3)

    @classmethod
    def from_sums(cls, sums: LayoutSums, exact: bool, seed: int | None = None) -> LevelFigures:
        """Figures from per-layout sums: a ratio of totals, its CI by the delta method over layouts."""
        count = len(sums.steps)
        ratio = float(sums.returns.sum() / sums.steps.sum())
        if exact or count < 2:
            interval = (ratio, ratio)
        else:
            residual = sums.returns - ratio * sums.steps
            half = Z_95 * float(np.std(residual, ddof=1)) / np.sqrt(count) / float(sums.steps.mean())
            interval = (ratio - float(half), ratio + float(half))
        success = float(sums.reached.sum() / (count * np.max(sums.reached)))
        return cls(ratio, interval, success, int(sums.longest.max()), count, exact, None if exact else seed)


DEFAULT_LAYOUTS = 1000
"""Layouts sampled per estimate where the doors are random (each counts all its start/goal pairs)."""
ENUMERATE_LIMIT = 5000
"""Random-door levels with at most this many layouts are also counted exactly (:func:`enumerated_figures`)."""


def _level_params(level: Any) -> DoorsParams:
    """``DoorsParams`` of a level given by name (``"31x31"``), :class:`~doors_gym.levels.Level` or params."""
    if isinstance(level, DoorsParams):
        return level
    from doors_gym.levels import Level, get_level

    return (level if isinstance(level, Level) else get_level(level)).params()


def layout_count(params: DoorsParams) -> int:
    """How many layouts the doors can make: 1 where fixed, ``comb(W, n_doors) ** n_walls`` where random."""
    return math.comb(params.width, params.n_doors) ** params.n_walls if params.random_doors else 1


@functools.lru_cache(maxsize=32)
def level_figures(level: Any, layouts: int = DEFAULT_LAYOUTS, seed: int = 0) -> LevelFigures:
    """The oracle's figures at a level: exact where the doors are fixed, else estimated over sampled layouts.

    Args:
        level: a level name (``"study"``, ``"Random"``, ``"3Walls"``, ``"31x31"``, ``"63x63"``), a
            :class:`~doors_gym.levels.Level` or :class:`DoorsParams` (its own time limit applies).
        layouts: how many layouts to draw where the doors are random, ``>= 2``.
        seed: the seed of ``numpy.random.default_rng`` that draws them (:func:`doors_gym.core.sample_doors`),
            so an estimate is reproducible.

    Returns:
        :class:`LevelFigures`; ``solved_rolling_reward`` is SPEC's "Solved" bar at the level.

    Raises:
        ValueError: for an unknown level, ``layouts < 2``, or a time limit some shortest path exceeds.
    """
    params = _level_params(level)
    if not params.random_doors:
        return LevelFigures.from_sums(layout_sums(core.wall_mask(params)[None], params.max_episode_steps), exact=True)
    if not core._is_int(layouts) or layouts < 2:
        raise ValueError(f"layouts={layouts!r} is invalid: expected an integer >= 2 (a confidence interval needs two)")
    doors = core.sample_doors(params, np.random.default_rng(seed), (layouts,))
    sums = layout_sums(core.wall_mask(params, doors), params.max_episode_steps)
    return LevelFigures.from_sums(sums, exact=False, seed=seed)


def enumerated_figures(level: Any) -> LevelFigures | None:
    """The oracle's figures over every layout of a level (each equally likely) and every start/goal pair.

    None where the level has more than :data:`ENUMERATE_LIMIT` layouts. Exact: a check of
    :func:`level_figures`' estimates where the count allows it.
    """
    params = _level_params(level)
    if layout_count(params) > ENUMERATE_LIMIT:
        return None
    if not params.random_doors:
        return level_figures(params)
    wall_sets = list(itertools.combinations(range(params.width), params.n_doors))
    doors = np.array(list(itertools.product(wall_sets, repeat=params.n_walls)), dtype=core.POSITION_DTYPE)
    return LevelFigures.from_sums(layout_sums(core.wall_mask(params, doors), params.max_episode_steps), exact=True)
