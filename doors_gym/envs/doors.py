"""``Doors-v0``: the NumPy Gymnasium env, a thin stateful shell over :mod:`doors_gym.core`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from doors_gym import core, rendering
from doors_gym.core import AGENT, EMPTY, GOAL, NUM_ACTIONS, WALL, DoorsParams, DoorsState

RESET_OPTIONS = ("agent_pos", "goal_pos")


def make_spaces(params: DoorsParams) -> tuple[spaces.MultiDiscrete, spaces.Discrete]:
    """The observation and action spaces that both implementations declare."""
    observation_space = spaces.MultiDiscrete(
        np.full(params.num_cells, core.NUM_CELL_TYPES, dtype=core.OBS_DTYPE), dtype=core.OBS_DTYPE
    )
    return observation_space, spaces.Discrete(NUM_ACTIONS)


def parse_reset_options(params: DoorsParams, options: Mapping[str, Any] | None) -> dict[str, tuple[int, int]]:
    """Validates ``reset(options=...)``: optional ``agent_pos`` / ``goal_pos`` as ``(row, col)``.

    A position must lie inside the grid and off the wall, and the agent may not
    start on the goal.

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
    layout = params.layout
    positions = {}
    for key in RESET_OPTIONS:
        if key not in options:
            continue
        value = options[key]
        if not core.is_int_pair(value):
            raise ValueError(f"options[{key!r}]={value!r} is invalid: expected (row, col) integers")
        row, col = int(value[0]), int(value[1])
        if not (0 <= row < params.height and 0 <= col < params.width):
            raise ValueError(
                f"options[{key!r}]={value!r} is outside the grid: expected 0 <= row < {params.height}, "
                f"0 <= col < {params.width}"
            )
        if layout[row, col] == WALL:
            raise ValueError(f"options[{key!r}]={value!r} is a wall cell: positions must be off the wall")
        positions[key] = (row, col)
    if positions.get("agent_pos") is not None and positions.get("agent_pos") == positions.get("goal_pos"):
        raise ValueError(
            f"options agent_pos={positions['agent_pos']} equals goal_pos: the agent may not start on the goal"
        )
    return positions


class DoorsEnv(gym.Env[np.ndarray, int]):
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
    2 wall, 3 goal): ``MultiDiscrete([4] * H * W)`` of dtype ``int8``. Every
    observation is a fresh array. ``info["distance"]`` is the Euclidean distance
    from the agent to the goal.

    ## Rewards
    The decrease of the Euclidean distance to the goal, as a float32 value:
    ``|goal - before| - |goal - after|``. A return telescopes to the start
    distance minus the end distance.

    ## Termination and truncation
    Terminated when the agent reaches the goal (the agent's code then covers
    the goal cell). Truncated after ``max_episode_steps`` steps: ``gym.make``
    adds a ``TimeLimit`` of 60 (``2 * (H + W)`` on the default grid) unless told
    otherwise; the unwrapped env truncates only when constructed with
    ``max_episode_steps``.

    ## Keywords
    ``grid_size=(H, W)``, ``n_doors``, ``door_cols``, ``max_episode_steps``
    (``None``: no limit of its own), ``render_mode`` (``"human"``,
    ``"rgb_array"``, ``"ansi"``), ``cell_pixels`` (pixels per cell in frames,
    default 16), ``colors`` (``{cell code: (r, g, b)}``). A bad value raises
    ``ValueError`` naming the keyword, the value and the allowed range.
    ``reset(options={"agent_pos": (r, c), "goal_pos": (r, c)})`` starts from
    chosen cells.

    ## Registered ids
    ``Doors-v0`` (``gym.make``, and ``gym.make_vec`` with the native
    :class:`~doors_gym.envs.vector.DoorsVectorEnv`), also reachable as
    ``"doors_gym:Doors-v0"``.
    """

    metadata = {"render_modes": list(rendering.RENDER_MODES), "render_fps": 8}

    def __init__(
        self,
        grid_size: Sequence[int] = core.DEFAULT_GRID_SIZE,
        n_doors: int | None = None,
        door_cols: Sequence[int] | None = None,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        cell_pixels: int = rendering.DEFAULT_CELL_PIXELS,
        colors: Mapping[int, Sequence[int]] | None = None,
    ) -> None:
        self.params = DoorsParams(
            grid_size=tuple(grid_size) if core.is_int_pair(grid_size) else grid_size,
            n_doors=n_doors,
            door_cols=door_cols,
            max_episode_steps=max_episode_steps,
        )
        core.validate_render_mode(render_mode, rendering.RENDER_MODES)
        self.render_mode = render_mode
        self.cell_pixels = rendering.validate_cell_pixels(cell_pixels)
        self.palette = rendering.make_palette(colors)
        self.observation_space, self.action_space = make_spaces(self.params)

        next_cell = core.all_transitions(self.params)
        self._next_cell_table = next_cell
        self._next_cell = next_cell.tolist()
        self._layout = self.params.layout.reshape(-1)
        self._goal_tables: dict[int, tuple[list[list[float]], list[float]]] = {}
        self._limit = self.params.max_episode_steps or np.iinfo(np.int64).max
        self._agent: int | None = None
        self._goal = -1
        self._time = 0
        self._obs = np.zeros(self.params.num_cells, dtype=core.OBS_DTYPE)
        self._rewards: list[list[float]] = []
        self._distances: list[float] = []
        self._window: rendering.HumanWindow | None = None

    def _tables_for_goal(self, goal: int) -> tuple[list[list[float]], list[float]]:
        """Rewards of every (cell, action) and distances of every cell, for one goal cell."""
        tables = self._goal_tables.get(goal)
        if tables is None:
            if len(self._goal_tables) >= 4 * self.params.width:
                self._goal_tables.clear()
            distances = core.distances_to(self.params, *divmod(goal, self.params.width))
            rewards = core.reward(distances[:, None], distances[self._next_cell_table])
            tables = self._goal_tables[goal] = (rewards.tolist(), distances.tolist())
        return tables

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Starts an episode; ``options`` may fix ``agent_pos`` and/or ``goal_pos``."""
        super().reset(seed=seed)
        positions = parse_reset_options(self.params, options)
        agent_col, goal_col = core.start_columns(self.params, int(self.np_random.integers(0, self.params.width**2)))
        agent_row, agent_col = positions.get("agent_pos", (self.params.height - 1, agent_col))
        goal_row, goal_col = positions.get("goal_pos", (0, goal_col))
        width = self.params.width
        self._start(agent_row * width + agent_col, goal_row * width + goal_col, 0)
        if self.render_mode == "human":
            self.render()
        return self._obs.copy(), {"distance": self._distances[self._agent]}

    def _start(self, agent: int, goal: int, time: int) -> None:
        self._agent, self._goal, self._time = agent, goal, time
        self._rewards, self._distances = self._tables_for_goal(goal)
        obs = self._obs
        obs[:] = self._layout
        obs[goal] = GOAL
        obs[agent] = AGENT

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Moves the agent; returns ``(obs, reward, terminated, truncated, info)``."""
        agent = self._agent
        if agent is None:
            raise ResetNeeded("Cannot call env.step() before calling env.reset()")
        if action.__class__ is not int or not 0 <= action < NUM_ACTIONS:
            action = core.validate_action(action)
        new = self._next_cell[agent][action]
        obs = self._obs
        obs[agent] = GOAL if agent == self._goal else EMPTY
        obs[new] = AGENT
        self._agent = new
        self._time += 1
        if self._window is not None:
            self.render()
        return (
            obs.copy(),
            self._rewards[agent][action],
            new == self._goal,
            self._time >= self._limit,
            {"distance": self._distances[new]},
        )

    @property
    def state(self) -> DoorsState:
        """The current state as int32 NumPy scalars (a snapshot, not a view)."""
        if self._agent is None:
            raise ResetNeeded("Cannot read env.state before calling env.reset()")
        agent_row, agent_col = divmod(self._agent, self.params.width)
        goal_row, goal_col = divmod(self._goal, self.params.width)
        return DoorsState(*(np.int32(v) for v in (agent_row, agent_col, goal_row, goal_col, self._time)))

    def set_state(self, state: DoorsState) -> np.ndarray:
        """Puts the env in ``state`` (e.g. one taken from ``DoorsJax-v0``); returns its observation."""
        values = [int(np.asarray(v)) for v in state]
        agent_row, agent_col, goal_row, goal_col, time = values
        parse_reset_options(self.params, {"goal_pos": (goal_row, goal_col)})
        parse_reset_options(self.params, {"agent_pos": (agent_row, agent_col)})
        if time < 0:
            raise ValueError(f"state.time={time} is invalid: expected >= 0")
        width = self.params.width
        self._start(agent_row * width + agent_col, goal_row * width + goal_col, time)
        return self._obs.copy()

    def render(self) -> np.ndarray | str | None:
        """An RGB frame (``rgb_array``), a text grid (``ansi``) or a window update (``human``)."""
        if self.render_mode is None:
            gym.logger.warn(
                "You are calling render method without specifying any render mode. "
                'You can specify the render_mode at initialization, e.g. gym.make("Doors-v0", render_mode="rgb_array")'
            )
            return None
        if self._agent is None:
            raise ResetNeeded("Cannot call env.render() before calling env.reset()")
        grid = self._obs.reshape(self.params.grid_size)
        if self.render_mode == "ansi":
            return rendering.grid_to_ansi(grid)
        frame = rendering.grid_to_rgb(grid, self.palette, self.cell_pixels)
        if self.render_mode == "rgb_array":
            return frame
        if self._window is None:
            self._window = rendering.HumanWindow("Doors", self.metadata["render_fps"])
        if not self._window.show(frame):
            self._window = None
        return None

    def close(self) -> None:
        """Closes the pygame window if one is open; safe to call twice."""
        if self._window is not None:
            self._window.close()
            self._window = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_window"] = None
        return state
