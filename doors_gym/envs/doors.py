"""``Doors-v0``: the NumPy Gymnasium env, a thin stateful shell over :mod:`doors_gym.core`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.error import ResetNeeded
from typing_extensions import Unpack

from doors_gym import core, rendering
from doors_gym.core import NUM_ACTIONS, DoorsParams, DoorsState
from doors_gym.envs.kernel import advance, draw, step_limit
from doors_gym.shell import SingleEnvShell, require_reset
from doors_gym.spaces import EnvKeywords, check_states, make_params, make_spaces, parse_reset_options, start_mode


class DoorsEnv(SingleEnvShell, gym.Env[np.ndarray, int]):
    """Doors: reach the goal across a wall with a few gaps.

    ## Description
    An ``H x W`` grid (default 15 x 15). A wall fills the middle row ``H // 2``
    except ``n_doors`` gaps (default 3, at columns ``k * (W // n_doors)``: 0, 5
    and 10). Each episode the agent starts on the bottom row and the goal sits
    on the top row, their columns drawn independently and uniformly. The rules
    are those of ``doors_gym.core`` (see SPEC.md); ``DoorsJax-v0`` implements
    the same rules in JAX and a parity test holds the two together.

    ## Actions
    ``Discrete(5)``: 0 stay, 1 right, 2 down, 3 left, 4 up. A move is clipped to
    the grid; a move into the wall leaves the agent in place. Any other value
    (out of range, float, string, None, bool) raises ``TypeError`` or
    ``ValueError`` naming the value and the valid actions.

    ## Observation
    The grid flattened row-major, ``H * W`` cell codes (0 empty, 1 agent,
    2 wall, 3 goal): ``MultiDiscrete([4] * H * W)`` of dtype ``int16`` (its
    ``nvec`` too, so clients that add it up never overflow). ``obs_mode`` picks
    a variant: ``"onehot"`` planes, ``"rgb"`` frames or ``"coords"`` (see
    :data:`doors_gym.core.OBS_MODES`). Every observation is a fresh array.
    ``info["distance"]`` is the Euclidean distance from the agent to the goal.

    ## Rewards
    The decrease of the Euclidean distance to the goal, as a float32 value:
    ``|goal - before| - |goal - after|``. A return telescopes to the start
    distance minus the end distance.

    ## Termination and truncation
    Terminated when the agent reaches the goal (the agent's code then covers
    the goal cell). Truncated after ``max_episode_steps`` steps: ``gym.make``
    adds Gymnasium's ``TimeLimit`` of 60 (``2 * (H + W)`` on the default grid)
    unless told otherwise (``-1``: none); the unwrapped env truncates by itself
    only when constructed with ``max_episode_steps``.

    ## Keywords
    ``grid_size=(H, W)`` (``H * W <= 8191``), ``n_walls`` (walls at rows
    ``(k + 1) * H // (n_walls + 1)``, ``H >= 2 * n_walls + 1``), ``n_doors`` (per
    wall), ``doors`` (``"fixed"``: at ``door_cols`` on every wall; ``"random"``:
    each wall's set drawn uniformly at every reset, after the start columns,
    from ``np_random``; then ``state.doors`` holds them), ``door_cols``,
    ``max_episode_steps`` (constructor: ``None`` or ``-1``, no limit of its
    own), ``obs_mode``, ``render_mode`` (``"human"``, ``"rgb_array"``,
    ``"ansi"``), ``cell_pixels`` (pixels per cell in frames and ``rgb``
    observations, default 16), ``colors`` (``{cell code: (r, g, b)}``). A bad
    value raises ``ValueError`` naming the keyword, the value and the allowed
    range.
    ``reset(options={"agent_pos": (r, c), "goal_pos": (r, c)})`` starts from
    chosen cells.

    ## Registered ids
    ``Doors-v0`` (``gym.make``, and ``gym.make_vec`` with the native
    :class:`~doors_gym.envs.vector.DoorsVectorEnv`), also reachable as
    ``"doors_gym:Doors-v0"``; one id per level of :data:`doors_gym.levels.LEVELS`,
    ``Doors-Random-v0``, ``Doors-3Walls-v0``, ``Doors-31x31-v0``,
    ``Doors-63x63-v0``, each with its level's time limit, and their
    ``obs_mode="flat"`` twins ``Doors-Flat-v0``, ``Doors-<level>-Flat-v0``.
    Doors drawn per episode cost a reset a table of the episode's moves
    (``H * W * 5`` entries); fixed doors step through tables built once.
    """

    metadata = {"render_modes": list(rendering.RENDER_MODES), "render_fps": 8}
    _transient = ("_cells",)

    def __init__(self, render_mode: str | None = None, **keywords: Unpack[EnvKeywords]) -> None:
        self.params: DoorsParams = make_params(**keywords, default_limit=None)
        self._check_render_mode(render_mode)
        self.observation_space, self.action_space = make_spaces(self.params)
        self._encode: Callable[[np.ndarray], np.ndarray] | None = None
        if self.params.obs_mode != "grid":
            self._encode = self._encode_state if self.params.obs_mode == "coords" else self._encode_grid

        next_cell = core.all_transitions(self.params)  # with random doors: the moves of a grid without walls
        self._next_cell_table = next_cell
        self._next_cell = next_cell.tolist()
        self._random_doors = self.params.random_doors
        self._doors: np.ndarray | None = None
        self._layout = core.layout_grid(self.params) if not self._random_doors else None
        self._goal_tables: dict[int, tuple[list[list[float]], list[float]]] = {}
        self._limit = step_limit(self.params)
        self._agent: int | None = None
        self._goal = -1
        self._time = 0
        self._obs = np.zeros(self.params.num_cells, dtype=core.OBS_DTYPE)
        self._restore()
        self._rewards: list[list[float]] = []
        self._distances: list[float] = []

    def _restore(self) -> None:
        # Steps write the grid through a memoryview: a Python int into an int16 cell without NumPy's
        # indexing takes about half the time of ``self._obs[cell] = code``. A memoryview does not pickle.
        self._cells = memoryview(self._obs)

    def _tables_for_goal(self, goal: int) -> tuple[list[list[float]], list[float]]:
        """Rewards of every (cell, action) and distances of every cell, for one goal cell."""
        tables = self._goal_tables.get(goal)
        if tables is None and self._random_doors:
            return self._episode_tables(goal)
        if tables is None:
            if len(self._goal_tables) >= 4 * self.params.width:
                self._goal_tables.clear()
            distances = core.distances_to(self.params, *divmod(goal, self.params.width))
            rewards = core.reward(distances[:, None], distances[self._next_cell_table])
            tables = self._goal_tables[goal] = (rewards.tolist(), distances.tolist())
        return tables

    def _episode_tables(self, goal: int) -> tuple[list[list[float]], list[float]]:
        """Random doors: this episode's moves (walls block), rewards and distances, for its layout and goal."""
        open_next = self._next_cell_table
        blocked = self._layout[open_next] == core.WALL
        next_cell = np.where(blocked, np.arange(self.params.num_cells, dtype=open_next.dtype)[:, None], open_next)
        distances = core.distances_to(self.params, *divmod(goal, self.params.width))
        self._next_cell = next_cell.tolist()
        return core.reward(distances[:, None], distances[next_cell]).tolist(), distances.tolist()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Starts an episode; ``options`` may fix ``agent_pos`` and/or ``goal_pos``, or ask for
        ``start="anywhere"`` (a training-only start: the agent's row drawn from :func:`doors_gym.core.start_rows`)."""
        super().reset(seed=seed)
        positions = parse_reset_options(self.params, options)
        agent_col, goal_col = core.start_columns(self.params, int(self.np_random.integers(0, self.params.width**2)))
        doors = core.sample_doors(self.params, self.np_random) if self._random_doors else None
        agent_row = self.params.height - 1
        if start_mode(options) == "anywhere":  # drawn after the default start's draws, which it leaves as they were
            rows = core.start_rows(self.params)
            agent_row = int(rows[self.np_random.integers(0, rows.size)])
        agent_row, agent_col = positions.get("agent_pos", (agent_row, agent_col))
        goal_row, goal_col = positions.get("goal_pos", (0, goal_col))
        width = self.params.width
        self._start(agent_row * width + agent_col, goal_row * width + goal_col, 0, doors)
        if self.render_mode == "human":
            self.render()
        return self._observe(), {"distance": self._distances[self._agent]}

    def _start(self, agent: int, goal: int, time: int, doors: np.ndarray | None = None) -> None:
        self._agent, self._goal, self._time = agent, goal, time
        if self._random_doors:
            self._doors = doors
            self._layout = core.layout_grid(self.params, doors)
        self._rewards, self._distances = self._tables_for_goal(goal)
        self._obs[:] = self._layout
        draw(self._cells, agent, goal)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Moves the agent; returns ``(obs, reward, terminated, truncated, info)``."""
        agent = self._agent
        if agent is None:
            raise ResetNeeded("Cannot call env.step() before calling env.reset()")
        if action.__class__ is not int or not 0 <= action < NUM_ACTIONS:
            action = core.validate_action(action)
        new = self._next_cell[agent][action]
        self._agent = new
        self._time = time = self._time + 1
        terminated, truncated = advance(self._cells, agent, new, self._goal, time, self._limit)
        if self._window is not None:
            self.render()
        obs = self._obs
        return (
            obs.copy() if self._encode is None else self._encode(obs),
            self._rewards[agent][action],
            terminated,
            truncated,
            {"distance": self._distances[new]},
        )

    @property
    def state(self) -> DoorsState:
        """The current state as int32 NumPy scalars and, with random doors, its ``(n_walls, n_doors)`` doors
        (a snapshot, not a view)."""
        if self._agent is None:
            raise ResetNeeded("Cannot read env.state before calling env.reset()")
        agent_row, agent_col = divmod(self._agent, self.params.width)
        goal_row, goal_col = divmod(self._goal, self.params.width)
        doors = None if self._doors is None else self._doors.copy()
        return DoorsState(*(np.int32(v) for v in (agent_row, agent_col, goal_row, goal_col, self._time)), doors=doors)

    def set_state(self, state: DoorsState) -> np.ndarray:
        """Puts the env in ``state`` (e.g. one taken from ``DoorsJax-v0``, doors included); returns its observation."""
        checked = check_states(self.params, state)
        agent_row, agent_col, goal_row, goal_col, time = (int(field) for field in checked[:5])
        width = self.params.width
        self._start(agent_row * width + agent_col, goal_row * width + goal_col, time, checked.doors)
        return self._observe()

    def _observe(self) -> np.ndarray:
        """The observation of the current state in ``params.obs_mode`` (a fresh array)."""
        return self._obs.copy() if self._encode is None else self._encode(self._obs)

    def _encode_grid(self, grid: np.ndarray) -> np.ndarray:
        return core.encode_grid(self.params, grid)

    def _encode_state(self, grid: np.ndarray) -> np.ndarray:
        return core.coords_observation(self.state)

    def _grid(self) -> np.ndarray:
        require_reset(self._agent is not None)
        return self._obs.reshape(self.params.grid_size)
