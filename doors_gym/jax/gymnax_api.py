"""Doors behind gymnax's ``Environment`` API, for the JAX RL ecosystem (PureJaxRL, purejaxql, Stoix).

>>> import jax
>>> from doors_gym.jax import DoorsGymnax
>>> env = DoorsGymnax()
>>> params = env.default_params
>>> obs, state = env.reset(jax.random.key(0), params)
>>> obs, state, reward, done, info = env.step(jax.random.key(1), state, 4, params)
>>> obs.shape, env.num_actions, env.action_space(params).n
((225,), 5, 5)

It is a thin object over the pure functions of :mod:`doors_gym.jax.functional`
(no second copy of the rules): ``reset`` is :func:`~doors_gym.jax.functional.reset`
and ``step`` is :func:`~doors_gym.jax.functional.step` with gymnax's five
outputs. As in gymnax, ``step`` autoresets in the same step and returns one
``done`` flag; ``info`` keeps what that flag merges, so a learner can still
bootstrap through time limits: ``info["terminated"]``, ``info["truncated"]``,
``info["discount"]`` (0.0 only on termination) and ``info["distance"]``, one
scalar per env each, as gymnax's own envs put there (scripts map over ``info``
per env and keep it for every step of a trajectory). The observation an episode
ended on, which a learner needs to bootstrap through truncation, is there too
only when asked for: ``DoorsGymnax(final_observation=True)`` adds
``info["final_observation"]``.

Params are :class:`~doors_gym.core.DoorsParams` (a static pytree: every field
is known at trace time); they carry the field of gymnax's ``EnvParams``,
``max_steps_in_episode`` (the time limit, ``max_episode_steps``). The spaces are
gymnax's own classes when gymnax is installed (so its wrappers' ``isinstance``
checks pass), otherwise minimal classes of the same interface.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from doors_gym import core, pixels
from doors_gym.core import NUM_ACTIONS, DoorsParams, DoorsState
from doors_gym.jax import functional as F
from doors_gym.spaces import make_params

FINAL_OBSERVATION = "final_observation"
"""The ``info`` key of the observation an episode ended on, with ``DoorsGymnax(final_observation=True)``."""


class Discrete:
    """gymnax's ``Discrete``: ``n`` categories, int32 scalars."""

    def __init__(self, num_categories: int) -> None:
        self.num_categories = self.n = num_categories
        self.shape: tuple[int, ...] = ()
        self.dtype = jnp.int32

    def sample(self, key: jax.Array) -> jax.Array:
        """A uniform category."""
        return jax.random.randint(key, self.shape, 0, self.n, dtype=self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        """Whether ``x`` is a category (traceable)."""
        return jnp.logical_and(x >= 0, x < self.n)


class Box:
    """gymnax's ``Box``: arrays of ``shape`` and ``dtype`` between ``low`` and ``high``."""

    def __init__(self, low: Any, high: Any, shape: tuple[int, ...], dtype: Any = jnp.float32) -> None:
        self.low, self.high, self.shape, self.dtype = low, high, shape, dtype

    def sample(self, key: jax.Array) -> jax.Array:
        """A uniform array (integers uniform over ``low..high``)."""
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(key, self.shape, self.low, jnp.asarray(self.high) + 1).astype(self.dtype)
        return jax.random.uniform(key, self.shape, minval=self.low, maxval=self.high).astype(self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        """Whether ``x`` lies within the bounds (traceable)."""
        return jnp.logical_and(jnp.all(x >= self.low), jnp.all(x <= self.high))


def _space_classes() -> tuple[type, type]:
    """``(Discrete, Box)``: gymnax's when it is installed, else the equivalents above."""
    try:
        from gymnax.environments import spaces
    except ImportError:
        return Discrete, Box
    return spaces.Discrete, spaces.Box


class DoorsGymnax:
    """The Doors rules with gymnax's API: ``reset(key, params)``, ``step(key, state, action, params)``.

    Args:
        final_observation: also put the observation each episode ended on in
            ``info[FINAL_OBSERVATION]`` (``"final_observation"``), for learners
            that bootstrap through truncation. Off by default: it is a whole
            observation per env and step in every stored trajectory, where the
            rest of ``info`` is one scalar per env.
        **keywords: the env keywords of ``gym.make`` (``grid_size``,
            ``n_doors``, ``door_cols``, ``max_episode_steps`` with the same
            meaning, ``obs_mode``, ``cell_pixels``, ``colors``), which make
            :attr:`default_params`.

    Raises:
        ValueError: naming a bad keyword and its allowed values.
    """

    def __init__(self, final_observation: bool = False, **keywords: Any) -> None:
        if not isinstance(final_observation, bool):
            raise ValueError(f"final_observation={final_observation!r} is invalid: expected True or False")
        self.final_observation = final_observation
        self._default_params = make_params(**keywords, default_limit=core.DEFAULT_TIME_LIMIT)

    @property
    def default_params(self) -> DoorsParams:
        """The params used wherever ``params`` is None."""
        return self._default_params

    @property
    def name(self) -> str:
        """The registered id of these rules."""
        return "DoorsJax-v0"

    @property
    def num_actions(self) -> int:
        """Five actions: stay, right, down, left, up."""
        return NUM_ACTIONS

    @functools.partial(jax.jit, static_argnames=("self", "params"))
    def reset(self, key: jax.Array, params: DoorsParams | None = None) -> tuple[jax.Array, DoorsState]:
        """``(obs, state)`` of a new episode drawn with ``key``."""
        return F.reset(key, params or self.default_params)

    @functools.partial(jax.jit, static_argnames=("self", "params"))
    def step(
        self, key: jax.Array, state: DoorsState, action: Any, params: DoorsParams | None = None
    ) -> tuple[jax.Array, DoorsState, jax.Array, jax.Array, dict[str, jax.Array]]:
        """``(obs, state, reward, done, info)``; an episode that ends restarts from ``key`` in the same step.

        ``info`` holds scalars: ``terminated`` and ``truncated`` (bool),
        ``discount`` and ``distance`` (float32); with ``final_observation=True``
        also ``final_observation``, the observation the step ended on (before
        any reset), shaped and typed as ``obs``.
        """
        params = params or self.default_params
        obs, new_state, reward, terminated, truncated, step_info = F.step(key, state, action, params)
        info = {
            "terminated": terminated,
            "truncated": truncated,
            "discount": 1.0 - terminated.astype(jnp.float32),
            "distance": step_info["distance"],
        }
        if self.final_observation:
            info[FINAL_OBSERVATION] = F.observation(step_info["final_state"], params)
        return obs, new_state, reward, terminated | truncated, info

    def action_space(self, params: DoorsParams | None = None) -> Any:
        """``Discrete(5)``."""
        return _space_classes()[0](NUM_ACTIONS)

    def observation_space(self, params: DoorsParams | None = None) -> Any:
        """A ``Box`` of the observation of ``params.obs_mode`` (the bounds of the Gymnasium space)."""
        params = params or self.default_params
        box = _space_classes()[1]
        mode = params.obs_mode
        if mode == "grid":
            return box(0, core.NUM_CELL_TYPES - 1, (params.num_cells,), core.OBS_DTYPE)
        if mode == "onehot":
            return box(0, 1, (params.height, params.width, core.NUM_CELL_TYPES), core.ONEHOT_DTYPE)
        if mode == "flat":
            return box(0.0, 1.0, (params.num_cells * core.NUM_CELL_TYPES,), core.FLAT_DTYPE)
        if mode == "rgb":
            shape = (params.height * params.cell_pixels, params.width * params.cell_pixels, 3)
            return box(0, 255, shape, pixels.RGB_DTYPE)
        high = jnp.array([params.height, params.width, params.height, params.width], dtype=core.OBS_DTYPE) - 1
        return box(0, high, (4,), core.OBS_DTYPE)
