"""``DoorsJax-v0``: thin Gymnasium shells over the pure JAX functions.

Gymnasium's own ``FunctionalJaxEnv`` drops params and never truncates, and its
vector env autoresets only a single-array state, recompiles as batch sizes
vary, keeps the reward on reset steps and cannot render. These shells pass the
params through, report truncation, autoreset a pytree state with one ``where``
per field and compile each function once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from typing_extensions import Unpack

from doors_gym import core, rendering
from doors_gym.core import DoorsParams, DoorsState
from doors_gym.jax import functional as F
from doors_gym.shell import SingleEnvShell, VectorEnvShell, require_reset
from doors_gym.spaces import (
    EnvKeywords,
    check_num_envs,
    check_states,
    make_params,
    parse_reset_options,
    parse_vector_reset_options,
    start_mode,
)

ARRAY_TYPES = ("numpy", "jax")


def _validate_array_type(array_type: str) -> None:
    if array_type not in ARRAY_TYPES:
        raise ValueError(f"array_type={array_type!r} is not supported: expected one of {list(ARRAY_TYPES)}")


def _seed_key(seed: int | None, np_random: np.random.Generator) -> jax.Array:
    """A JAX key from ``seed``, or from the env's NumPy generator when ``seed`` is None."""
    if seed is None:
        seed = int(np_random.integers(0, 2**32 - 1))
    return jax.random.key(seed)


class DoorsJaxEnv(SingleEnvShell, gym.Env):
    """Doors with the JAX rules, one env behind the plain Gymnasium API.

    Same rules, spaces, keywords, reward and ``info`` as ``Doors-v0`` (see
    :class:`doors_gym.envs.doors.DoorsEnv`), computed by jitted pure functions.
    ``array_type="numpy"`` (default) returns NumPy observations; ``"jax"``
    returns JAX arrays and sets ``metadata["jax"]`` so Gymnasium's tools
    convert them. Truncation: ``gym.make`` adds a ``TimeLimit`` (60 by default);
    constructed with ``max_episode_steps`` the env truncates by itself.
    Actions are validated on the host with the same errors as ``Doors-v0``.

    Registered as ``DoorsJax-v0`` (``gym.make`` and ``gym.make_vec``), and as
    ``DoorsJax-<level>-v0`` / ``DoorsJax-<level>-Flat-v0`` for every level of
    :data:`doors_gym.levels.LEVELS`. With ``doors="random"`` the state's
    ``doors`` holds the episode's door columns; each reset draws new ones.
    """

    metadata = {"render_modes": list(rendering.RENDER_MODES), "render_fps": 8, "jax": False}

    def __init__(
        self,
        render_mode: str | None = None,
        array_type: Literal["numpy", "jax"] = "numpy",
        **keywords: Unpack[EnvKeywords],
    ) -> None:
        _validate_array_type(array_type)
        params = make_params(**keywords, default_limit=None)
        self._check_render_mode(render_mode)
        self.func_env = F.DoorsFuncEnv.from_params(params)
        self.params: DoorsParams = params
        self.observation_space = self.func_env.observation_space
        self.action_space = self.func_env.action_space
        self.metadata = {**type(self).metadata, "jax": array_type == "jax"}
        self.array_type = array_type
        self._jit_functions()
        self._key: jax.Array | None = None
        self._state: DoorsState | None = None
        self._obs: jax.Array | None = None

    env_id = "DoorsJax-v0"
    _transient = ("_reset_fn", "_step_fn")

    def _jit_functions(self) -> None:
        self._reset_fn = jax.jit(F.reset, static_argnums=1)
        self._step_fn = jax.jit(F.env_step, static_argnums=2)

    _restore = _jit_functions

    def _out(self, array: jax.Array) -> Any:
        return np.array(array) if self.array_type == "numpy" else array

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Starts an episode; ``options`` may fix ``agent_pos`` / ``goal_pos`` or set ``start`` as in ``Doors-v0``."""
        super().reset(seed=seed)
        positions = parse_reset_options(self.params, options)
        if seed is not None or self._key is None:
            self._key = _seed_key(seed, self.np_random)
        self._key, reset_key = jax.random.split(self._key)
        obs, state = self._reset_fn(reset_key, self.params)
        if start_mode(options) == "anywhere":
            self._key, row_key = jax.random.split(self._key)
            state = F.start_anywhere(row_key, state, jnp.bool_(True), self.params)
            obs = F.observation(state, self.params)
        if positions:
            agent_row, agent_col = positions.get("agent_pos", (state.agent_row, state.agent_col))
            goal_row, goal_col = positions.get("goal_pos", (state.goal_row, state.goal_col))
            positions = (jnp.int32(v) for v in (agent_row, agent_col, goal_row, goal_col, 0))
            state = DoorsState(*positions, doors=state.doors)
            obs = F.observation(state, self.params)
        self._state, self._obs = state, obs
        if self.render_mode == "human":
            self.render()
        return self._out(obs), {"distance": float(core.state_distance(state, jnp))}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Moves the agent; returns ``(obs, reward, terminated, truncated, info)``."""
        if self._state is None:
            raise ResetNeeded("Cannot call env.step() before calling env.reset()")
        action = core.validate_action(action)
        obs, state, reward, terminated, truncated, info = self._step_fn(self._state, np.int32(action), self.params)
        self._state, self._obs = state, obs
        if self._window is not None:
            self.render()
        return self._out(obs), float(reward), bool(terminated), bool(truncated), {"distance": float(info["distance"])}

    @property
    def state(self) -> DoorsState:
        """The current :class:`DoorsState` (int32 JAX scalars, immutable)."""
        if self._state is None:
            raise ResetNeeded("Cannot read env.state before calling env.reset()")
        return self._state

    def set_state(self, state: DoorsState) -> Any:
        """Puts the env in ``state`` (e.g. one taken from ``Doors-v0``); returns its observation."""
        self._state = core.map_state(jnp.asarray, check_states(self.params, state))
        self._obs = F.observation(self._state, self.params)
        return self._out(self._obs)

    def _grid(self) -> np.ndarray:
        require_reset(self._state is not None)
        state = core.map_state(np.asarray, self._state)
        return core.grid_observation(self.params, state).reshape(self.params.grid_size)


def _vector_step(
    key: jax.Array, state: DoorsState, needs_reset: jax.Array, actions: jax.Array, params: DoorsParams
) -> tuple[jax.Array, tuple[jax.Array, DoorsState, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]]:
    """The whole vector step, compiled once: next-step autoreset over a pytree state."""
    key, start_key = jax.random.split(key)
    next_state, reward, terminated, truncated, distance = jax.vmap(F.transition_parts, in_axes=(0, 0, None))(
        state, actions, params
    )
    fresh = F.draw_initial(start_key, needs_reset.shape, params)
    next_state = F.where_state(needs_reset, fresh, next_state)
    kept = ~needs_reset
    reward = jnp.where(kept, reward, jnp.float32(0.0))
    terminated = terminated & kept
    truncated = truncated & kept
    distance = jnp.where(kept, distance, core.state_distance(fresh, jnp))
    obs = jax.vmap(F.observation, in_axes=(0, None))(next_state, params)
    return key, (obs, next_state, reward, terminated, truncated, distance, terminated | truncated)


def _vector_reset(
    key: jax.Array, state: DoorsState, needs_reset: jax.Array, mask: jax.Array, params: DoorsParams, anywhere: bool
) -> tuple[jax.Array, tuple[jax.Array, DoorsState, jax.Array, jax.Array]]:
    key, start_key = jax.random.split(key)
    fresh = F.draw_initial(start_key, mask.shape, params)
    if anywhere:
        key, row_key = jax.random.split(key)
        fresh = F.start_anywhere(row_key, fresh, mask, params)
    state = F.where_state(mask, fresh, state)
    return key, (F.observation(state, params), state, core.state_distance(state, jnp), needs_reset & ~mask)


class DoorsJaxVectorEnv(VectorEnvShell, gym.vector.VectorEnv):
    """``num_envs`` Doors envs in JAX: one jitted, vmapped step with next-step autoreset.

    ``gym.make_vec("DoorsJax-v0", num_envs=N)`` builds it. The step after an
    env terminates or truncates resets it and returns reward 0 and both flags
    False (``metadata["autoreset_mode"]`` is ``NEXT_STEP``). Truncation after
    ``max_episode_steps`` (60 through ``make_vec``). Like the single env, it
    returns NumPy arrays by default (``array_type="numpy"``: rewards and
    distances float64, as ``SyncVectorEnv``); ``array_type="jax"`` returns JAX
    arrays throughout, info included (rewards float32) and sets
    ``metadata["jax"]``. Each function compiles once per layout and
    ``num_envs``; later steps never recompile.

    Randomness: ``reset(seed=s)`` keys the env with ``jax.random.key(s)``; each
    step splits that key once for the whole batch (not once per env). Starts
    follow the same distribution as ``Doors-v0`` but not the same draws.
    Actions are checked on the host (dtype, shape, range) unless
    ``validate_actions=False``.
    """

    metadata = {
        "render_modes": ["rgb_array", "ansi"],
        "render_fps": 8,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "jax": False,
    }

    def __init__(
        self,
        num_envs: int,
        render_mode: str | None = None,
        array_type: Literal["numpy", "jax"] = "numpy",
        validate_actions: bool = True,
        **keywords: Unpack[EnvKeywords],
    ) -> None:
        self.num_envs = check_num_envs(num_envs)
        _validate_array_type(array_type)
        params = make_params(**keywords, default_limit=core.DEFAULT_TIME_LIMIT)
        self._check_render_mode(render_mode)
        self.func_env = F.DoorsFuncEnv.from_params(params)
        self.params: DoorsParams = params
        self.single_observation_space = self.func_env.observation_space
        self.single_action_space = self.func_env.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**type(self).metadata, "jax": array_type == "jax"}
        self.array_type = array_type
        self.validate_actions = validate_actions
        self._jit_functions()
        self._key: jax.Array | None = None
        self._state: DoorsState | None = None
        self._obs: jax.Array | None = None
        self._needs_reset = jnp.zeros(self.num_envs, dtype=bool)

    _transient = ("_reset_fn", "_step_fn")  # jitted functions do not pickle; _restore jits them again

    def _jit_functions(self) -> None:
        self._step_fn = jax.jit(_vector_step, static_argnums=4)
        self._reset_fn = jax.jit(_vector_reset, static_argnums=(4, 5))

    _restore = _jit_functions

    def _out(self, array: Any) -> Any:
        return np.asarray(array) if self.array_type == "numpy" else jnp.asarray(array)

    def _floats(self, array: Any) -> Any:
        """Rewards and distances: float64 NumPy (as ``SyncVectorEnv``) or float32 JAX arrays."""
        return np.asarray(array, dtype=np.float64) if self.array_type == "numpy" else jnp.asarray(array)

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Resets every env (or those in ``options["reset_mask"]``; ``options["start"]`` as in ``Doors-v0``)."""
        super().reset(seed=seed if seed is None or isinstance(seed, (int, np.integer)) else None)
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(
                f"seed={seed!r} is not supported: DoorsJax-v0 draws every env from one key, pass one int seed"
            )
        mask = parse_vector_reset_options(options, self.num_envs, self._state is not None)
        if seed is not None or self._key is None:
            self._key = _seed_key(None if seed is None else int(seed), self.np_random)
        state = self._state
        if state is None:
            state = F.draw_initial(jax.random.key(0), (self.num_envs,), self.params)  # replaced: mask is all True
        anywhere = start_mode(options) == "anywhere"
        self._key, (obs, state, distance, needs_reset) = self._reset_fn(
            self._key, state, self._needs_reset, jnp.asarray(mask), self.params, anywhere
        )
        self._state, self._obs, self._needs_reset = state, obs, needs_reset
        # As SyncVectorEnv: info covers only the envs that were reset.
        distance = np.where(mask, np.asarray(distance), 0).astype(core.REWARD_DTYPE)
        return self._out(obs), {"distance": self._floats(distance), "_distance": self._out(mask)}

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Steps every env; an env that ended on the previous step is reset instead."""
        if self._state is None:
            raise ResetNeeded("Cannot call env.step() before calling env.reset()")
        if isinstance(actions, jax.Array):
            if self.validate_actions:
                core.validate_actions(np.asarray(actions), self.num_envs)
            actions = actions.astype(jnp.int32)
        else:
            if self.validate_actions:
                actions = core.validate_actions(actions, self.num_envs)
            actions = np.asarray(actions, dtype=np.int32)
        self._key, (obs, state, reward, terminated, truncated, distance, needs_reset) = self._step_fn(
            self._key, self._state, self._needs_reset, actions, self.params
        )
        self._state, self._obs, self._needs_reset = state, obs, needs_reset
        out = self._out
        info = {"distance": self._floats(distance), "_distance": out(np.ones(self.num_envs, dtype=bool))}
        return out(obs), self._floats(reward), out(terminated), out(truncated), info

    @property
    def state(self) -> DoorsState:
        """The current states: :class:`DoorsState` of ``(num_envs,)`` int32 JAX arrays."""
        if self._state is None:
            raise ResetNeeded("Cannot read env.state before calling env.reset()")
        return self._state

    def set_state(self, state: DoorsState, mask: np.ndarray | None = None) -> Any:
        """Puts envs in ``state`` (``(num_envs,)`` arrays); ``mask`` picks which. Returns the observations."""
        if self._state is None:
            raise ResetNeeded("Cannot call set_state before calling env.reset()")
        new = check_states(self.params, state, self.num_envs)
        select = np.ones(self.num_envs, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        self._state = F.where_state(jnp.asarray(select), core.map_state(jnp.asarray, new), self._state)
        self._needs_reset = self._needs_reset & ~jnp.asarray(select)
        self._obs = F.observation(self._state, self.params)
        return self._out(self._obs)

    def _grids(self) -> np.ndarray:
        require_reset(self._state is not None)
        state = core.map_state(np.asarray, self._state)
        return core.grid_observation(self.params, state).reshape((self.num_envs, *self.params.grid_size))
