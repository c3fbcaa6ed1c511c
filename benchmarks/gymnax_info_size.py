"""Bytes of ``info`` that a PureJaxRL-style PPO keeps on ``DoorsGymnax``, with and without the final observation.

Run from the repository root::

    python benchmarks/gymnax_info_size.py    # a few seconds: shapes only, nothing is trained

PureJaxRL's ``ppo.py`` returns every update's ``traj_batch.info`` as its metric, so ``info`` is kept
for every env step of training: ``(num_updates, NUM_STEPS, NUM_ENVS)`` per entry, after gymnax's
``LogWrapper`` has added its own three. The figures come from ``jax.eval_shape`` of that stacked
pytree (the shapes the compiled program allocates), at PureJaxRL's default sizes and at a larger run.

It needs gymnax 0.0.x, the era of PureJaxRL's ``ppo.py``: with gymnax 1.x the final observation is in every
step's ``info`` (its ``FlattenObservationWrapper`` reads it, as for gymnax's own envs), the opted-in column.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np
from gymnax.wrappers.purerl import FlattenObservationWrapper, LogWrapper

from doors_gym.jax import DoorsGymnax
from doors_gym.jax.gymnax_api import installed_step_api

NUM_STEPS = 128
"""PureJaxRL PPO's rollout length per update."""
RUNS = ((5e5, 4), (1e7, 16))
"""``(TOTAL_TIMESTEPS, NUM_ENVS)``: PureJaxRL's defaults, then a larger run."""


def stored_info(total_timesteps: float, num_envs: int, final_observation: bool) -> Any:
    """The shapes of ``info`` over a whole PPO run: ``scan`` over updates of ``scan`` over vmapped steps."""
    env = LogWrapper(FlattenObservationWrapper(DoorsGymnax(final_observation=final_observation)))
    params = env.default_params
    num_updates = int(total_timesteps) // NUM_STEPS // num_envs

    def run(key: jax.Array) -> Any:
        reset_key, loop_key = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), params)

        def env_step(carry, _):
            state, key = carry
            key, action_key, step_key = jax.random.split(key, 3)
            action = jax.random.randint(action_key, (num_envs,), 0, env.num_actions)
            _, state, _, _, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(step_key, num_envs), state, action, params
            )
            return (state, key), info

        def update(carry, _):
            return jax.lax.scan(env_step, carry, None, NUM_STEPS)

        return jax.lax.scan(update, (state, loop_key), None, num_updates)[1]

    return jax.eval_shape(run, jax.random.key(0))


def nbytes(tree: Any) -> int:
    """Bytes of every leaf of a pytree of ``ShapeDtypeStruct``."""
    return sum(math.prod(leaf.shape) * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(tree))


def main() -> None:
    """Prints one markdown row per run size: the stored ``info`` with and without the final observation."""
    if installed_step_api() != "0.0":
        raise SystemExit("gymnax_info_size.py needs gymnax 0.0.x (pip install 'gymnax==0.0.9'), PureJaxRL's era")
    print("| TOTAL_TIMESTEPS | NUM_ENVS | info entries | info (default) | with final_observation=True |")
    print("|---:|---:|---|---:|---:|")
    for total_timesteps, num_envs in RUNS:
        default = stored_info(total_timesteps, num_envs, final_observation=False)
        opted_in = stored_info(total_timesteps, num_envs, final_observation=True)
        print(
            f"| {total_timesteps:.0e} | {num_envs} | {', '.join(sorted(default))} | "
            f"{nbytes(default) / 1e6:,.1f} MB | {nbytes(opted_in) / 1e6:,.1f} MB |"
        )


if __name__ == "__main__":
    main()
