"""DQN with env, acting, replay buffer and updates in one ``lax.scan`` (PureJaxRL's ``dqn.py`` as the reference).

The arm ``flax-scan``: ``doors-gym train --arm flax-scan --num-seeds 8``. ``make_train(config)`` gives
PureJaxRL's pure ``train(key)``: ``init`` builds one seed's networks, env states, replay buffer and
episode figures from its key, and ``_update_step`` (one vector step of every env, its transitions
stored, and a gradient step when one is due) runs under ``lax.scan``; ``jit(vmap(train))`` trains many
seeds in one compile. The network, loss and learning step are ``dqn_flax.py``'s; the replay buffer
holds env states on the device (:mod:`.harness.device_replay`). The host driver (seeds over devices,
segments with greedy evaluations between them, the result) is :mod:`.scan_driver`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from doors_gym import core
from doors_gym.core import DoorsState
from doors_gym.jax import functional as F

from ..api import Arm
from ..config import DQNConfig, schedules
from ..harness import Reporter
from ..harness.device_replay import Buffer, add, cells_of_states, empty_buffer, sample, sample_multi_step
from ..harness.metrics import TrainResult
from ..harness.replay import learned_reward, min_episode_steps
from ..runtime import jax_compilation_cache
from .dqn_flax import (
    Knobs,
    LearnerState,
    QNetwork,
    epsilon_greedy,
    init_params,
    make_learning_step,
    make_network,
    make_optimizer,
)
from .dqn_flax import load_model as load_model
from .scan_driver import ScanModel, save_model, train_seeds

CHUNKS = 20
"""Segments per run: the host shows progress, evaluates and prunes between them."""


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


def make_train(config: DQNConfig, lanes: bool = False) -> ScanTrain:
    """The pure functions of a run of ``config`` (see :class:`ScanTrain`); each traces for one seed (vmap it).

    With ``lanes`` each seed is a lane (:mod:`.scan_lanes`): its runner's ``lane`` holds its own values of the
    per-lane hyperparameters, and ``config`` (:func:`~.scan_lanes.program_config`) gives the program's.
    """
    params, hyper = config.params, config.hyperparameters
    num_envs, width, window, total = hyper.num_envs, params.width, config.run.rolling_episodes, config.run.total_steps
    network = make_network(config)
    optimizer = make_optimizer(config)
    init = make_init(config, network, optimizer)
    iterations_per_chunk = max(1, -(-config.num_iterations // CHUNKS))
    env_step = make_env_step(config)
    # Only seeds trained together can stop apart; a lone seed's program is left exactly as it was.
    keep = keep_frozen if config.run.num_seeds > 1 or lanes else lambda frozen, old, new: new
    own_knobs = Knobs.of(config)
    knobs_of = (lambda runner: runner.lane) if lanes else (lambda runner: own_knobs)  # noqa: E731

    _learn = make_learn(config, make_learning_step(network, config), keep, knobs_of)

    def _update_step(runner: Runner, iteration_index: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        key, explore_key, random_key, step_key, sample_key = jax.random.split(runner.key, 5)
        global_step = (iteration_index + 1) * num_envs
        knobs = knobs_of(runner)
        epsilon = schedules.epsilon(
            global_step, hyper.start_epsilon, hyper.end_epsilon, knobs.exploration_fraction, total, jnp
        )
        greedy = network.apply(runner.learner.params, cells_of_states(runner.env_state, width)).argmax(axis=1)
        actions = epsilon_greedy(greedy, epsilon, explore_key, random_key)
        stepped = env_step(step_key, runner.env_state, actions, knobs, global_step)
        env_state, reward, terminated, truncated, info, restarted = stepped
        # Every seed writes at the same slots: computed from the (unbatched) iteration, the write is one
        # slice per field, in place, where a per-seed cursor made it a scatter over seeds.
        start = (iteration_index * num_envs) % hyper.buffer_size
        ended = truncated if hyper.n_step > 1 else None  # a multi-step return stops at any episode end
        learned = learned_reward(reward, hyper.step_cost)  # the env's reward is tracked
        buffer = add(runner.buffer, runner.env_state, actions, learned, info["final_state"], terminated, start, ended)
        new_distance = jax.vmap(distance)(env_state)
        episodes = track(runner.episodes, reward, terminated, truncated, new_distance, window, restarted)
        env_state, episodes = keep(runner.frozen, (runner.env_state, runner.episodes), (env_state, episodes))
        runner = runner._replace(env_state=env_state, buffer=buffer, episodes=episodes, key=key)
        learn_now = (global_step > hyper.learning_starts) & (iteration_index % hyper.train_frequency == 0)
        no_update = lambda r, k, s: (r, jnp.float32(jnp.nan))  # noqa: E731
        runner, loss = jax.lax.cond(learn_now, _learn, no_update, runner, sample_key, global_step)
        return runner, {"loss": loss, "learned": learn_now, "epsilon": epsilon}

    def run_chunk(runner: Runner, first_iteration: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        return jax.lax.scan(_update_step, runner, first_iteration + jnp.arange(iterations_per_chunk))

    def train(key: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        return jax.lax.scan(_update_step, init(key), jnp.arange(config.num_iterations))

    return ScanTrain(train, init, run_chunk, network, iterations_per_chunk)


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


def make_learn(config: DQNConfig, learning_step: Callable, keep: Callable, knobs_of: Callable) -> Callable:
    """``learn(runner, key, global_step) -> (runner, loss)``: a training step's ``gradient_steps`` updates of
    ``learning_step`` with the runner's knobs (``knobs_of(runner)``), each on a batch of its own key (the loss, their
    mean); a frozen seed, or a lane before its own learning start, keeps its learner."""
    hyper, width = config.hyperparameters, config.params.width

    def _one_update(runner: Runner, key: jax.Array, global_step: jax.Array) -> tuple[Runner, jax.Array]:
        knobs = knobs_of(runner)
        if hyper.n_step > 1:  # the next slot to write is the cursor: this iteration's transitions came before it
            cursor = global_step % hyper.buffer_size
            batch = sample_multi_step(runner.buffer, key, hyper.batch_size, width, hyper.n_step, knobs.gamma, cursor)
        else:
            batch = sample(runner.buffer, key, hyper.batch_size, width)
        learner, loss = learning_step(runner.learner, batch, knobs)
        waiting = runner.frozen | (global_step <= knobs.learning_starts)
        return runner._replace(learner=keep(waiting, runner.learner, learner)), loss

    def _learn(runner: Runner, key: jax.Array, global_step: jax.Array) -> tuple[Runner, jax.Array]:
        if hyper.gradient_steps == 1:  # the program of one update per training step, as it was
            return _one_update(runner, key, global_step)
        # gradient_steps updates in a row, each on a batch of its own key; the loss logged is their mean.
        runner, losses = jax.lax.scan(
            lambda r, k: _one_update(r, k, global_step), runner, jax.random.split(key, hyper.gradient_steps)
        )
        return runner, losses.mean()

    return _learn


def make_init(
    config: DQNConfig, network: QNetwork, optimizer: optax.GradientTransformation
) -> Callable[[jax.Array], Runner]:
    """``init(key) -> Runner``: one seed's networks, env states, empty replay buffer and episode figures.

    The key splits three ways: the network's init, the env starts, the loop's own stream.
    """
    num_envs = config.hyperparameters.num_envs
    capacity, window = config.hyperparameters.buffer_size, config.run.rolling_episodes
    shortest = min_episode_steps(config.params)

    def init(key: jax.Array) -> Runner:
        network_key, env_key, loop_key = jax.random.split(key, 3)
        network_params = init_params(network, network_key)
        learner = LearnerState(network_params, network_params, optimizer.init(network_params), jnp.int32(0))
        _, env_state = F.batch_reset(env_key, num_envs, config.params)
        episodes = Episodes(
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
        buffer = empty_buffer(env_state, capacity, min_episode_steps=shortest)
        return Runner(learner, env_state, buffer, episodes, loop_key, jnp.bool_(False))

    return init


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


def train(config: DQNConfig, trial: Reporter | None = None, arm: Arm | None = None) -> TrainResult:
    """Trains ``config.run.num_seeds`` seeds in compiled ``vmap``s over the devices; figures are means over seeds.

    ``arm`` is the record it trains as (default: this file's :data:`ARM`); greedy evaluations are reported
    to ``trial`` if given (see :class:`~doors_gym_baselines.harness.Reporter`). A seed computes what it
    computes alone to float tolerance (its device's program has another batch shape). Each history row's
    ``per_seed`` holds each seed's figures; ``result.model`` is a :class:`~.scan_driver.ScanModel`.

    Raises:
        ValueError: ``config.run.devices`` beyond this process's devices.
    """
    with jax_compilation_cache(config.run.jax_cache) as jax_cache:
        return train_seeds(arm or ARM, make_train, config, trial, jax_cache)


ARM = Arm(
    "flax-scan",
    "flax",
    "DoorsJax-v0",
    "Flax + JAX env, one jitted scan",
    train,
    save_model,
    seeds_in_one_run=True,
    resumable=True,
    steps_pure_functions=True,
)
"""This file's arm."""

__all__ = ["ARM", "ScanModel", "load_model", "make_train", "save_model", "train"]
