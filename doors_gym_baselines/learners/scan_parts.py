"""The pieces of the fully jitted arm's programs (DQN's, :mod:`.dqn_flax_scan`, and PQN's, :mod:`.pqn_scan`): what
one seed carries through the scan, the envs' step, and the episode figures kept in the trace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from doors_gym import core
from doors_gym.core import DoorsState
from doors_gym.jax import functional as F

from ..config import DQNConfig, schedules
from ..harness.device_replay import Buffer
from .dqn_flax import Knobs, LearnerState, QNetwork

CHUNKS = 20
"""Segments per run, the fewest (:func:`iterations_per_chunk`): the host shows progress, evaluates and prunes between
them."""


def iterations_per_chunk(config: DQNConfig) -> int:
    """The iterations (vector steps) of one segment: a :data:`CHUNKS`-th of the run's, or, where ``eval_every`` asks
    for evaluations more often, the fewest that reach ``eval_every`` env steps, so that an evaluation falls due at
    every segment's end, as the host loop's fall due at the first vector step that reaches them."""
    per_chunk = -(-config.num_iterations // CHUNKS)
    if config.run.eval_every:
        per_chunk = min(per_chunk, -(-config.run.eval_every // config.hyperparameters.num_envs))
    return max(1, per_chunk)


class Episodes(NamedTuple):
    """Running episodes per env ``(num_envs,)`` and a ring of the last ``rolling_episodes`` finished ones."""

    running_return: jax.Array
    running_length: jax.Array
    start_distance: jax.Array
    returns: jax.Array
    lengths: jax.Array
    success: jax.Array
    normalised: jax.Array
    count: jax.Array
    counted: jax.Array
    """``(num_envs,)`` bool: the running episode enters the ring when it ends (it started as the env starts
    episodes, not anywhere: exploring starts stay out of the rolling reward)."""


class Runner(NamedTuple):
    """Everything one seed carries through the scan."""

    learner: LearnerState
    env_state: DoorsState
    buffer: Buffer
    episodes: Episodes
    key: jax.Array
    frozen: jax.Array
    """bool scalar: the seed has stopped (solved through its window); its learner, envs and episodes are kept."""
    lane: Knobs | None = None
    """A lane's own knobs (:mod:`.scan_lanes`), None outside a program of lanes (the config's are in the program)."""


class ScanTrain(NamedTuple):
    """What :func:`make_train` returns: the whole run as one pure function, and the same run in segments."""

    train: Callable[[jax.Array], tuple[Runner, dict]]
    """``train(key) -> (runner, metrics)``: every iteration in one scan (metrics stacked over iterations)."""
    init: Callable[[jax.Array], Runner]
    """``init(key) -> runner``: one seed's start."""
    run_chunk: Callable[[Runner, jax.Array], tuple[Runner, dict]]
    """``run_chunk(runner, first_iteration) -> (runner, metrics)``: ``iterations_per_chunk`` iterations."""
    network: QNetwork
    iterations_per_chunk: int


def make_env_step(config: DQNConfig) -> Callable:
    """``env_step(key, env_state, actions, knobs, global_step) -> (env_state, reward, terminated, truncated, info,
    restarted)``: the envs' step. With exploring starts (``config.restarts``; for lanes, any lane's:
    ``program_config`` keeps the largest ``restart_prob``) an episode that ends starts anywhere with the knobs'
    probability at ``global_step`` (``restarted``, ``(num_envs,)`` bool); without, ``restarted`` is None."""
    params, num_envs, total = config.params, config.hyperparameters.num_envs, config.run.total_steps

    def env_step(
        step_key: jax.Array, env_state: Any, actions: jax.Array, knobs: Knobs, global_step: jax.Array
    ) -> tuple:
        if not config.restarts:
            _, env_state, reward, terminated, truncated, info = F.batch_step(step_key, env_state, actions, params)
            return env_state, reward, terminated, truncated, info, None
        # F.batch_step's draw from its own piece of the key, then the restarts from theirs
        fresh_key, restart_key, row_key = jax.random.split(step_key, 3)
        probability = schedules.restart_probability(global_step, knobs.restart_prob, knobs.restart_fraction, total, jnp)
        restarted = jax.random.uniform(restart_key, (num_envs,)) < probability
        fresh = F.start_anywhere(row_key, F.draw_initial(fresh_key, (num_envs,), params), restarted, params)
        step = jax.vmap(F.step_from_initial, in_axes=(0, 0, 0, None))
        _, env_state, reward, terminated, truncated, info = step(fresh, env_state, actions, params)
        return env_state, reward, terminated, truncated, info, restarted

    return env_step


def new_episodes(env_state: DoorsState, window: int) -> Episodes:
    """The episode figures of envs at their first reset (``env_state``, batched), with an empty ring of ``window``."""
    num_envs = env_state.agent_row.shape[0]
    return Episodes(
        jnp.zeros(num_envs),
        jnp.zeros(num_envs, jnp.int32),
        jax.vmap(distance)(env_state),
        jnp.zeros(window),
        jnp.zeros(window, jnp.int32),
        jnp.zeros(window, bool),
        jnp.zeros(window),
        jnp.int32(0),
        jnp.ones(num_envs, bool),
    )


def keep_frozen(frozen: jax.Array, old: Any, new: Any) -> Any:
    """``old`` where ``frozen`` (a bool scalar), else ``new``, leaf by leaf: a stopped seed's state stays put."""
    return jax.tree.map(lambda before, after: jnp.where(frozen, before, after), old, new)


def distance(state: DoorsState) -> jax.Array:
    """The shortest path's length from an env state's agent to its goal (int32)."""
    return core.state_distance(state, jnp)


def track(
    episodes: Episodes,
    reward: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    new_distance: jax.Array,
    window: int,
    restarted: jax.Array | None = None,
) -> Episodes:
    """Adds a step to the running episodes and moves the ended ones that count into the ring (``window`` slots).

    ``restarted`` (bool ``(num_envs,)``, or None without exploring starts): the envs whose next episode starts
    anywhere; it will not count.
    """
    running_return = episodes.running_return + reward
    running_length = episodes.running_length + 1
    done = terminated | truncated
    kept = done & episodes.counted
    slot = jnp.where(kept, (episodes.count + jnp.cumsum(kept) - 1) % window, window)  # window: dropped
    put = lambda ring, value: ring.at[slot].set(value, mode="drop")  # noqa: E731
    return Episodes(
        running_return=jnp.where(done, 0.0, running_return),
        running_length=jnp.where(done, 0, running_length),
        start_distance=jnp.where(done, new_distance, episodes.start_distance),
        returns=put(episodes.returns, running_return),
        lengths=put(episodes.lengths, running_length),
        success=put(episodes.success, terminated),
        normalised=put(episodes.normalised, running_return / jnp.maximum(episodes.start_distance, 1e-6)),
        count=episodes.count + kept.sum(),
        counted=episodes.counted if restarted is None else jnp.where(done, ~restarted, episodes.counted),
    )
