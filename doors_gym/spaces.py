"""What every shell declares and checks beside the rules: spaces, reset options, states, reset masks, seeds.

NumPy only, so both the NumPy envs and the JAX shells use it without either
importing the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from doors_gym import core, pixels
from doors_gym.core import NUM_ACTIONS, WALL, DoorsParams, DoorsState

RESET_OPTIONS = ("agent_pos", "goal_pos", "start")
"""Keys of a single env's ``reset(options=...)``."""
VECTOR_RESET_OPTIONS = ("reset_mask", "start")
"""Keys of a vector env's ``reset(options=...)``."""


NO_LIMIT = -1
"""``max_episode_steps=-1``: no time limit (Gymnasium's meaning in ``gym.make``)."""


class EnvKeywords(TypedDict, total=False):
    """The keywords every Doors shell takes (``gym.make``, ``gym.make_vec``, the constructors).

    Attributes:
        grid_size: ``(H, W)``, ``H >= 2 * n_walls + 1``, ``W >= 1``, ``H * W <= 8191``; default ``(15, 15)``.
        n_doors: the number of doors in each wall, ``1..W``; default 3 (or ``len(door_cols)``).
        door_cols: explicit, distinct door columns in ``[0, W)`` (fixed doors only).
        max_episode_steps: an integer ``>= 1``, ``None`` (the layout's default
            ``(n_walls + 1) * (H + W)`` for the vector envs and ``DoorsGymnax``; the
            single envs leave it to ``gym.make``'s ``TimeLimit``, the id's level's) or ``-1`` (no limit).
        obs_mode: ``"grid"`` (default), ``"onehot"``, ``"rgb"``, ``"coords"`` (fixed doors only) or ``"flat"``.
        cell_pixels: pixels per cell of frames and ``rgb`` observations, ``1..256``; default 16 (fewer
            beyond 40 cells a side: 10 on 63 x 63, :func:`doors_gym.pixels.default_cell_pixels`).
        colors: ``{cell code: (r, g, b)}`` over the defaults.
        n_walls: the number of walls, ``>= 1``; default 1.
        doors: ``"fixed"`` (default) or ``"random"`` (each wall's doors drawn at every reset).
    """

    grid_size: Sequence[int]
    n_doors: int | None
    door_cols: Sequence[int] | None
    max_episode_steps: int | None
    obs_mode: str
    cell_pixels: int
    colors: Mapping[int, Sequence[int]] | None
    n_walls: int
    doors: str


ENV_KEYWORDS = tuple(EnvKeywords.__annotations__)
"""The names of :class:`EnvKeywords`: every keyword a Doors shell takes besides its own."""


def check_keywords(keywords: Mapping[str, Any]) -> None:
    """``TypeError`` naming every unknown env keyword and the allowed ones (:class:`EnvKeywords`)."""
    unknown = [name for name in keywords if name not in ENV_KEYWORDS]
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        # Python's own wording first: clients read it, as TorchRL's GymEnv does to drop the `frameskip` it
        # offers every env ("unexpected keyword argument 'frameskip'").
        got = f"unexpected keyword arguments {names}" if len(unknown) > 1 else f"an unexpected keyword argument {names}"
        raise TypeError(
            f"Doors envs got {got}: expected keywords among {list(ENV_KEYWORDS)} "
            "(and render_mode; array_type on DoorsJax-v0)"
        )


def make_params(*, default_limit: Any, **keywords: Any) -> DoorsParams:
    """The validated :class:`DoorsParams` of a shell's keywords (:class:`EnvKeywords`).

    ``max_episode_steps`` means the same in every shell, as in ``gym.make``: an
    integer ``>= 1`` is the limit, ``-1`` is no limit, ``None`` is
    ``default_limit`` (:data:`doors_gym.core.DEFAULT_TIME_LIMIT` for the vector envs, the layout's
    ``(n_walls + 1) * (H + W)``; ``None`` for the single envs, which ``gym.make`` wraps in Gymnasium's
    ``TimeLimit``). Anything else is a
    ``ValueError`` naming the value; an unknown keyword is a ``TypeError``
    naming it and the allowed ones.
    """
    check_keywords(keywords)
    limit = keywords.get("max_episode_steps")
    if limit is None:
        limit = default_limit
    elif core._is_int(limit) and limit == NO_LIMIT:
        limit = None
    elif not core._is_int(limit) or limit < 1:
        raise ValueError(
            f"max_episode_steps={limit!r} is invalid: expected an integer >= 1, "
            "None (the default, (n_walls + 1) * (H + W)) or -1 (no limit)"
        )
    grid_size = keywords.get("grid_size", core.DEFAULT_GRID_SIZE)
    if core.is_int_pair(grid_size):
        grid_size = tuple(grid_size)
    # The other keywords go in as given: a keyword left out takes DoorsParams's default, which is EnvKeywords'.
    return DoorsParams(**{**keywords, "grid_size": grid_size, "max_episode_steps": limit})


def observation_space(params: DoorsParams) -> spaces.Space:
    """The observation space of ``params.obs_mode``, the same in both implementations.

    - ``grid``: ``MultiDiscrete([4] * H * W)``, int16 (``nvec`` too);
    - ``onehot``: ``MultiBinary((H, W, 4))``, int8;
    - ``rgb``: ``Box(0, 255, (H * p, W * p, 3), uint8)``, an image Stable-Baselines3's ``CnnPolicy`` takes;
    - ``coords``: ``MultiDiscrete([H, W, H, W])``, int16;
    - ``flat``: ``Box(0, 1, (H * W * 4,), float32)``, the one-hot planes row-major.
    """
    mode = params.obs_mode
    if mode == "grid":
        nvec = np.full(params.num_cells, core.NUM_CELL_TYPES, dtype=core.OBS_DTYPE)
        return spaces.MultiDiscrete(nvec, dtype=core.OBS_DTYPE)
    if mode == "onehot":
        return spaces.MultiBinary((params.height, params.width, core.NUM_CELL_TYPES))
    if mode == "rgb":
        shape = (params.height * params.cell_pixels, params.width * params.cell_pixels, 3)
        return spaces.Box(0, 255, shape, dtype=pixels.RGB_DTYPE)
    if mode == "flat":
        return spaces.Box(0.0, 1.0, (params.num_cells * core.NUM_CELL_TYPES,), dtype=core.FLAT_DTYPE)
    nvec = np.array([params.height, params.width, params.height, params.width], dtype=core.OBS_DTYPE)
    return spaces.MultiDiscrete(nvec, dtype=core.OBS_DTYPE)


def make_spaces(params: DoorsParams) -> tuple[spaces.Space, spaces.Discrete]:
    """The observation and action spaces that both implementations declare."""
    return observation_space(params), spaces.Discrete(NUM_ACTIONS)


def parse_reset_options(params: DoorsParams, options: Mapping[str, Any] | None) -> dict[str, tuple[int, int]]:
    """Validates ``reset(options=...)``: optional ``agent_pos`` / ``goal_pos`` as ``(row, col)``.

    A position must lie inside the grid and off the wall (with random doors, off
    every wall row: the doors are drawn after the options are read), and the
    agent may not start on the goal.

    Raises:
        ValueError: naming the option, its value and what is allowed.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"options={options!r} is invalid: expected None or a dict with keys {list(RESET_OPTIONS)}")
    unknown = sorted(set(options) - set(RESET_OPTIONS))
    if unknown:
        raise ValueError(f"reset options {unknown} are unknown: expected keys among {list(RESET_OPTIONS)}")
    layout = core.layout_grid(params) if not params.random_doors else _full_walls(params)
    positions = {
        key: check_position(params, f"options[{key!r}]", options[key], layout)
        for key in ("agent_pos", "goal_pos")
        if key in options
    }
    if start_mode(options) != "bottom" and "agent_pos" in positions:
        raise ValueError(
            f"options start={options['start']!r} and agent_pos={positions['agent_pos']} both place the agent: "
            "expected one of them"
        )
    if positions.get("agent_pos") is not None and positions.get("agent_pos") == positions.get("goal_pos"):
        raise ValueError(
            f"options agent_pos={positions['agent_pos']} equals goal_pos: the agent may not start on the goal"
        )
    return positions


def start_mode(options: Mapping[str, Any] | None) -> str:
    """``options["start"]`` of a reset, checked against :data:`doors_gym.core.START_MODES` (``"bottom"`` when absent).

    Raises:
        ValueError: naming the value and the allowed modes.
    """
    start = "bottom" if not options else options.get("start", "bottom")
    if not isinstance(start, str) or start not in core.START_MODES:
        raise ValueError(f"options start={start!r} is not supported: expected one of {list(core.START_MODES)}")
    return start


def _full_walls(params: DoorsParams) -> np.ndarray:
    """The flat grid with every wall row filled: where no position of a random-doors episode may be chosen ahead."""
    return core.layout_grid(params, np.zeros((params.n_walls, 0), dtype=core.POSITION_DTYPE))


def check_position(params: DoorsParams, name: str, value: Any, layout: np.ndarray | None = None) -> tuple[int, int]:
    """``value`` as a ``(row, col)`` cell inside the grid and off the wall, or ``ValueError`` naming ``name``.

    ``layout`` is the episode's flat grid (:func:`doors_gym.core.layout_grid`); by default the fixed layout.
    """
    if not core.is_int_pair(value):
        raise ValueError(f"{name}={value!r} is invalid: expected (row, col) integers")
    row, col = int(value[0]), int(value[1])
    if not (0 <= row < params.height and 0 <= col < params.width):
        raise ValueError(
            f"{name}={value!r} is outside the grid: expected 0 <= row < {params.height}, 0 <= col < {params.width}"
        )
    layout = core.layout_grid(params) if layout is None else layout
    if layout[row * params.width + col] == WALL:
        raise ValueError(f"{name}={value!r} is a wall cell: positions must be off the wall")
    return row, col


def check_doors(params: DoorsParams, doors: Any, shape: tuple[int, ...] = ()) -> np.ndarray | None:
    """A state's ``doors`` as ``shape + (n_walls, n_doors)`` int32, or None where the doors are fixed.

    With fixed doors ``doors`` must be None or equal the fixed doors; with random doors it is required,
    each wall's columns distinct, ascending and inside ``[0, W)``.

    Raises:
        ValueError: naming ``state.doors``, the value and what is allowed.
    """
    expected = shape + (params.n_walls, params.n_doors)
    if doors is None:
        if params.random_doors:
            raise ValueError(
                f"state.doors=None is invalid with doors='random': expected int columns of shape {expected}"
            )
        return None
    array = np.asarray(doors)
    if array.dtype.kind not in "iu":
        raise ValueError(f"state.doors of dtype {array.dtype} is invalid: expected integer door columns")
    try:
        array = np.broadcast_to(array.astype(np.int64), expected)
    except ValueError:
        raise ValueError(f"state.doors of shape {array.shape} is invalid: expected shape {expected}") from None
    if not params.random_doors:
        if not np.array_equal(array, np.broadcast_to(params.fixed_doors, expected)):
            raise ValueError(
                f"state.doors={array.tolist()} differs from the fixed doors {params.door_cols} of every wall "
                "(doors='fixed'): pass None or those"
            )
        return None
    if array.size and (array.min() < 0 or array.max() >= params.width or np.any(np.diff(array, axis=-1) <= 0)):
        raise ValueError(
            f"state.doors={array.tolist()} is invalid: expected each wall's {params.n_doors} columns distinct, "
            f"ascending and in [0, {params.width})"
        )
    return array.astype(core.POSITION_DTYPE)


def check_states(params: DoorsParams, state: DoorsState, num_envs: int | None = None) -> DoorsState:
    """Validates a state to put an env in (``set_state``); returns it as NumPy int32 arrays.

    Args:
        params: the layout.
        state: one state (scalar fields) when ``num_envs`` is None, else fields
            broadcastable to ``(num_envs,)``; ``doors`` as :func:`check_doors` takes it.
        num_envs: the batch size of a vector env.

    Raises:
        ValueError: naming the field and the env index when a position is off
            the grid or on a wall of its episode, when ``time`` is negative, or
            when ``doors`` is invalid (:func:`check_doors`).
    """
    shape = () if num_envs is None else (num_envs,)
    doors = check_doors(params, state.doors, shape)
    values = DoorsState(*(np.broadcast_to(np.asarray(field, dtype=np.int64), shape) for field in state[:5]))
    layouts = core.layout_grid(params, doors)
    for index in np.ndindex(shape):
        where = "" if num_envs is None else f"[{index[0]}]"
        layout = layouts if doors is None else layouts[index]
        goal = (int(values.goal_row[index]), int(values.goal_col[index]))
        check_position(params, f"state.goal{where}", goal, layout)
        agent = (int(values.agent_row[index]), int(values.agent_col[index]))
        check_position(params, f"state.agent{where}", agent, layout)
    if np.any(values.time < 0):
        raise ValueError(f"state.time={values.time.tolist()} is invalid: expected >= 0")
    return DoorsState(*(field.astype(core.POSITION_DTYPE) for field in values[:5]), doors=doors)


def check_num_envs(num_envs: Any) -> int:
    """``num_envs`` as an int ``>= 1`` or ``ValueError`` naming it."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs={num_envs!r} is invalid: expected an integer >= 1")
    return int(num_envs)


def parse_vector_reset_options(options: Mapping[str, Any] | None, num_envs: int, has_reset: bool) -> np.ndarray:
    """The envs a vector ``reset`` resets: ``options["reset_mask"]`` or all of them (``options["start"]`` is
    :func:`start_mode`'s).

    Raises:
        ValueError: for unknown options or a mask that is not ``(num_envs,)`` bool.
        ResetNeeded: for a partial mask before the first full reset.
    """
    options = dict(options or {})
    mask = options.pop("reset_mask", None)
    options.pop("start", None)  # read by start_mode
    if options:
        raise ValueError(f"reset options {sorted(options)} are unknown: expected only {list(VECTOR_RESET_OPTIONS)}")
    if mask is None:
        return np.ones(num_envs, dtype=bool)
    mask = np.asarray(mask)
    if mask.dtype != np.bool_ or mask.shape != (num_envs,):
        raise ValueError(
            f"options['reset_mask'] must be a bool array of shape ({num_envs},), "
            f"got dtype {mask.dtype} and shape {mask.shape}"
        )
    if not has_reset and not mask.all():
        raise ResetNeeded("The first reset of a vector env must reset every env (no reset_mask)")
    return mask.copy()


def vector_seeds(seed: int | Sequence[int | None] | None, num_envs: int) -> list[int | None]:
    """One seed per env, as ``SyncVectorEnv`` derives them: ``seed + i`` from an int, or a list as given."""
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return [int(seed) + index for index in range(num_envs)]
    seeds = list(seed)
    if len(seeds) != num_envs:
        raise ValueError(f"seed has {len(seeds)} entries, expected num_envs={num_envs}")
    return seeds
