"""The native vector env of ``Doors-v0``: every env steps in one set of NumPy array operations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding
from gymnasium.vector.utils import batch_space
from typing_extensions import Unpack

try:
    from gymnasium.vector import AutoresetMode
except ImportError:  # Gymnasium 0.29: DoorsVectorEnv refuses to build, in one line (require_gymnasium_1)
    AutoresetMode = None

from doors_gym import core
from doors_gym.core import DoorsParams, DoorsState
from doors_gym.envs.kernel import advance, draw, step_limit
from doors_gym.extras import require_gymnasium_1
from doors_gym.shell import VectorEnvShell, require_reset
from doors_gym.spaces import (
    EnvKeywords,
    check_num_envs,
    check_states,
    make_params,
    make_spaces,
    parse_vector_reset_options,
    start_mode,
    vector_seeds,
)

VECTOR_RENDER_MODES = ("rgb_array", "ansi")
_MAX_TABLE_CELLS = 2048
"""Grids up to this many cells look distances up in a ``cells x cells`` float32 table (16 MiB at most)."""


class DoorsVectorEnv(VectorEnvShell, gym.vector.VectorEnv):
    """``num_envs`` Doors envs stepped together with NumPy array operations.

    The rules, spaces and keywords are those of :class:`~doors_gym.envs.doors.DoorsEnv`;
    ``gym.make_vec("Doors-v0", num_envs=N)`` builds this class. It behaves like
    ``SyncVectorEnv`` over ``N`` ``gym.make("Doors-v0")`` envs, and gives the
    same results for the same seeds (each env keeps its own generator seeded
    ``seed + i``, as ``SyncVectorEnv`` seeds its envs):

    - next-step autoreset (``metadata["autoreset_mode"]``): the step after an
      env terminates or truncates resets it and returns its first observation
      with reward 0 and both flags False;
    - truncation after ``max_episode_steps`` steps (60 through ``make_vec``);
    - ``info["distance"]`` with its ``info["_distance"]`` mask (after a masked
      reset, only the reset envs are marked);
    - ``reset(options={"reset_mask": mask})`` resets only the masked envs.

    Only drawing the start columns of the envs that reset loops in Python (one
    generator call each, the price of matching ``SyncVectorEnv``); stepping is
    array operations over all envs. Observations have the dtype of the
    observation space, rewards and distances are float64 (float32 values) and
    flags bool, as ``SyncVectorEnv`` returns them; each returned array is fresh, unless
    ``copy=False`` (``gym.make_vec("Doors-v0", N, copy=False)``, as ``SyncVectorEnv(..., copy=False)``): then
    the ``grid`` observations are the env's own buffer, written once per step and overwritten by the next
    one (copy what you keep), which saves a fresh allocation of ``num_envs * H * W`` int16 per step.
    """

    metadata = {
        "render_modes": list(VECTOR_RENDER_MODES),
        "render_fps": 8,
        "autoreset_mode": AutoresetMode and AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self, num_envs: int, render_mode: str | None = None, copy: bool = True, **keywords: Unpack[EnvKeywords]
    ) -> None:
        require_gymnasium_1("the native vector env of Doors-v0 (its autoreset modes)")
        self.num_envs = check_num_envs(num_envs)
        if not isinstance(copy, bool):
            raise ValueError(
                f"copy={copy!r} is invalid: expected True (fresh observations) or False (the env's buffer)"
            )
        self.copy = copy
        self.params: DoorsParams = make_params(**keywords, default_limit=core.DEFAULT_TIME_LIMIT)
        self._check_render_mode(render_mode)
        self.single_observation_space, self.single_action_space = make_spaces(self.params)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

        next_cell = core.all_transitions(self.params)  # with random doors: the moves of a grid without walls
        self._next_cell = next_cell.astype(np.intp).reshape(-1)
        num_cells = self.params.num_cells
        self._distance_table = None
        if num_cells <= _MAX_TABLE_CELLS:
            # (goal, cell) -> distance, flat; small grids step by lookup instead of arithmetic.
            cells = np.arange(num_cells)
            self._distance_table = np.concatenate(
                [core.distances_to(self.params, *divmod(goal, self.params.width)) for goal in cells]
            )
        self._num_cells = num_cells
        self._obs_offset = np.arange(self.num_envs, dtype=np.intp) * num_cells
        self._all_envs = np.ones(self.num_envs, dtype=bool)
        self._random_doors = self.params.random_doors
        self._layout = None if self._random_doors else core.layout_grid(self.params)
        self._doors = np.zeros((self.num_envs, self.params.n_walls, self.params.n_doors), dtype=core.POSITION_DTYPE)
        self._limit = step_limit(self.params)
        self._generators: list[np.random.Generator | None] = [None] * self.num_envs
        self._agent = np.zeros(self.num_envs, dtype=np.intp)
        self._goal = np.zeros(self.num_envs, dtype=np.intp)
        self._time = np.zeros(self.num_envs, dtype=np.int64)
        self._distance = np.zeros(self.num_envs, dtype=core.REWARD_DTYPE)
        self._needs_reset = np.zeros(self.num_envs, dtype=bool)
        self._obs = np.zeros((self.num_envs, self.params.num_cells), dtype=core.OBS_DTYPE)
        self._flat_obs = self._obs.reshape(-1)  # a view: writes land in self._obs
        self._has_reset = False

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every env (or those in ``options["reset_mask"]``); ``seed`` as in ``SyncVectorEnv``."""
        seeds = vector_seeds(seed, self.num_envs)
        mask = parse_vector_reset_options(options, self.num_envs, self._has_reset)
        anywhere = start_mode(options) == "anywhere"
        for index in np.flatnonzero(mask):
            if seeds[index] is not None or self._generators[index] is None:
                self._generators[index], _ = seeding.np_random(seeds[index])
        self._reset_envs(np.flatnonzero(mask), anywhere)
        self._has_reset = True
        # As SyncVectorEnv: info covers only the envs that were reset.
        return self._observe(), {"distance": np.where(mask, self._distance, 0).astype(np.float64), "_distance": mask}

    def _reset_envs(self, indices: np.ndarray, anywhere: bool = False) -> None:
        """Draws new starts for ``indices`` (one generator call per env, as the single env does); ``anywhere``:
        then each env's agent row from :func:`doors_gym.core.start_rows`, as the single env's ``start="anywhere"``."""
        if indices.size == 0:
            return
        width = self.params.width
        num_starts = width * width
        generators = self._generators
        if self._random_doors:  # the start, then the doors, from each env's generator (as the single env draws)
            pairs = [(generators[i].integers(0, num_starts), self._sample_doors(generators[i])) for i in indices]
            draws, doors = np.array([draw for draw, _ in pairs], dtype=np.intp), np.stack([d for _, d in pairs])
        else:
            draws = np.array([generators[i].integers(0, num_starts) for i in indices.tolist()], dtype=np.intp)
            doors = None
        agent_col, goal_col = core.start_columns(self.params, draws)
        agent_row: Any = self.params.height - 1
        if anywhere:
            rows = core.start_rows(self.params)
            agent_row = rows[np.array([generators[i].integers(0, rows.size) for i in indices.tolist()], dtype=np.intp)]
        agent = agent_row * width + agent_col
        goal = goal_col
        self._start(indices, agent, goal, np.zeros(indices.size, dtype=np.int64), doors)

    def _sample_doors(self, generator: np.random.Generator) -> np.ndarray:
        return core.sample_doors(self.params, generator)

    def _start(
        self, indices: np.ndarray, agent: np.ndarray, goal: np.ndarray, time: np.ndarray, doors: np.ndarray | None
    ) -> None:
        self._agent[indices] = agent
        self._goal[indices] = goal
        self._time[indices] = time
        self._needs_reset[indices] = False
        self._distance[indices] = self._distances(self._agent[indices], self._goal[indices])
        if self._random_doors:
            self._doors[indices] = doors
            self._obs[indices] = core.layout_grid(self.params, doors)
        else:
            self._obs[indices] = self._layout
        offset = self._obs_offset[indices]
        draw(self._flat_obs, offset + agent, offset + goal)

    def _distances(self, agent: np.ndarray, goal: np.ndarray) -> np.ndarray:
        if self._distance_table is not None:
            return self._distance_table[goal * self._num_cells + agent]
        agent_row, agent_col = np.divmod(agent, self.params.width)
        goal_row, goal_col = np.divmod(goal, self.params.width)
        return core.distance(agent_row, agent_col, goal_row, goal_col)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every env; an env that ended on the previous step is reset instead."""
        if not self._has_reset:
            raise ResetNeeded("Cannot call env.step() before calling env.reset()")
        actions = core.validate_actions(actions, self.num_envs)
        old = self._agent
        goal = self._goal
        new = self._next_cell[old * core.NUM_ACTIONS + actions]
        offset = self._obs_offset
        if self._random_doors:  # the moves ignore walls: each env's grid shows its own
            new = np.where(self._flat_obs[offset + new] == core.WALL, old, new)
        distance = self._distances(new, goal)
        rewards = core.reward(self._distance, distance)
        self._agent = new
        self._distance = distance
        self._time += 1
        terminated, truncated = advance(
            self._flat_obs, offset + old, offset + new, offset + goal, self._time, self._limit
        )

        if self._needs_reset.any():
            resetting = self._needs_reset.nonzero()[0]
            self._reset_envs(resetting)
            rewards[resetting] = 0.0
            terminated[resetting] = False
            truncated[resetting] = False
        self._needs_reset = terminated | truncated
        # float64 rewards and distances, as SyncVectorEnv and AsyncVectorEnv return them (the values are float32's).
        return (
            self._observe(),
            rewards.astype(np.float64),
            terminated,
            truncated,
            {"distance": self._distance.astype(np.float64), "_distance": self._all_envs.copy()},
        )

    def _observe(self) -> np.ndarray:
        """The observations of every env in ``params.obs_mode``: a fresh array, or with ``copy=False`` in the
        ``grid`` mode the env's own buffer, which the next step overwrites."""
        mode = self.params.obs_mode
        if mode == "grid":
            return self._obs.copy() if self.copy else self._obs
        if mode == "coords":
            return core.coords_observation(self.state)
        return core.encode_grid(self.params, self._obs)

    @property
    def state(self) -> DoorsState:
        """The current states as ``(num_envs,)`` int32 arrays (a snapshot)."""
        if not self._has_reset:
            raise ResetNeeded("Cannot read env.state before calling env.reset()")
        agent_row, agent_col = np.divmod(self._agent, self.params.width)
        goal_row, goal_col = np.divmod(self._goal, self.params.width)
        positions = (np.asarray(v, dtype=np.int32) for v in (agent_row, agent_col, goal_row, goal_col, self._time))
        return DoorsState(*positions, doors=self._doors.copy() if self._random_doors else None)

    def set_state(self, state: DoorsState, mask: np.ndarray | None = None) -> np.ndarray:
        """Puts envs in ``state`` (``(num_envs,)`` arrays); ``mask`` picks which. Returns the observations."""
        indices = np.arange(self.num_envs) if mask is None else np.flatnonzero(np.asarray(mask))
        values = check_states(self.params, state, self.num_envs)
        agent_row, agent_col, goal_row, goal_col, time = (field[indices].astype(np.intp) for field in values[:5])
        width = self.params.width
        doors = None if values.doors is None else values.doors[indices]
        self._start(indices, agent_row * width + agent_col, goal_row * width + goal_col, time, doors)
        self._has_reset = True
        return self._observe()

    def _grids(self) -> np.ndarray:
        require_reset(self._has_reset)
        return self._obs.reshape((self.num_envs, *self.params.grid_size))

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release: no windows or processes."""
