"""``DoorsJax-v0``: the Doors rules in JAX.

- :class:`DoorsFuncEnv`, a Gymnasium ``FuncEnv``;
- pure functions for jitted code: :func:`reset`, :func:`step` (same-step
  autoreset), :func:`batch_reset` / :func:`batch_step` (a batch from one key),
  :func:`env_step` (no autoreset), :func:`checked_step`, :func:`observation`,
  :func:`rollout`;
- the Gymnasium shells :class:`DoorsJaxEnv` and :class:`DoorsJaxVectorEnv`;
- :class:`DoorsGymnax`, the gymnax ``Environment`` API (PureJaxRL-style loops).

>>> import jax
>>> from doors_gym.jax import DoorsParams, reset, step
>>> params = DoorsParams()
>>> obs, state = reset(jax.random.key(0), params)
>>> obs, state, reward, terminated, truncated, info = step(jax.random.key(1), state, 4, params)
>>> obs.shape, obs.dtype.name, reward.dtype.name
((225,), 'int16', 'float32')
"""

from doors_gym.extras import require

require("jax", "DoorsJax-v0 (doors_gym.jax)")

from doors_gym.core import DoorsParams, DoorsState  # noqa: E402
from doors_gym.jax.functional import (  # noqa: E402
    DoorsFuncEnv,
    batch_reset,
    batch_step,
    checked_step,
    draw_doors,
    draw_initial,
    env_step,
    initial,
    observation,
    reset,
    rollout,
    step,
    step_from_draw,
    step_from_initial,
    transition_parts,
    where_state,
)
from doors_gym.jax.gymnax_api import DoorsGymnax  # noqa: E402
from doors_gym.jax.shells import DoorsJaxEnv, DoorsJaxVectorEnv  # noqa: E402

__all__ = [
    "DoorsFuncEnv",
    "DoorsGymnax",
    "DoorsJaxEnv",
    "DoorsJaxVectorEnv",
    "DoorsParams",
    "DoorsState",
    "batch_reset",
    "batch_step",
    "checked_step",
    "draw_doors",
    "draw_initial",
    "env_step",
    "initial",
    "observation",
    "reset",
    "rollout",
    "step",
    "step_from_draw",
    "step_from_initial",
    "transition_parts",
    "where_state",
]
