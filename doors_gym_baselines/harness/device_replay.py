"""The fully jitted arm's replay buffer: env states' positions on the device, written in place, sampled as cells.

The buffer stores the agent's and goal's positions of env states (4 int32 each side), not observations; a
sample reads the agent's and the goal's cells (:mod:`doors_gym_baselines.learners.cells`) off the sampled positions, so
no grid is ever built or searched. The episode's doors (``state.doors``, where they are random) go to the layout
table of :mod:`.replay` (one int16 row per episode, the transition an int32 index into it), so a transition
takes 48 B at every level. Every function is pure and traces under ``jit``, ``vmap`` and ``lax.scan``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from doors_gym.core import DoorsState

from ..learners.cells import CELLS_DTYPE, HIDDEN
from .replay import LAYOUT_DTYPE, NO_LAYOUT, layouts_per_env

TRUNCATED = 2.0
"""The flag of a slot whose episode ended there without terminating (stored for multi-step returns only)."""


class Buffer(NamedTuple):
    """Transitions ``(state, action, reward, next_state, terminated, layout)``, each ``(capacity, ...)``: the
    states' positions (``time`` and ``doors`` None), int32 actions, float32 rewards and termination flags, the
    int32 row of each transition's layout; how many slots hold one (``size``, int32); the layout table
    ``layouts`` (``(num_envs * M, n_walls, n_doors)`` int16 where the doors are random, ``(1, 0)`` where they
    are fixed) and the layouts each env took so far (``layouts_taken``, ``(num_envs,)`` int32)."""

    state: DoorsState
    action: jax.Array
    reward: jax.Array
    next_state: DoorsState
    terminated: jax.Array
    size: jax.Array
    layout: jax.Array
    layouts: jax.Array
    layouts_taken: jax.Array


def cells_of_states(state: Any, width: int) -> jax.Array:
    """The cells (:mod:`~doors_gym_baselines.learners.cells`) of env states, read off them: ``(..., 2)`` int32, followed
    by the episode's door columns (``state.doors`` flattened, ``(..., 2 + n_walls * n_doors)``) where the doors
    are random."""
    agent = state.agent_row * width + state.agent_col
    goal = state.goal_row * width + state.goal_col
    cells = jnp.stack([agent, jnp.where(agent == goal, HIDDEN, goal)], axis=-1)
    if state.doors is None:
        return cells
    doors = state.doors.reshape(*state.doors.shape[:-2], -1).astype(cells.dtype)
    return jnp.concatenate([cells, doors], axis=-1)


def positions(state: DoorsState) -> DoorsState:
    """``state`` as the buffer stores it: the agent's and goal's positions (``time`` and ``doors`` None)."""
    return state._replace(time=None, doors=None)


def empty_buffer(env_state: DoorsState, capacity: int, *, min_episode_steps: int = 1) -> Buffer:
    """An empty buffer of ``capacity`` slots for the envs of ``env_state`` (``(num_envs,)`` fields), whose
    episodes last at least ``min_episode_steps`` (:func:`.replay.min_episode_steps`; 1 is safe for any env, with
    the largest table). Per slot: 8 int32 positions, int32 action, float32 reward and flag, int32 layout row
    (48 B at every level); the table (:func:`layout_bytes`) holds ``num_envs * M`` rows
    (:func:`.replay.layouts_per_env`) of ``n_walls * n_doors`` int16 where the doors are random.

    Raises:
        ValueError: ``capacity``, ``num_envs`` or ``min_episode_steps`` below 1, naming it.
    """
    num_envs = env_state.agent_row.shape[0]
    per_env = layouts_per_env(capacity, num_envs, min_episode_steps)
    stored = positions(env_state)
    empty_states = jax.tree.map(lambda field: jnp.zeros((capacity, *field.shape[1:]), field.dtype), stored)
    if env_state.doors is None:
        layouts = jnp.zeros((1, 0), CELLS_DTYPE)
    else:
        layouts = jnp.full((num_envs * per_env, *env_state.doors.shape[1:]), NO_LAYOUT, CELLS_DTYPE)
    return Buffer(
        empty_states,
        jnp.zeros(capacity, jnp.int32),
        jnp.zeros(capacity, jnp.float32),
        empty_states,
        jnp.zeros(capacity, jnp.float32),
        jnp.int32(0),
        jnp.zeros(capacity, LAYOUT_DTYPE),
        layouts,
        jnp.zeros(num_envs, jnp.int32),
    )


def take_layouts(buffer: Buffer, doors: jax.Array | None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(layouts, layouts_taken, rows)``: the table with each env's doors ``(num_envs, n_walls, n_doors)`` in its
    row, a new row (``e * M + taken % M``) where they differ from its current row's; rows ``(num_envs,)`` int32.
    Where the doors are fixed (``doors`` None) every row is 0."""
    if doors is None:
        return buffer.layouts, buffer.layouts_taken, jnp.zeros(buffer.layouts_taken.shape, LAYOUT_DTYPE)
    num_envs = buffer.layouts_taken.shape[0]
    per_env = buffer.layouts.shape[0] // num_envs
    first = jnp.arange(num_envs, dtype=LAYOUT_DTYPE) * per_env
    doors = doors.astype(buffer.layouts.dtype)
    current = buffer.layouts[first + buffer.layouts_taken % per_env]
    changed = jnp.any((current != doors).reshape(num_envs, -1), axis=1)
    taken = buffer.layouts_taken + changed.astype(jnp.int32)
    rows = first + taken % per_env
    return buffer.layouts.at[rows].set(doors), taken, rows


def add(
    buffer: Buffer,
    state: DoorsState,
    action: jax.Array,
    reward: jax.Array,
    next_state: DoorsState,
    terminated: jax.Array,
    start: jax.Array,
    truncated: jax.Array | None = None,
) -> Buffer:
    """Writes one transition per env (``action`` is ``(num_envs,)``, every env in order) from slot ``start`` on,
    round the ring; ``next_state`` is the state each transition ended in (its episode's doors: ``state``'s).

    With ``truncated`` (multi-step returns, :func:`sample_multi_step`) the flag stored is :data:`TRUNCATED` where
    an episode ended without terminating, so that a return never runs past an episode's end; without it, as
    every one-step arm stores it, 1.0 where terminated, else 0.0.

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

    put = lambda stored, new: jax.tree.map(write, stored, positions(new))  # noqa: E731
    layouts, layouts_taken, rows = take_layouts(buffer, state.doors)
    return Buffer(
        put(buffer.state, state),
        write(buffer.action, action),
        write(buffer.reward, reward),
        put(buffer.next_state, next_state),
        write(buffer.terminated, ended_flags(terminated, truncated)),
        jnp.minimum(buffer.size + count, capacity),
        write(buffer.layout, rows),
        layouts,
        layouts_taken,
    )


def sample(buffer: Buffer, key: jax.Array, batch_size: int, width: int) -> tuple[jax.Array, ...]:
    """``(cells, actions, rewards, next_cells, terminated)`` of ``batch_size`` transitions drawn uniformly
    from the filled slots: cells ``(batch_size, 2)`` int32 (``(batch_size, 2 + n_walls * n_doors)`` with the
    episode's door columns where the doors are random), the rest ``(batch_size,)``."""
    index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    doors = buffer.layouts[buffer.layout[index]] if buffer.layouts.ndim > 2 else None

    def cells(stored: DoorsState) -> jax.Array:
        return cells_of_states(jax.tree.map(lambda field: field[index], stored)._replace(doors=doors), width)

    return (
        cells(buffer.state),
        buffer.action[index],
        buffer.reward[index],
        cells(buffer.next_state),
        buffer.terminated[index],
    )


def ended_flags(terminated: jax.Array, truncated: jax.Array | None) -> jax.Array:
    """The flag a slot stores: 1.0 where terminated, :data:`TRUNCATED` where truncated only (given), else 0.0."""
    flags = terminated.astype(jnp.float32)
    if truncated is None:
        return flags
    return jnp.where(truncated & ~terminated, jnp.float32(TRUNCATED), flags)


def sample_multi_step(
    buffer: Buffer, key: jax.Array, batch_size: int, width: int, n_step: int, gamma: Any, cursor: jax.Array
) -> tuple[jax.Array, ...]:
    """``(cells, actions, returns, next_cells, terminated, discounts)``: :func:`sample`'s transitions, each
    followed for up to ``n_step`` steps of its own env and episode (:func:`multi_step_batch`).

    Slots are written a vector step at a time, env by env (:func:`add` from ``iteration * num_envs``), so the
    next transition of a slot's env is ``num_envs`` slots on; ``cursor`` is the next slot :func:`add` writes
    (``(iteration + 1) * num_envs`` modulo the capacity, the slots before it the newest). A return stops after
    ``n_step`` rewards, at its episode's end (a flag of 1 or :data:`TRUNCATED`: it was written with
    ``truncated``), or at the newest transition of its env: ``returns`` sums ``gamma ** k * reward_k`` over the
    ``m`` transitions taken, ``next_cells`` and ``terminated`` are the last one's, ``discounts`` is
    ``gamma ** m``. ``gamma`` may be traced (a lane's).
    """
    index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    return multi_step_batch(buffer, index, width, n_step, gamma, cursor)


def multi_step_batch(
    buffer: Buffer, index: jax.Array, width: int, n_step: int, gamma: Any, cursor: jax.Array
) -> tuple[jax.Array, ...]:
    """:func:`sample_multi_step`'s batch at the slots ``index`` (int32 ``(batch,)``)."""
    num_envs = buffer.layouts_taken.shape[0]
    capacity = buffer.action.shape[0]
    batch_size = index.shape[0]
    later = ((cursor - index - 1) % capacity) // num_envs  # transitions of the same env written after `index`
    returns = jnp.zeros(batch_size, jnp.float32)
    discounts = jnp.ones(batch_size, jnp.float32)
    last, going = index, jnp.ones(batch_size, bool)
    for step in range(n_step):
        slot = (index + step * num_envs) % capacity
        take = going & (step <= later)
        returns = returns + jnp.where(take, discounts * buffer.reward[slot], 0.0)
        discounts = jnp.where(take, discounts * gamma, discounts)
        last = jnp.where(take, slot, last)
        going = take & (buffer.terminated[slot] == 0.0)
    doors = buffer.layouts[buffer.layout[index]] if buffer.layouts.ndim > 2 else None

    def cells(stored: DoorsState, rows: jax.Array) -> jax.Array:
        return cells_of_states(jax.tree.map(lambda field: field[rows], stored)._replace(doors=doors), width)

    terminated = (buffer.terminated[last] == 1.0).astype(jnp.float32)
    return cells(buffer.state, index), buffer.action[index], returns, cells(buffer.next_state, last), terminated, discounts


def bytes_per_transition(buffer: Buffer) -> int:
    """Bytes one stored transition of one seed's ``buffer`` takes (every per-slot array's row; 48 at every level)."""
    per_slot = (buffer.state, buffer.action, buffer.reward, buffer.next_state, buffer.terminated, buffer.layout)
    return sum(int(np.prod(leaf.shape[1:], dtype=int)) * leaf.dtype.itemsize for leaf in jax.tree.leaves(per_slot))


def layout_bytes(buffer: Buffer) -> int:
    """Bytes of one seed's layout table (0 where the doors are fixed), besides the transitions."""
    return int(buffer.layouts.size) * buffer.layouts.dtype.itemsize
