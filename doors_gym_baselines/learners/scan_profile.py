"""The fully jitted arm's phase profile: where the scan's time goes, from its phases timed apart.

A fused scan cannot time its own phases, so :func:`split_scan_time` jits each phase of an iteration
(acting, the env step, storing, sampling, learning) on its own, as :func:`phase_functions` builds them
from the pieces the scan calls, and splits the scan's measured time in their proportions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from doors_gym.jax import functional as F

from ..config import DQNConfig
from ..harness import device_replay
from .dqn_flax import Knobs, epsilon_greedy, make_learning_step, make_network


class Phases(NamedTuple):
    """An iteration's phases as pure functions of one seed's runner (vmap them over seeds)."""

    select_actions: Callable[[Any, jax.Array, jax.Array, jax.Array], jax.Array]
    """``(runner, epsilon, explore_key, random_key) -> actions``: epsilon-greedy."""
    env_step: Callable[[Any, jax.Array, jax.Array], tuple]
    """``(runner, actions, step_key) -> batch_step's outputs``."""
    store: Callable[..., device_replay.Buffer]
    """``(buffer, state, actions, reward, next_state, terminated, iteration_index) -> buffer``."""
    sample: Callable[[device_replay.Buffer, jax.Array], tuple]
    """``(buffer, key) -> batch`` of cells read off stored states."""
    learn: Callable[[Any, tuple], tuple[Any, jax.Array]]
    """``(runner, batch) -> (runner, loss)``: the gradient step and the target update."""


def phase_functions(config: DQNConfig) -> Phases:
    """The phases of ``config``'s scan iteration, from the same pieces as ``dqn_flax_scan.make_train``."""
    params, hyper = config.params, config.hyperparameters
    network, width = make_network(config), params.width
    learning_step, knobs = make_learning_step(network, config), Knobs.of(config)

    def select_actions(runner: Any, epsilon: jax.Array, explore_key: jax.Array, random_key: jax.Array) -> jax.Array:
        greedy = network.apply(runner.learner.params, device_replay.cells_of_states(runner.env_state, width))
        return epsilon_greedy(greedy.argmax(axis=1), epsilon, explore_key, random_key)

    def store(
        buffer: device_replay.Buffer,
        state: Any,
        actions: jax.Array,
        reward: jax.Array,
        next_state: Any,
        terminated: jax.Array,
        iteration_index: jax.Array,
    ) -> device_replay.Buffer:
        start = (iteration_index * hyper.num_envs) % hyper.buffer_size
        return device_replay.add(buffer, state, actions, reward, next_state, terminated, start)

    def learn_batch(runner: Any, batch: tuple) -> tuple[Any, jax.Array]:
        learner, loss = learning_step(runner.learner, batch, knobs)
        return runner._replace(learner=learner), loss

    return Phases(
        select_actions,
        lambda runner, actions, key: F.batch_step(key, runner.env_state, actions, params),
        store,
        lambda buffer, key: device_replay.sample(buffer, key, hyper.batch_size, width),
        learn_batch,
    )


PROFILE_CALLS = 30
"""Timed calls of each piece in :func:`split_scan_time` (after one that compiles)."""


def split_scan_time(
    config: DQNConfig, runner: Any, seconds: float, iterations: int, updates: int
) -> dict[str, float]:
    """Splits ``seconds`` of scanning into phases by timing the scan's pieces apart on a trained runner.

    Each piece is jitted and vmapped over the runner's seeds on its device as
    the scan vmaps it (the iteration index unbatched), called once to compile,
    then :data:`PROFILE_CALLS` times (median); the pieces that update the buffer
    or the learner take their own output back in, donated, so they write in
    place as inside the scan. The iterations times each per-iteration piece and
    the updates times the update pieces predict the scan's time (the groups of
    several devices run at once: the largest one's runner stands for all); the
    phases are the predictions, scaled down to ``seconds`` when the fused scan is
    faster than its parts run apart, and what the parts leave of ``seconds`` (the
    loop and episode bookkeeping) is ``other``.
    """
    if config.hyperparameters.algorithm == "pqn":
        return split_pqn_scan_time(config, runner, seconds, iterations)
    pieces = phase_functions(config)
    runner = jax.tree.map(jnp.copy, runner)  # the pieces below consume it
    index = jnp.int32(0)
    keys = jax.vmap(jax.random.split)(runner.key)
    selecting = (pieces.select_actions, (runner, jnp.float32(0.5), keys[:, 0], keys[:, 1]), (0, None, 0, 0))
    actions = jax.vmap(selecting[0], in_axes=selecting[2])(*selecting[1])
    stepped = jax.vmap(pieces.env_step)(runner, actions, keys[:, 0])
    transition = (runner.env_state, actions, stepped[2], stepped[5]["final_state"], stepped[3], index)
    per_iteration = {
        "action_selection": timed(selecting[0], selecting[1], selecting[2]),
        "env_step": timed(pieces.env_step, (runner, actions, keys[:, 0])),
    }
    per_update = {"replay_buffer": timed(pieces.sample, (runner.buffer, keys[:, 1]))}
    per_iteration["replay_buffer"] = timed(
        pieces.store,
        (jax.tree.map(jnp.copy, runner.buffer), *transition),
        (0, 0, 0, 0, 0, 0, None),
        chain=lambda args, output: (output, *args[1:]),
    )
    learning = timed(
        lambda run, key: pieces.learn(run, pieces.sample(run.buffer, key)),
        (runner, keys[:, 1]),  # donated last: it holds the arrays above
        chain=lambda args, output: (output[0], args[1]),
    )
    per_update["update"] = max(0.0, learning - per_update["replay_buffer"])
    predicted = {name: cost * iterations for name, cost in per_iteration.items()}
    for name, cost in per_update.items():
        predicted[name] = predicted.get(name, 0.0) + cost * updates
    return scaled(predicted, seconds)


def split_pqn_scan_time(config: DQNConfig, runner: Any, seconds: float, iterations: int) -> dict[str, float]:
    """:func:`split_scan_time` for PQN's scan (:mod:`.pqn_scan`): acting and the env step per vector step as DQN's;
    ``update`` is the learning phase at each whole rollout's end (its returns, shuffles and ``epochs * minibatches``
    regression steps) with the values of the next states each vector step computes for those returns, as the host
    loop's ``update`` holds them; the rollout's writes fall in ``other``."""
    from .pqn_scan import make_learn

    hyper, width = config.hyperparameters, config.params.width
    pieces, network, knobs = phase_functions(config), make_network(config), Knobs.of(config)
    learn = make_learn(network, config, lambda _: knobs, lambda frozen, old, new: new)
    runner = jax.tree.map(jnp.copy, runner)
    keys = jax.vmap(jax.random.split)(runner.key)
    selecting = (pieces.select_actions, (runner, jnp.float32(0.5), keys[:, 0], keys[:, 1]), (0, None, 0, 0))
    actions = jax.vmap(selecting[0], in_axes=selecting[2])(*selecting[1])

    def next_values(run: Any) -> jax.Array:
        return network.apply(run.learner.params, device_replay.cells_of_states(run.env_state, width)).max(axis=1)

    per_iteration = {
        "action_selection": timed(selecting[0], selecting[1], selecting[2]),
        "env_step": timed(pieces.env_step, (runner, actions, keys[:, 0])),
        "update": timed(next_values, (runner,)),
    }
    learning = timed(learn, (runner, keys[:, 1]), chain=lambda args, output: (output[0], args[1]))
    predicted = {name: cost * iterations for name, cost in per_iteration.items()}
    predicted["update"] += learning * (iterations // hyper.rollout_steps)
    return scaled(predicted, seconds)


def scaled(predicted: dict[str, float], seconds: float) -> dict[str, float]:
    """The phases' predicted seconds scaled down to ``seconds`` where the fused scan ran faster than its parts."""
    scale = min(1.0, seconds / sum(predicted.values())) if predicted else 0.0
    return {name: value * scale for name, value in predicted.items()}


def timed(function: Callable, args: tuple, in_axes: Any = 0, chain: Callable | None = None) -> float:
    """Seconds per call of ``function`` jitted under ``vmap`` (after one call that compiles; the median of
    :data:`PROFILE_CALLS`); ``chain(args, output)`` gives the next call's args (donating the first)."""
    jitted = jax.jit(jax.vmap(function, in_axes=in_axes), donate_argnums=(0,) if chain else ())
    compiled = jitted.lower(*args).compile()
    output = jax.block_until_ready(compiled(*args))
    durations = []
    for _ in range(PROFILE_CALLS):
        args = chain(args, output) if chain else args
        begin = time.perf_counter()
        output = jax.block_until_ready(compiled(*args))
        durations.append(time.perf_counter() - begin)
    return float(np.median(durations))


