"""The fully jitted arm's replay buffer: env states on the device, written in place, sampled as cells.

The buffer stores env states (5 int32 each), not observations; a sample reads the agent's and the goal's
cells (:mod:`doors_gym_baselines.cells`) off the sampled states, so no grid is ever built or searched.
Every function is pure and traces under ``jit``, ``vmap`` and ``lax.scan``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from doors_gym.core import DoorsState

from ..cells import HIDDEN


class Buffer(NamedTuple):
    """Transitions ``(state, action, reward, next_state, terminated)``, each ``(capacity, ...)``, and how many
    slots hold one (``size``, int32)."""

    state: DoorsState
    action: jax.Array
    reward: jax.Array
    next_state: DoorsState
    terminated: jax.Array
    size: jax.Array


def cells_of_states(state: Any, width: int) -> jax.Array:
    """The cells (:mod:`~doors_gym_baselines.cells`) of env states, read off them: ``(..., 2)`` int32, followed
    by the episode's door columns (``state.doors`` flattened, ``(..., 2 + n_walls * n_doors)``) where the doors
    are random."""
    agent = state.agent_row * width + state.agent_col
    goal = state.goal_row * width + state.goal_col
    cells = jnp.stack([agent, jnp.where(agent == goal, HIDDEN, goal)], axis=-1)
    if state.doors is None:
        return cells
    doors = state.doors.reshape(*state.doors.shape[:-2], -1).astype(cells.dtype)
    return jnp.concatenate([cells, doors], axis=-1)


def empty_buffer(env_state: DoorsState, capacity: int) -> Buffer:
    """An empty buffer of ``capacity`` slots for states shaped as ``env_state``'s fields (int32 actions,
    float32 rewards and termination flags). Door columns (random doors) are stored as int16 (one per door,
    never ``H * W`` of anything), the positions as the state holds them."""
    empty_states = jax.tree.map(lambda field: jnp.zeros((capacity, *field.shape[1:]), field.dtype), env_state)
    if env_state.doors is not None:
        empty_states = empty_states._replace(doors=empty_states.doors.astype(jnp.int16))
    return Buffer(
        empty_states,
        jnp.zeros(capacity, jnp.int32),
        jnp.zeros(capacity, jnp.float32),
        empty_states,
        jnp.zeros(capacity, jnp.float32),
        jnp.int32(0),
    )


def add(
    buffer: Buffer,
    state: DoorsState,
    action: jax.Array,
    reward: jax.Array,
    next_state: DoorsState,
    terminated: jax.Array,
    start: jax.Array,
) -> Buffer:
    """Writes one transition per env (``action`` is ``(num_envs,)``) from slot ``start`` on, round the ring.

    When the capacity is a multiple of the batch, a batch never wraps around the ring and is written as
    one slice (in place under a donated scan); otherwise slot by slot.
    """
    capacity, count = buffer.action.shape[0], action.shape[0]
    if capacity % count == 0:

        def write(field: jax.Array, value: jax.Array) -> jax.Array:
            return jax.lax.dynamic_update_slice_in_dim(field, value.astype(field.dtype), start, axis=0)

    else:
        index = (start + jnp.arange(count)) % capacity

        def write(field: jax.Array, value: jax.Array) -> jax.Array:
            return field.at[index].set(value.astype(field.dtype))

    put = lambda stored, new: jax.tree.map(write, stored, new)  # noqa: E731
    return Buffer(
        put(buffer.state, state),
        write(buffer.action, action),
        write(buffer.reward, reward),
        put(buffer.next_state, next_state),
        write(buffer.terminated, terminated.astype(jnp.float32)),
        jnp.minimum(buffer.size + count, capacity),
    )


def sample(buffer: Buffer, key: jax.Array, batch_size: int, width: int) -> tuple[jax.Array, ...]:
    """``(cells, actions, rewards, next_cells, terminated)`` of ``batch_size`` transitions drawn uniformly
    from the filled slots: cells ``(batch_size, 2)`` int32, the rest ``(batch_size,)``."""
    index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    cells = lambda tree: cells_of_states(jax.tree.map(lambda field: field[index], tree), width)  # noqa: E731
    return (
        cells(buffer.state),
        buffer.action[index],
        buffer.reward[index],
        cells(buffer.next_state),
        buffer.terminated[index],
    )
