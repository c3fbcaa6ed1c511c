"""Doors in JAX: a Gymnasium ``FuncEnv`` and a pure ``reset`` / ``step`` API for jitted loops.

Every function calls the rules in :mod:`doors_gym.core` with ``xp=jax.numpy``.
``DoorsParams`` is registered as a static pytree: pass it to jitted functions
as an argument or close over it; a new layout compiles anew, a repeated one
hits the cache.

Under ``jit`` nothing can raise on values: an action outside ``0..4`` leaves
the agent in place, like ``stay`` (reward 0, the clock still advances). A float
action is refused at trace time with ``TypeError``. :func:`checked_step` reports
out-of-range actions through ``jax.experimental.checkify``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.experimental.functional import FuncEnv
from jax.experimental import checkify

from doors_gym import core, pixels
from doors_gym.core import NUM_ACTIONS, DoorsParams, DoorsState
from doors_gym.spaces import make_spaces

jax.tree_util.register_static(DoorsParams)

DEFAULT_PARAMS = DoorsParams()
PARAM_KEYWORDS = tuple(field.name for field in dataclasses.fields(DoorsParams))
"""The ``DoorsParams`` fields, the keys a :class:`DoorsFuncEnv` takes in ``options``."""

Array = jax.Array
StepResult = tuple[Array, DoorsState, Array, Array, Array, dict[str, Any]]


def _check_action_dtype(action: Any) -> Array:
    action = jnp.asarray(action)
    if not jnp.issubdtype(action.dtype, jnp.integer):
        raise TypeError(
            f"actions of dtype {action.dtype} are not integer actions: valid actions are the integers "
            f"0..{NUM_ACTIONS - 1} (0 stay, 1 right, 2 down, 3 left, 4 up)"
        )
    return action


def initial_from_draw(
    start_index: Array, params: DoorsParams = DEFAULT_PARAMS, doors: Array | None = None
) -> DoorsState:
    """The start state for a draw ``start_index`` uniform over ``[0, W * W)``, int32 fields.

    ``doors``: the episode's door columns ``start_index.shape + (n_walls, n_doors)`` where the doors
    are random (:func:`draw_doors`), None where they are fixed.
    """
    agent_col, goal_col = core.start_columns(params, jnp.asarray(start_index, dtype=jnp.int32))
    return core.initial_state(params, agent_col, goal_col, jnp, doors)


def draw_starts(key: Array, shape: tuple[int, ...], params: DoorsParams = DEFAULT_PARAMS) -> Array:
    """Start draws for ``shape`` episodes from one key: int32 over ``[0, W * W)``.

    One 32-bit word per episode, reduced modulo ``W * W``: half the random bits
    of ``jax.random.randint``, and a departure from uniform of at most
    ``W**2 / 2**32`` (5e-8 on the default grid), far below what any sample can
    detect.
    """
    num_starts = params.width * params.width
    if num_starts > 2**16:
        return jax.random.randint(key, shape, 0, num_starts, dtype=jnp.int32)
    return (jax.random.bits(key, shape, dtype=jnp.uint32) % jnp.uint32(num_starts)).astype(jnp.int32)


def draw_doors(key: Array, shape: tuple[int, ...], params: DoorsParams = DEFAULT_PARAMS) -> Array:
    """JAX's door sampler: ``shape + (n_walls, n_doors)`` int32 columns, ascending per wall.

    Each wall's set is uniform over the ``n_doors``-subsets of ``range(W)``, independently per wall:
    :func:`doors_gym.core.doors_from_ranks` of ranks ``j`` drawn as one 32-bit word modulo ``W - j``
    (a departure from uniform of at most ``W / 2**32``, as in :func:`draw_starts`). NumPy's twin is
    :func:`doors_gym.core.sample_doors` (same rule and distribution, other draws).
    """
    bits = jax.random.bits(key, shape + (params.n_walls, params.n_doors), dtype=jnp.uint32)
    bounds = jnp.asarray(params.width - np.arange(params.n_doors), dtype=jnp.uint32)
    return core.doors_from_ranks(params, (bits % bounds).astype(jnp.int32), jnp)


def draw_initial(key: Array, shape: tuple[int, ...], params: DoorsParams = DEFAULT_PARAMS) -> DoorsState:
    """Start states of ``shape`` episodes from one key: start columns, and doors where they are random.

    With fixed doors the whole key draws the starts (as ``DoorsJax-v0`` always did); with random doors
    it is split once, one piece for the starts and one for the doors.
    """
    if not params.random_doors:
        return initial_from_draw(draw_starts(key, shape, params), params)
    start_key, doors_key = jax.random.split(key)
    return initial_from_draw(draw_starts(start_key, shape, params), params, draw_doors(doors_key, shape, params))


def start_anywhere(key: Array, state: DoorsState, where: Array, params: DoorsParams = DEFAULT_PARAMS) -> DoorsState:
    """``state`` (start states of any batch shape) with the agent's row drawn uniformly from
    :func:`doors_gym.core.start_rows` where ``where`` (bool, the batch shape) holds: the ``start="anywhere"``
    reset of the NumPy envs (a training-only start distribution), its row drawn from ``key``."""
    rows = jnp.asarray(core.start_rows(params))
    drawn = rows[jax.random.randint(key, jnp.shape(where), 0, rows.size)]
    return state._replace(agent_row=jnp.where(where, drawn, state.agent_row))


def initial(key: Array, params: DoorsParams = DEFAULT_PARAMS) -> DoorsState:
    """A random start state (agent column and goal column independent and uniform; doors where random)."""
    return draw_initial(key, (), params)


def observation(state: DoorsState, params: DoorsParams = DEFAULT_PARAMS) -> Array:
    """The observation of ``state`` in ``params.obs_mode``: by default the flat grid, int16 ``(H * W,)``.

    Batched states give a leading batch axis. See :data:`doors_gym.core.OBS_MODES` for the variants.
    """
    return core.observation(params, state, jnp)


def reset(key: Array, params: DoorsParams = DEFAULT_PARAMS) -> tuple[Array, DoorsState]:
    """Starts an episode.

    Args:
        key: a PRNG key, used once.
        params: the layout and time limit.

    Returns:
        ``(obs, state)``: int16 ``(H * W,)`` observation and the :class:`DoorsState`.
    """
    state = initial(key, params)
    return observation(state, params), state


def transition_parts(
    state: DoorsState, action: Array, params: DoorsParams = DEFAULT_PARAMS
) -> tuple[DoorsState, Array, Array, Array, Array]:
    """The rules of one transition, without the observation or autoreset.

    Returns:
        ``(next_state, reward, terminated, truncated, distance_after)``.
    """
    action = _check_action_dtype(action)
    next_state = core.transition(params, state, action, jnp)
    distance_after = core.state_distance(next_state, jnp)
    reward = core.reward(core.state_distance(state, jnp), distance_after)
    return next_state, reward, core.terminated(next_state), core.truncated(params, next_state), distance_after


def env_step(state: DoorsState, action: Array, params: DoorsParams = DEFAULT_PARAMS) -> StepResult:
    """One transition without autoreset (no randomness, no key).

    Returns:
        ``(obs, next_state, reward, terminated, truncated, info)``: int16 obs,
        float32 reward, bool flags and ``info["distance"]`` (float32) after the move.
    """
    next_state, reward, terminated, truncated, distance = transition_parts(state, action, params)
    return observation(next_state, params), next_state, reward, terminated, truncated, {"distance": distance}


def where_state(condition: Array, if_true: DoorsState, if_false: DoorsState) -> DoorsState:
    """Picks between two states field by field (a pytree-safe select for autoreset).

    ``condition`` has the states' batch shape; it is broadcast over the trailing axes of ``doors``.
    """

    def select(a: Array, b: Array) -> Array:
        trailing = (1,) * (jnp.ndim(a) - jnp.ndim(condition))
        return jnp.where(jnp.reshape(condition, jnp.shape(condition) + trailing), a, b)

    return jax.tree.map(select, if_true, if_false)


def step_from_draw(
    start_index: Array,
    state: DoorsState,
    action: Array,
    params: DoorsParams = DEFAULT_PARAMS,
    doors: Array | None = None,
) -> StepResult:
    """:func:`step` with the reset draw given instead of a key (for callers that draw in batches).

    ``doors``: the next episode's doors where they are random (:func:`draw_doors`), else None.
    """
    return step_from_initial(initial_from_draw(start_index, params, doors), state, action, params)


def step_from_initial(
    fresh: DoorsState, state: DoorsState, action: Array, params: DoorsParams = DEFAULT_PARAMS
) -> StepResult:
    """:func:`step` with the next episode's start state ``fresh`` given (used where the episode ends)."""
    next_state, reward, terminated, truncated, distance = transition_parts(state, action, params)
    new_state = where_state(terminated | truncated, fresh, next_state)
    info = {"distance": distance, "final_state": next_state}
    return observation(new_state, params), new_state, reward, terminated, truncated, info


def step(key: Array, state: DoorsState, action: Array, params: DoorsParams = DEFAULT_PARAMS) -> StepResult:
    """One transition with same-step autoreset, for ``jit`` / ``vmap`` / ``lax.scan``.

    When the transition terminates or truncates, the returned ``obs`` and
    ``state`` already belong to a new episode drawn with ``key``; ``reward``,
    ``terminated`` and ``truncated`` describe the transition that ended, and
    ``info["final_state"]`` is the state it ended in (``observation`` of it
    gives the final observation, e.g. to bootstrap a truncated episode).

    Args:
        key: a PRNG key, consumed only to draw the next start.
        state: the current :class:`DoorsState`.
        action: int scalar; see the module docstring for out-of-range values.
        params: the layout and time limit (``max_episode_steps=None``: never truncate).

    Returns:
        ``(obs, state, reward, terminated, truncated, info)``: int16 ``(H * W,)``,
        :class:`DoorsState`, float32, bool, bool, and ``info`` with
        ``distance`` (float32, after the move) and ``final_state``.
    """
    return step_from_initial(draw_initial(key, (), params), state, action, params)


def batch_step(key: Array, state: DoorsState, action: Array, params: DoorsParams = DEFAULT_PARAMS) -> StepResult:
    """:func:`step` for a batch of envs (leading axis of ``state`` and ``action``) from one key.

    The same same-step autoreset as ``vmap(step)``, but the starts of the whole
    batch come from one draw instead of a key split per env, which on a CPU
    costs more than the rules themselves.
    """
    fresh = draw_initial(key, jnp.shape(action), params)
    return jax.vmap(step_from_initial, in_axes=(0, 0, 0, None))(fresh, state, action, params)


def batch_reset(key: Array, num_envs: int, params: DoorsParams = DEFAULT_PARAMS) -> tuple[Array, DoorsState]:
    """:func:`reset` for ``num_envs`` envs from one key: ``(obs (num_envs, H * W), state)``."""
    state = draw_initial(key, (num_envs,), params)
    return jax.vmap(observation, in_axes=(0, None))(state, params), state


def _step_with_checks(key: Array, state: DoorsState, action: Array, params: DoorsParams = DEFAULT_PARAMS) -> StepResult:
    action = _check_action_dtype(action)
    checkify.check(
        jnp.all((action >= 0) & (action < NUM_ACTIONS)),
        "action {action} is out of range: valid actions are the integers 0..4 "
        "(0 stay, 1 right, 2 down, 3 left, 4 up)",
        action=action,
    )
    return step(key, state, action, params)


checked_step: Callable[..., tuple[checkify.Error, StepResult]] = checkify.checkify(_step_with_checks)
"""``step`` that also reports out-of-range actions: ``err, result = jax.jit(checked_step)(...)``;
``err.throw()`` raises ``JaxRuntimeError`` naming the action."""


def rollout(
    key: Array,
    policy: Callable[[Array, Array], Array],
    num_envs: int,
    num_steps: int,
    params: DoorsParams = DEFAULT_PARAMS,
) -> tuple[DoorsState, dict[str, Array]]:
    """Runs ``num_envs`` envs for ``num_steps`` steps in one ``lax.scan`` over :func:`batch_step`.

    Args:
        key: a PRNG key.
        policy: ``policy(key, obs) -> action`` for one env (it is vmapped), e.g.
            ``lambda k, o: jax.random.randint(k, (), 0, 5)``.
        num_envs: the number of envs (static).
        num_steps: the number of steps (static).
        params: the layout and time limit.

    Returns:
        ``(final_states, trajectory)`` where ``trajectory`` maps ``obs``
        (the observation each action was taken in), ``action``, ``reward``,
        ``terminated`` and ``truncated`` to arrays of shape ``(num_steps, num_envs, ...)``.
        Wrap the call in ``jax.jit`` with ``static_argnames=("policy", "num_envs", "num_steps")``.
    """
    reset_key, loop_key = jax.random.split(key)
    obs, state = batch_reset(reset_key, num_envs, params)

    def body(
        carry: tuple[Array, DoorsState, Array], _: None
    ) -> tuple[tuple[Array, DoorsState, Array], dict[str, Array]]:
        obs, state, key = carry
        key, policy_key, step_key = jax.random.split(key, 3)
        action = jax.vmap(policy)(jax.random.split(policy_key, num_envs), obs)
        next_obs, state, reward, terminated, truncated, _ = batch_step(step_key, state, action, params)
        record = {"obs": obs, "action": action, "reward": reward, "terminated": terminated, "truncated": truncated}
        return (next_obs, state, key), record

    (_, state, _), trajectory = jax.lax.scan(body, (obs, state, loop_key), None, length=num_steps)
    return state, trajectory


class RenderState:
    """What :meth:`DoorsFuncEnv.render_image` needs between frames: palette and cell size."""

    def __init__(self, palette: np.ndarray, cell_pixels: int) -> None:
        self.palette = palette
        self.cell_pixels = cell_pixels


class DoorsFuncEnv(FuncEnv):
    """The Doors rules as a Gymnasium ``FuncEnv`` (stateless; state and params passed explicitly).

    ``options`` (as ``gym.make`` keywords reach a ``FuncEnv``) may hold any
    :class:`DoorsParams` field (``grid_size``, ``n_doors``, ``door_cols``,
    ``max_episode_steps``, ``obs_mode``, ``cell_pixels``, ``colors``); they make
    ``default_params``, used wherever ``params`` is None.
    """

    @classmethod
    def from_params(cls, params: DoorsParams) -> DoorsFuncEnv:
        """The ``FuncEnv`` whose ``default_params`` are ``params``."""
        return cls({name: getattr(params, name) for name in PARAM_KEYWORDS})

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        options = dict(options or {})
        unknown = sorted(set(options) - set(PARAM_KEYWORDS))
        if unknown:
            raise ValueError(f"options {unknown} are unknown: expected keys among {list(PARAM_KEYWORDS)}")
        super().__init__()
        self.default_params = self.get_default_params(**options)
        self.observation_space, self.action_space = make_spaces(self.default_params)

    def get_default_params(self, **kwargs: Any) -> DoorsParams:
        """``DoorsParams`` from keywords (validated)."""
        return DoorsParams(**kwargs)

    def _params(self, params: DoorsParams | None) -> DoorsParams:
        return self.default_params if params is None else params

    def initial(self, rng: Array, params: DoorsParams | None = None) -> DoorsState:
        """A random start state."""
        return initial(rng, self._params(params))

    def transition(self, state: DoorsState, action: Array, rng: Array, params: DoorsParams | None = None) -> DoorsState:
        """The next state (deterministic: ``rng`` is unused)."""
        return core.transition(self._params(params), state, _check_action_dtype(action), jnp)

    def observation(self, state: DoorsState, rng: Array, params: DoorsParams | None = None) -> Array:
        """The observation in ``params.obs_mode`` (int16 ``(H * W,)`` flat grid by default)."""
        return observation(state, self._params(params))

    def reward(
        self, state: DoorsState, action: Array, next_state: DoorsState, rng: Array, params: DoorsParams | None = None
    ) -> Array:
        """float32 decrease of the distance to the goal."""
        return core.reward(core.state_distance(state, jnp), core.state_distance(next_state, jnp))

    def terminal(self, state: DoorsState, rng: Array, params: DoorsParams | None = None) -> Array:
        """True on the goal (truncation is :meth:`truncated`, which ``FuncEnv`` has no slot for)."""
        return core.terminated(state)

    def truncated(self, state: DoorsState, params: DoorsParams | None = None) -> Array:
        """True once ``state.time`` reaches ``params.max_episode_steps``."""
        return core.truncated(self._params(params), state)

    def state_info(self, state: DoorsState, params: DoorsParams | None = None) -> dict[str, Array]:
        """``{"distance": float32}`` of a state."""
        return {"distance": core.state_distance(state, jnp)}

    def transition_info(
        self, state: DoorsState, action: Array, next_state: DoorsState, params: DoorsParams | None = None
    ) -> dict[str, Array]:
        """``{"distance": float32}`` after the transition."""
        return {"distance": core.state_distance(next_state, jnp)}

    def render_init(
        self,
        params: DoorsParams | None = None,
        cell_pixels: int | None = None,
        colors: Any = None,
        **kwargs: Any,
    ) -> RenderState:
        """Palette and cell size for :meth:`render_image`: those of ``params``, or ``cell_pixels`` and ``colors``.

        Given values are checked as :class:`DoorsParams` checks them (``ValueError`` naming the value).
        """
        settings = {"cell_pixels": cell_pixels, "colors": colors}
        params = dataclasses.replace(
            self._params(params), **{name: value for name, value in settings.items() if value is not None}
        )
        return RenderState(pixels.make_palette(params.colors), params.cell_pixels)

    def render_image(
        self, state: DoorsState, render_state: RenderState, params: DoorsParams | None = None
    ) -> tuple[RenderState, np.ndarray]:
        """``(render_state, frame)``: a uint8 RGB frame of one state."""
        params = self._params(params)
        grid = np.asarray(core.grid_observation(params, state, jnp)).reshape(params.grid_size)
        return render_state, pixels.grid_to_rgb(grid, render_state.palette, render_state.cell_pixels)

    def render_close(self, render_state: RenderState, params: DoorsParams | None = None) -> None:
        """Nothing to release."""
