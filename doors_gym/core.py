"""The rules of the Doors gridworld, written once for NumPy and ``jax.numpy``.

Every function here is pure: it takes arrays and a module ``xp`` (``numpy`` or
``jax.numpy``) and returns new arrays, with no randomness and no branching on
array values, so the same code runs eagerly in NumPy, under ``jax.jit``, ``vmap``
and ``lax.scan``. Positions are ``(row, col)`` integer arrays of any (matching)
batch shape; row 0 is the top of the grid.

``Doors-v0`` evaluates these functions over every (cell, action) pair once and
steps through the resulting tables; ``DoorsJax-v0`` calls them on every step.
``tests/test_parity.py`` holds the two to identical transitions.

The cell codes come from :mod:`doors_gym.codes` (``core.AGENT`` is ``codes.AGENT``); colours and images
belong to :mod:`doors_gym.pixels`, which the ``rgb`` observation and the check of ``colors`` call.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from typing import Any, NamedTuple

import numpy as np

from doors_gym import pixels
from doors_gym.codes import AGENT, EMPTY, GOAL, NUM_CELL_TYPES, WALL

STAY, RIGHT, DOWN, LEFT, UP = 0, 1, 2, 3, 4
"""Action indices."""
NUM_ACTIONS = 5
ACTION_NAMES = ("stay", "right", "down", "left", "up")
MOVES = ((0, 0), (0, 1), (1, 0), (0, -1), (-1, 0))
"""``(d_row, d_col)`` of each action."""

OBS_DTYPE = np.int16
"""Dtype of the ``grid`` and ``coords`` observations and of their spaces' ``nvec``, in both implementations.

Gymnasium gives a ``MultiDiscrete`` space's ``nvec`` the space's dtype, and
clients add it up in that dtype: Stable-Baselines3 sums ``nvec`` with Python's
``sum``, Gymnasium's ``unflatten`` keeps cumulative offsets in it. With int8,
225 cells of 4 codes (900) wrapped to -124. int16 holds ``4 * H * W`` for every
grid up to :data:`MAX_CELLS`, at half the memory of int32 (which costs a quarter
of the native vector env's throughput at 4096 envs).
"""
ONEHOT_DTYPE = np.int8
POSITION_DTYPE = np.int32
REWARD_DTYPE = np.float32

DEFAULT_GRID_SIZE = (15, 15)
DEFAULT_N_DOORS = 3
DEFAULT_MAX_EPISODE_STEPS = 60
"""``2 * (H + W)`` on the default grid; the longest shortest path there is 28 steps."""
DEFAULT_N_WALLS = 1
DOOR_MODES = ("fixed", "random")
"""``doors="fixed"``: every wall's gaps at ``door_cols``; ``"random"``: each wall's set drawn at every reset."""
START_MODES = ("bottom", "anywhere")
"""Where ``reset(options={"start": ...})`` puts the agent: ``"bottom"``, the episode start of SPEC.md (the default),
or ``"anywhere"``, a training-only start distribution (exploring starts): the agent's row is drawn uniformly from
:func:`start_rows`, its column, the goal and the doors as at a default start. Evaluation always starts ``"bottom"``."""


class _DefaultTimeLimit:
    """The marker of ``max_episode_steps`` left to the layout: :func:`default_time_limit`."""

    def __repr__(self) -> str:
        return "DEFAULT_TIME_LIMIT"

    def __reduce__(self) -> str:
        return "DEFAULT_TIME_LIMIT"


DEFAULT_TIME_LIMIT: Any = _DefaultTimeLimit()
"""``max_episode_steps=DEFAULT_TIME_LIMIT`` (the :class:`DoorsParams` default): ``(n_walls + 1) * (H + W)``."""
MAX_CELLS = 8191
"""The largest grid, ``H * W <= 8191``: ``4 * H * W`` (the sum of ``nvec``) fits :data:`OBS_DTYPE`."""

OBS_MODES = ("grid", "onehot", "rgb", "coords", "flat")
"""Observation variants (Minigrid-style), chosen with ``obs_mode``:

- ``grid``: the flat grid of cell codes, ``(H * W,)`` int16 (the default, SPEC.md);
- ``onehot``: one 0/1 plane per cell code, ``(H, W, 4)`` int8;
- ``rgb``: the ``rgb_array`` frame, ``(H * p, W * p, 3)`` uint8 with ``p = cell_pixels``;
- ``coords``: ``(agent_row, agent_col, goal_row, goal_col)`` int16 (fixed doors only: it shows no layout);
- ``flat``: the ``onehot`` planes flattened row-major, ``(H * W * 4,)`` float32, index ``(row * W + col) * 4 + code``
  (for clients that take a float vector by id).
"""
FLAT_DTYPE = np.float32


class DoorsState(NamedTuple):
    """The full state of one (or a batch of) Doors episode(s).

    Every position field is an integer array (int32) of the same batch shape,
    ``()`` for one episode. ``time`` counts the steps taken since the episode's
    reset. ``doors`` is the episode's door columns, ``batch + (n_walls, n_doors)``
    int32, sorted along the last axis, where the doors are drawn per episode
    (``doors="random"``); it is ``None`` where they are fixed (every episode has
    the layout's own, :attr:`DoorsParams.fixed_doors`), so the states of
    ``Doors-v0`` hold the five position fields only. ``step`` never changes it.
    """

    agent_row: Any
    agent_col: Any
    goal_row: Any
    goal_col: Any
    time: Any
    doors: Any = None


def map_state(function: Any, state: DoorsState) -> DoorsState:
    """``state`` with ``function`` applied to every field that is not None (``doors`` is None with fixed doors)."""
    return DoorsState(*(None if field is None else function(field) for field in state))


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_int_pair(value: Any) -> bool:
    """Whether ``value`` is a length-2 sequence of integers (not bools)."""
    return (
        not isinstance(value, (str, bytes))
        and hasattr(value, "__len__")
        and len(value) == 2
        and all(_is_int(v) for v in value)
    )


@dataclasses.dataclass(frozen=True)
class DoorsParams:
    """Static configuration of the Doors layout, validated on construction.

    Args:
        grid_size: ``(H, W)``; ``H >= 2 * n_walls + 1`` (every wall needs a row
            above and below it), ``W >= 1``.
        n_doors: number of gaps in each wall, ``1 <= n_doors <= W``. Defaults to
            3, or to ``len(door_cols)`` when ``door_cols`` is given.
        door_cols: explicit, distinct door columns in ``[0, W)``, the same in
            every wall (fixed doors only). Defaults to ``k * (W // n_doors)``
            for ``k = 0 .. n_doors - 1``.
        max_episode_steps: steps after which an episode is truncated, ``>= 1``,
            or ``None`` for no limit of the env's own (Gymnasium's
            ``TimeLimit`` then decides). Default: ``(n_walls + 1) * (H + W)``
            (:func:`default_time_limit`; 60 on the default layout).
        obs_mode: the observation variant, one of :data:`OBS_MODES`
            (``coords`` only with fixed doors).
        cell_pixels: pixels per cell of ``rgb_array`` frames and ``rgb``
            observations, ``1..256``; default :func:`doors_gym.pixels.default_cell_pixels`
            (16, fewer on grids wider than 40 cells: 10 on 63 x 63, a 630 x 630 frame).
        colors: ``{cell code: (r, g, b)}`` over :data:`doors_gym.pixels.DEFAULT_COLORS`.
        n_walls: number of walls, ``>= 1``, at rows :func:`wall_rows`
            ``(k + 1) * H // (n_walls + 1)``.
        doors: one of :data:`DOOR_MODES`: ``"fixed"`` (every wall's gaps at
            ``door_cols``) or ``"random"`` (each wall's ``n_doors`` columns drawn
            uniformly at every reset; ``door_cols`` is then None).

    ``H * W`` may be at most :data:`MAX_CELLS`. After construction ``n_doors``
    is an int, ``door_cols`` a sorted tuple (None with random doors),
    ``max_episode_steps`` an int or None and ``colors`` a tuple of four RGB
    tuples, so equal settings compare and hash equal. Instances are hashable and
    immutable, so JAX treats them as static configuration.

    Raises:
        ValueError: naming the keyword, the value and the allowed range.
    """

    grid_size: tuple[int, int] = DEFAULT_GRID_SIZE
    n_doors: int | None = None
    door_cols: tuple[int, ...] | None = None
    max_episode_steps: int | None = DEFAULT_TIME_LIMIT
    obs_mode: str = "grid"
    cell_pixels: int | None = None
    colors: Any = None
    n_walls: int = DEFAULT_N_WALLS
    doors: str = "fixed"

    def __post_init__(self) -> None:
        height, width = _check_grid_size(self.grid_size)
        n_walls = _check_n_walls(self.n_walls, (height, width))
        doors = _check_door_mode(self.doors, self.door_cols, self.obs_mode)
        if doors == "random":
            n_doors, door_cols = _spread_doors(self.n_doors, width)[0], None
        else:
            n_doors, door_cols = _check_doors(self.n_doors, self.door_cols, width)
        limit = self.max_episode_steps
        if limit is DEFAULT_TIME_LIMIT:
            limit = default_time_limit((height, width), n_walls)
        settings = {
            "grid_size": (height, width),
            "n_doors": n_doors,
            "door_cols": door_cols,
            "max_episode_steps": _check_max_episode_steps(limit),
            "obs_mode": _check_obs_mode(self.obs_mode),
            "cell_pixels": _check_cell_pixels(
                pixels.default_cell_pixels((height, width)) if self.cell_pixels is None else self.cell_pixels
            ),
            "colors": pixels.normalise_colors(self.colors),
            "n_walls": n_walls,
            "doors": doors,
        }
        for name, value in settings.items():
            object.__setattr__(self, name, value)

    @property
    def height(self) -> int:
        """Number of rows ``H``."""
        return self.grid_size[0]

    @property
    def width(self) -> int:
        """Number of columns ``W``."""
        return self.grid_size[1]

    @property
    def max_steps_in_episode(self) -> int | None:
        """:attr:`max_episode_steps` under gymnax's name (the field of its ``EnvParams``), which gymnax-family
        scripts read (purejaxql sizes its test rollouts with it); None when episodes have no limit."""
        return self.max_episode_steps

    @property
    def num_cells(self) -> int:
        """``H * W``, the length of an observation."""
        return self.height * self.width

    @property
    def wall_rows(self) -> tuple[int, ...]:
        """Rows of the walls, :func:`wall_rows` (``(H // 2,)`` for one wall)."""
        return wall_rows(self.height, self.n_walls)

    @property
    def wall_row(self) -> int:
        """Row of the wall of a one-wall layout, ``H // 2``.

        Raises:
            ValueError: with several walls (see :attr:`wall_rows`).
        """
        if self.n_walls != 1:
            raise ValueError(f"DoorsParams.wall_row is undefined with n_walls={self.n_walls}: use wall_rows")
        return self.wall_rows[0]

    @property
    def random_doors(self) -> bool:
        """Whether each episode draws its doors (``doors="random"``)."""
        return self.doors == "random"

    @property
    def fixed_doors(self) -> np.ndarray:
        """``(n_walls, n_doors)`` int32: ``door_cols`` on every wall (read-only, cached).

        Raises:
            ValueError: with random doors, whose doors belong to each episode (``DoorsState.doors``).
        """
        self._require_fixed("fixed_doors")
        return _fixed_doors(self.n_walls, self.door_cols)

    @property
    def door_mask(self) -> np.ndarray:
        """``(W,)`` bool: True at door columns (a fresh array, never aliased); fixed doors only."""
        self._require_fixed("door_mask")
        mask = np.zeros(self.width, dtype=bool)
        mask[list(self.door_cols)] = True
        return mask

    @property
    def layout(self) -> np.ndarray:
        """``(H, W)`` ``OBS_DTYPE`` grid of walls and empty cells (no agent, no goal); fixed doors only.

        With random doors an episode's layout is :func:`layout_grid` of its doors.
        """
        self._require_fixed("layout")
        return _layout(self.grid_size, self.n_walls, self.door_cols).copy()

    def _require_fixed(self, name: str) -> None:
        if self.random_doors:
            raise ValueError(
                f"DoorsParams.{name} is undefined with doors='random': each episode draws its own doors "
                "(DoorsState.doors); use doors_gym.core.wall_mask(params, doors) or layout_grid(params, doors)"
            )


def wall_rows(height: int, n_walls: int) -> tuple[int, ...]:
    """The rows of ``n_walls`` walls in ``height`` rows: ``(k + 1) * H // (n_walls + 1)`` for ``k = 0..n_walls-1``."""
    return tuple((k + 1) * height // (n_walls + 1) for k in range(n_walls))


def default_time_limit(grid_size: tuple[int, int], n_walls: int) -> int:
    """The default ``max_episode_steps``: ``(n_walls + 1) * (H + W)`` (60 for ``Doors-v0``).

    A shortest path takes at most ``(H - 1) + (n_walls + 1) * (W - 1)`` steps, so every episode is solvable.
    """
    return (n_walls + 1) * (grid_size[0] + grid_size[1])


def _check_n_walls(n_walls: Any, grid_size: tuple[int, int]) -> int:
    """``n_walls`` as an int ``>= 1`` with ``H >= 2 * n_walls + 1``, or ``ValueError`` naming both."""
    if not _is_int(n_walls) or n_walls < 1:
        raise ValueError(f"n_walls={n_walls!r} is invalid: expected an integer >= 1")
    height = grid_size[0]
    if height < 2 * n_walls + 1:
        raise ValueError(
            f"n_walls={n_walls!r} is too many for grid_size={grid_size!r}: expected H >= 2 * n_walls + 1 "
            f"(walls never touch each other, row 0 or row H - 1), so at most {(height - 1) // 2} walls in {height} rows"
        )
    return int(n_walls)


def _check_door_mode(doors: Any, door_cols: Any, obs_mode: Any) -> str:
    """``doors`` if it is one of :data:`DOOR_MODES` and agrees with ``door_cols`` and ``obs_mode``, else
    ``ValueError``."""
    if doors not in DOOR_MODES:
        raise ValueError(f"doors={doors!r} is not supported: expected one of {list(DOOR_MODES)}")
    if doors == "random" and door_cols is not None:
        raise ValueError(
            f"door_cols={door_cols!r} contradicts doors='random': random doors are drawn per episode; "
            "give door_cols only with doors='fixed' (or leave door_cols unset)"
        )
    if doors == "random" and obs_mode == "coords":
        raise ValueError(
            "obs_mode='coords' contradicts doors='random': coordinates carry no layout, so the observation "
            f"would not be Markov; with random doors use one of {[m for m in OBS_MODES if m != 'coords']}"
        )
    return doors


def _check_grid_size(grid_size: Any) -> tuple[int, int]:
    """``(H, W)`` as ints, or ``ValueError``: a pair of integers, ``H >= 3``, ``W >= 1``, ``H * W <= MAX_CELLS``."""
    if not is_int_pair(grid_size):
        raise ValueError(
            f"grid_size={grid_size!r} is invalid: expected a pair of integers (H, W) with H >= 3 and W >= 1"
        )
    height, width = int(grid_size[0]), int(grid_size[1])
    if height < 3 or width < 1:
        raise ValueError(
            f"grid_size={tuple(grid_size)!r} is out of range: H must be >= 3 (a row above "
            "and below the wall) and W must be >= 1"
        )
    if height * width > MAX_CELLS:
        raise ValueError(
            f"grid_size={tuple(grid_size)!r} is out of range: H * W = {height * width} cells, expected at most "
            f"{MAX_CELLS} (4 * H * W, the sum of the observation space's nvec, must fit int16)"
        )
    return height, width


def _check_doors(n_doors: Any, door_cols: Any, width: int) -> tuple[int, tuple[int, ...]]:
    """The number of doors and their sorted columns, from either or both, or ``ValueError``."""
    if n_doors is not None and not _is_int(n_doors):
        raise ValueError(f"n_doors={n_doors!r} is invalid: expected an integer in [1, {width}] (1 <= n_doors <= W)")
    if door_cols is None:
        return _spread_doors(n_doors, width)
    return _check_door_cols(door_cols, n_doors, width)


def _spread_doors(n_doors: int | None, width: int) -> tuple[int, tuple[int, ...]]:
    """``n_doors`` (default 3) in ``1..W`` and its columns ``k * (W // n_doors)``, or ``ValueError``."""
    n_doors = DEFAULT_N_DOORS if n_doors is None else int(n_doors)
    if not 1 <= n_doors <= width:
        raise ValueError(f"n_doors={n_doors!r} is out of range: expected 1 <= n_doors <= W = {width}")
    return n_doors, tuple(k * (width // n_doors) for k in range(n_doors))


def _check_door_cols(raw: Any, n_doors: int | None, width: int) -> tuple[int, tuple[int, ...]]:
    """Explicit door columns, distinct integers in ``[0, W)`` (as many as ``n_doors`` if given), and their count.

    Raises:
        ValueError: naming the columns and what is allowed.
    """
    if isinstance(raw, (str, bytes)) or not hasattr(raw, "__iter__"):
        raise ValueError(f"door_cols={raw!r} is invalid: expected a sequence of distinct integers in [0, {width})")
    raw = tuple(raw)
    if not raw or not all(_is_int(c) for c in raw):
        raise ValueError(
            f"door_cols={raw!r} is invalid: expected a non-empty sequence of distinct integers in [0, {width})"
        )
    bad = [int(c) for c in raw if not 0 <= c < width]
    if bad:
        raise ValueError(f"door_cols={raw!r} is out of range: columns {bad} are outside [0, {width})")
    if len(set(raw)) != len(raw):
        raise ValueError(f"door_cols={raw!r} is invalid: door columns must be distinct")
    door_cols = tuple(sorted(int(c) for c in raw))
    if n_doors is not None and int(n_doors) != len(door_cols):
        raise ValueError(
            f"n_doors={n_doors!r} contradicts door_cols={raw!r}: expected n_doors == "
            f"len(door_cols) = {len(door_cols)} (or leave n_doors unset)"
        )
    return len(door_cols), door_cols


def _check_max_episode_steps(limit: Any) -> int | None:
    """The time limit as an int ``>= 1``, None (no limit of the env's own), or ``ValueError``."""
    if limit is not None and (not _is_int(limit) or limit < 1):
        raise ValueError(f"max_episode_steps={limit!r} is invalid: expected an integer >= 1 or None")
    return None if limit is None else int(limit)


def _check_obs_mode(obs_mode: Any) -> str:
    """``obs_mode`` if it is one of :data:`OBS_MODES`, else ``ValueError``."""
    if obs_mode not in OBS_MODES:
        raise ValueError(f"obs_mode={obs_mode!r} is not supported: expected one of {list(OBS_MODES)}")
    return obs_mode


def _check_cell_pixels(cell_pixels: Any) -> int:
    """Pixels per cell as an int in ``1..MAX_CELL_PIXELS``, or ``ValueError``."""
    if not _is_int(cell_pixels) or not 1 <= cell_pixels <= pixels.MAX_CELL_PIXELS:
        raise ValueError(f"cell_pixels={cell_pixels!r} is invalid: expected an integer in 1..{pixels.MAX_CELL_PIXELS}")
    return int(cell_pixels)


@functools.lru_cache(maxsize=64)
def _layout(grid_size: tuple[int, int], n_walls: int, door_cols: tuple[int, ...]) -> np.ndarray:
    """The fixed layout's ``(H, W)`` grid (read-only, cached)."""
    grid = np.full(grid_size, EMPTY, dtype=OBS_DTYPE)
    rows = list(wall_rows(grid_size[0], n_walls))
    grid[rows, :] = WALL
    grid[np.ix_(rows, list(door_cols))] = EMPTY
    grid.setflags(write=False)
    return grid


@functools.lru_cache(maxsize=64)
def _fixed_doors(n_walls: int, door_cols: tuple[int, ...]) -> np.ndarray:
    doors = np.tile(np.asarray(door_cols, dtype=POSITION_DTYPE), (n_walls, 1))
    doors.setflags(write=False)
    return doors


@functools.lru_cache(maxsize=64)
def _full_walls(grid_size: tuple[int, int], n_walls: int) -> np.ndarray:
    """``(H * W,)`` flat grid with every wall row filled, no gaps (read-only, cached)."""
    grid = np.full(grid_size, EMPTY, dtype=OBS_DTYPE)
    grid[list(wall_rows(grid_size[0], n_walls)), :] = WALL
    grid = grid.reshape(-1)
    grid.setflags(write=False)
    return grid


def door_cells(params: DoorsParams, doors: Any, xp: Any = np) -> Any:
    """Flat cell indices ``row * W + col`` of every door, ``batch + (n_walls, n_doors)`` int32.

    Args:
        params: the layout (its wall rows).
        doors: ``batch + (n_walls, n_doors)`` integer door columns (``DoorsState.doors``).
        xp: ``numpy`` or ``jax.numpy``.
    """
    rows = xp.asarray(np.asarray(params.wall_rows, dtype=POSITION_DTYPE) * params.width)
    return (xp.asarray(doors).astype(POSITION_DTYPE) + rows[:, None]).astype(POSITION_DTYPE)


def layout_grid(params: DoorsParams, doors: Any = None, xp: Any = np) -> Any:
    """An episode's grid of walls and empty cells, ``batch + (H * W,)`` ``OBS_DTYPE``, flat row-major.

    Args:
        params: the layout.
        doors: ``batch + (n_walls, n_doors)`` integer door columns, or None for the fixed doors
            (then the cached read-only layout itself, shape ``(H * W,)``).
        xp: ``numpy`` or ``jax.numpy``.

    Built as every wall row filled and one write per door: no pass over the cells per episode.
    """
    if doors is None:
        return xp.asarray(_layout(params.grid_size, params.n_walls, params.door_cols).reshape(-1))
    cells = door_cells(params, doors, xp)
    batch = cells.shape[:-2]
    cells = cells.reshape(batch + (-1,))
    background = xp.broadcast_to(xp.asarray(_full_walls(params.grid_size, params.n_walls)), batch + (params.num_cells,))
    return _put_last_axis(xp, background, cells, EMPTY, per_element=False)


def wall_mask(params: DoorsParams, doors: Any = None, xp: Any = np) -> Any:
    """An episode's walls, ``batch + (H, W)`` bool: True on wall cells (the input of a breadth-first search).

    Args:
        params: the layout.
        doors: ``batch + (n_walls, n_doors)`` integer door columns (``DoorsState.doors``), or None for
            the fixed doors (shape ``(H, W)``).
        xp: ``numpy`` or ``jax.numpy``.
    """
    grid = layout_grid(params, doors, xp)
    return (grid == WALL).reshape(grid.shape[:-1] + params.grid_size)


def doors_from_ranks(params: DoorsParams, ranks: Any, xp: Any = np) -> Any:
    """Door sets from sequential draws without replacement: the one door rule of both samplers.

    Args:
        params: the layout (``n_doors``, ``W``).
        ranks: ``batch + (n_walls, n_doors)`` integers, ``ranks[..., j]`` in ``range(W - j)``: the
            ``j``-th door is the ``ranks[..., j]``-th column (counting from 0, left to right) among
            those not yet chosen. With each ``ranks[..., j]`` uniform and independent, every ordered
            choice of distinct columns is equally likely, hence every ``n_doors``-subset, independently
            per wall.
        xp: ``numpy`` or ``jax.numpy``.

    Returns:
        ``batch + (n_walls, n_doors)`` int32 door columns, ascending along the last axis.

    Decoded from the last draw back: after draw ``j`` is fixed, every later door counted among the
    columns left after it skips it (``+1`` where at or past it). ``n_doors - 1`` elementwise passes and a
    sort of ``n_doors`` values per wall (:func:`_sort_few`): no sort or gather over the ``W`` columns.
    """
    columns = xp.asarray(ranks).astype(POSITION_DTYPE)
    if xp is np:
        columns = columns.copy()
    for j in range(params.n_doors - 2, -1, -1):
        later = columns[..., j + 1 :]
        skip = (later >= columns[..., j : j + 1]).astype(POSITION_DTYPE)
        if xp is np:
            later += skip
        else:
            columns = columns.at[..., j + 1 :].add(skip)
    return _sort_few(xp, columns)


SORTING_NETWORK_MAX = 8
"""Up to this many values along the last axis, JAX sorts them with compare-exchanges (see :func:`_sort_few`)."""


def _sort_few(xp: Any, values: Any) -> Any:
    """``values`` sorted along the last axis: ``np.sort`` in NumPy; in JAX, for a short axis, an odd-even
    transposition network of ``minimum`` / ``maximum`` (elementwise, fused by XLA, where XLA's CPU sort is a
    loop of comparisons: ``benchmarks/door_draw.py`` times both), else ``jnp.sort``."""
    size = values.shape[-1]
    if xp is np or size > SORTING_NETWORK_MAX:
        return xp.sort(values, axis=-1)
    lanes = [values[..., i] for i in range(size)]
    for round_ in range(size):
        for i in range(round_ % 2, size - 1, 2):
            lanes[i], lanes[i + 1] = xp.minimum(lanes[i], lanes[i + 1]), xp.maximum(lanes[i], lanes[i + 1])
    return xp.stack(lanes, axis=-1)


def sample_doors(params: DoorsParams, rng: np.random.Generator, shape: tuple[int, ...] = ()) -> np.ndarray:
    """NumPy's door sampler: ``shape + (n_walls, n_doors)`` int32, each wall's set uniform over the
    ``n_doors``-subsets of ``range(W)``, independently per wall, from ``rng`` (an env's ``np_random``).

    :func:`doors_from_ranks` of ranks ``floor(u * (W - j))`` of uniform doubles ``u`` (uniform up to
    the doubles' 53 bits); JAX's twin is :func:`doors_gym.jax.functional.draw_doors` (same rule and
    distribution, other draws).
    """
    bounds = params.width - np.arange(params.n_doors)
    draws = rng.random(shape + (params.n_walls, params.n_doors))
    return doors_from_ranks(params, (draws * bounds).astype(POSITION_DTYPE))


def episode_doors(params: DoorsParams, state: DoorsState, xp: Any = np) -> Any:
    """The doors of ``state``: ``state.doors``, or the fixed doors broadcast to its batch shape."""
    if state.doors is not None:
        return state.doors
    batch = xp.shape(state.agent_row)
    return xp.broadcast_to(xp.asarray(params.fixed_doors), batch + params.fixed_doors.shape)


def move(params: DoorsParams, row: Any, col: Any, action: Any, xp: Any = np, doors: Any = None) -> tuple[Any, Any]:
    """Moves the agent one cell: clip to the grid, stay if the target is a wall.

    Args:
        params: the layout.
        row: integer array, the agent's row (any batch shape).
        col: integer array of the same shape, the agent's column.
        action: integer array broadcastable to ``row``; values outside ``0..4``
            move nowhere (validation belongs to the shells).
        xp: ``numpy`` or ``jax.numpy``.
        doors: ``row.shape + (n_walls, n_doors)`` door columns of each episode, or
            None for the fixed doors (a constant table, as ``Doors-v0`` always had).

    Returns:
        ``(row, col)`` after the move, ``int32``.
    """
    action = xp.asarray(action)
    d_row = (action == DOWN).astype(POSITION_DTYPE) - (action == UP).astype(POSITION_DTYPE)
    d_col = (action == RIGHT).astype(POSITION_DTYPE) - (action == LEFT).astype(POSITION_DTYPE)
    target_row = xp.clip(row + d_row, 0, params.height - 1).astype(POSITION_DTYPE)
    target_col = xp.clip(col + d_col, 0, params.width - 1).astype(POSITION_DTYPE)
    if doors is None:
        # Every wall has the same gaps: a wall row and a door column, two small constant tables.
        is_wall_row = np.zeros(params.height, dtype=bool)
        is_wall_row[list(params.wall_rows)] = True
        blocked = xp.asarray(is_wall_row)[target_row] & ~xp.asarray(params.door_mask)[target_col]
    else:
        on_wall_row = target_row[..., None] == xp.asarray(np.asarray(params.wall_rows, dtype=POSITION_DTYPE))
        at_door = xp.any(xp.asarray(doors) == target_col[..., None, None], axis=-1)
        blocked = xp.any(on_wall_row & ~at_door, axis=-1)
    return xp.where(blocked, row, target_row), xp.where(blocked, col, target_col)


def distance(row: Any, col: Any, goal_row: Any, goal_col: Any, xp: Any = np) -> Any:
    """Euclidean distance between two cells, ``float32`` (exact integer square, rounded sqrt)."""
    d_row = (goal_row - row).astype(POSITION_DTYPE)
    d_col = (goal_col - col).astype(POSITION_DTYPE)
    return xp.sqrt((d_row * d_row + d_col * d_col).astype(REWARD_DTYPE))


def reward(distance_before: Any, distance_after: Any) -> Any:
    """Decrease of the distance to the goal, ``float32``: a return telescopes."""
    return (distance_before - distance_after).astype(REWARD_DTYPE, copy=False)


def terminated(state: DoorsState) -> Any:
    """True where the agent stands on the goal."""
    return (state.agent_row == state.goal_row) & (state.agent_col == state.goal_col)


def truncated(params: DoorsParams, state: DoorsState) -> Any:
    """True where ``state.time`` reached ``params.max_episode_steps`` (never if that is None)."""
    if params.max_episode_steps is None:
        return state.time < 0  # all False, with the batch shape and dtype of a comparison
    return state.time >= params.max_episode_steps


@functools.lru_cache(maxsize=64)
def start_rows(params: DoorsParams) -> np.ndarray:
    """The rows a ``start="anywhere"`` reset draws the agent's row from, uniformly: rows ``1..H-1`` that hold no
    wall (never the goal's row 0, never a wall row, so never the goal's cell nor a wall), ``(k,)`` int32, read-only."""
    walls = set(params.wall_rows)
    rows = np.array([row for row in range(1, params.height) if row not in walls], dtype=POSITION_DTYPE)
    rows.setflags(write=False)
    return rows


def start_columns(params: DoorsParams, start_index: Any) -> tuple[Any, Any]:
    """Splits a draw uniform over ``[0, W * W)`` into independent uniform ``(agent_col, goal_col)``.

    One draw per episode is cheaper than two in both NumPy and JAX.
    """
    return start_index // params.width, start_index % params.width


def initial_state(params: DoorsParams, agent_col: Any, goal_col: Any, xp: Any = np, doors: Any = None) -> DoorsState:
    """The start of an episode: agent on the bottom row, goal on the top row, time 0.

    Args:
        params: the layout.
        agent_col: integer array in ``[0, W)``, the agent's column on the bottom row.
        goal_col: integer array in ``[0, W)``, the goal's column on the top row; the
            shells draw both independently and uniformly.
        xp: ``numpy`` or ``jax.numpy``.
        doors: ``batch + (n_walls, n_doors)`` door columns where the doors are random
            (required then), None where they are fixed.

    Raises:
        ValueError: doors given with fixed doors or missing with random ones.
    """
    if (doors is None) == params.random_doors:
        raise ValueError(
            f"doors={'None' if doors is None else 'an array'} does not fit doors={params.doors!r}: "
            "expected an array of door columns exactly when the doors are random"
        )
    agent_col = xp.asarray(agent_col, dtype=POSITION_DTYPE)
    goal_col = xp.asarray(goal_col, dtype=POSITION_DTYPE)
    zeros = xp.zeros_like(agent_col)
    return DoorsState(
        agent_row=zeros + (params.height - 1),
        agent_col=agent_col,
        goal_row=zeros,
        goal_col=goal_col,
        time=zeros,
        doors=None if doors is None else xp.asarray(doors, dtype=POSITION_DTYPE),
    )


def transition(params: DoorsParams, state: DoorsState, action: Any, xp: Any = np) -> DoorsState:
    """One step of the rules: move the agent and advance the clock."""
    agent_row, agent_col = move(params, state.agent_row, state.agent_col, action, xp, state.doors)
    return state._replace(agent_row=agent_row, agent_col=agent_col, time=state.time + 1)


def state_distance(state: DoorsState, xp: Any = np) -> Any:
    """Distance from the agent to the goal in ``state``, ``float32``."""
    return distance(state.agent_row, state.agent_col, state.goal_row, state.goal_col, xp)


def observation(params: DoorsParams, state: DoorsState, xp: Any = np) -> Any:
    """The observation of ``state`` in ``params.obs_mode`` (see :data:`OBS_MODES`), batch shape first."""
    if params.obs_mode == "coords":
        return coords_observation(state, xp)
    return encode_grid(params, grid_observation(params, state, xp), xp)


def coords_observation(state: DoorsState, xp: Any = np) -> Any:
    """``batch + (4,)`` ``OBS_DTYPE``: agent row, agent column, goal row, goal column."""
    return xp.stack([state.agent_row, state.agent_col, state.goal_row, state.goal_col], axis=-1).astype(OBS_DTYPE)


def encode_grid(params: DoorsParams, grid: Any, xp: Any = np) -> Any:
    """A flat grid observation ``batch + (H * W,)`` in ``params.obs_mode`` (``grid``, ``onehot``, ``rgb``, ``flat``).

    ``grid`` returns the grid itself (not a copy); ``onehot`` and ``rgb`` build
    new arrays.
    """
    if params.obs_mode == "grid":
        return grid
    cells = grid.reshape(grid.shape[:-1] + params.grid_size)
    if params.obs_mode == "onehot":
        return (cells[..., None] == xp.arange(NUM_CELL_TYPES, dtype=OBS_DTYPE)).astype(ONEHOT_DTYPE)
    if params.obs_mode == "flat":
        planes = grid[..., None] == xp.arange(NUM_CELL_TYPES, dtype=OBS_DTYPE)
        return planes.astype(FLAT_DTYPE).reshape(grid.shape[:-1] + (params.num_cells * NUM_CELL_TYPES,))
    if params.obs_mode == "rgb":
        return pixels.rgb_image(cells, params.colors, params.cell_pixels, xp)
    raise ValueError(
        f"obs_mode={params.obs_mode!r} has no grid encoding: expected one of ['grid', 'onehot', 'rgb', 'flat']"
    )


def grid_observation(params: DoorsParams, state: DoorsState, xp: Any = np) -> Any:
    """The grid flattened row-major, ``OBS_DTYPE``, shape ``batch + (H * W,)``.

    Walls from the episode's layout (:func:`layout_grid` of ``state.doors``),
    the goal, then the agent on top (it covers the goal when the episode has
    terminated). Built as the layout plus two writes per episode, which XLA
    compiles to a copy and two scatters (cheaper than comparing every cell).
    """
    agent = xp.asarray(state.agent_row * params.width + state.agent_col)
    goal = xp.asarray(state.goal_row * params.width + state.goal_col)
    background = layout_grid(params, state.doors, xp)
    grid = xp.broadcast_to(background, agent.shape + background.shape[-1:])
    grid = _put_last_axis(xp, grid, goal, GOAL)
    return _put_last_axis(xp, grid, agent, AGENT)


def _put_last_axis(xp: Any, grid: Any, index: Any, value: int, per_element: bool = True) -> Any:
    """``grid`` with ``grid[..., index] = value`` per batch element, as a new array.

    ``index`` has the batch shape (one cell per element) or, with ``per_element=False``, the batch shape
    plus one axis of cells.
    """
    index = (index[..., None] if per_element else index).astype(POSITION_DTYPE)
    if xp is np:
        grid = np.array(grid, dtype=OBS_DTYPE)
        np.put_along_axis(grid, index, OBS_DTYPE(value), axis=-1)
        return grid
    return xp.put_along_axis(grid, index, OBS_DTYPE(value), axis=-1, inplace=False)


@functools.lru_cache(maxsize=64)
def all_transitions(params: DoorsParams) -> np.ndarray:
    """``move`` over every (cell, action) pair, for table-driven NumPy stepping.

    Returns:
        ``(H * W, 5)`` int32 flat cell index after each action from each cell
        (read-only, cached per layout); with random doors, the moves of a grid
        without walls (an episode's walls then block what its grid shows as wall).
    """
    if params.random_doors:
        return all_transitions(DoorsParams(grid_size=params.grid_size, n_doors=params.width))  # no wall cells
    cells = np.arange(params.num_cells, dtype=POSITION_DTYPE)
    row, col = np.divmod(cells, params.width)
    actions = np.arange(NUM_ACTIONS, dtype=POSITION_DTYPE)
    new_row, new_col = move(params, row[:, None], col[:, None], actions[None, :])
    next_cell = new_row * params.width + new_col
    next_cell.setflags(write=False)
    return next_cell


def distances_to(params: DoorsParams, goal_row: int, goal_col: int) -> np.ndarray:
    """``(H * W,)`` float32: the distance from every cell to one goal cell."""
    cells = np.arange(params.num_cells, dtype=POSITION_DTYPE)
    row, col = np.divmod(cells, params.width)
    return distance(row, col, np.int32(goal_row), np.int32(goal_col))


def validate_action(action: Any) -> int:
    """Returns ``action`` as an int in ``0..4`` or raises a clear error.

    Accepts Python and NumPy integers and 0-d integer NumPy or JAX arrays
    (``bool`` is not an action).

    Raises:
        TypeError: for floats, strings, None and other non-integers.
        ValueError: for integers outside ``0..4``.
    """
    value = action
    if value.__class__ in _NUMPY_INTEGERS:
        value = int(value)
        if 0 <= value < NUM_ACTIONS:
            return value
    elif getattr(value, "shape", None) == () and getattr(getattr(value, "dtype", None), "kind", "") in "iu":
        value = int(value)  # 0-d NumPy or JAX integer array
    if not _is_int(value):
        raise TypeError(
            f"action {action!r} of type {type(action).__name__} is not an integer action: "
            f"valid actions are the integers 0..{NUM_ACTIONS - 1} ({_ACTION_LIST})"
        )
    if not 0 <= value < NUM_ACTIONS:
        raise ValueError(
            f"action {action!r} is out of range: valid actions are the integers "
            f"0..{NUM_ACTIONS - 1} ({_ACTION_LIST})"
        )
    return int(value)


def validate_actions(actions: Any, num_envs: int) -> np.ndarray:
    """Checks a batch of actions on the host: shape ``(num_envs,)``, integers in ``0..4``.

    Returns:
        The actions as an integer NumPy array (no copy when already one).
    """
    array = actions if actions.__class__ is np.ndarray else np.asarray(actions)
    kind = array.dtype.kind
    if kind not in "iu":
        raise TypeError(
            f"actions of dtype {array.dtype} are not integer actions: valid actions are the "
            f"integers 0..{NUM_ACTIONS - 1} ({_ACTION_LIST})"
        )
    if array.shape != (num_envs,):
        raise ValueError(f"actions have shape {array.shape}, expected ({num_envs},)")
    # Viewed as unsigned, negative actions become huge: one reduction checks both bounds.
    unsigned = array.view(_UNSIGNED[array.dtype.itemsize]) if kind == "i" else array
    if array.size and _maximum(unsigned) >= NUM_ACTIONS:
        bad = array[(array < 0) | (array >= NUM_ACTIONS)]
        raise ValueError(
            f"actions {bad[:8].tolist()} are out of range: valid actions are the integers "
            f"0..{NUM_ACTIONS - 1} ({_ACTION_LIST})"
        )
    return array


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_maximum = np.maximum.reduce
_NUMPY_INTEGERS = frozenset(np.dtype(code).type for code in np.typecodes["AllInteger"])
_ACTION_LIST = ", ".join(f"{i} {name}" for i, name in enumerate(ACTION_NAMES))


def validate_render_mode(render_mode: str | None, allowed: tuple[str, ...]) -> None:
    """Raises ``ValueError`` unless ``render_mode`` is None or one of ``allowed``."""
    if render_mode is not None and render_mode not in allowed:
        raise ValueError(f"render_mode={render_mode!r} is not supported: expected None or one of {list(allowed)}")
