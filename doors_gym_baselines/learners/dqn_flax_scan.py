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

import jax
import jax.numpy as jnp
import optax

from doors_gym.jax import functional as F

from ..api import Arm
from ..config import ALGORITHMS, DQNConfig, schedules
from ..harness import Reporter
from ..harness.device_replay import add, cells_of_states, empty_buffer, sample, sample_multi_step
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
from .pqn_scan import make_train as make_pqn_train
from .scan_driver import ScanModel, save_model, train_seeds
from .scan_parts import Runner, ScanTrain, distance, keep_frozen, make_env_step, new_episodes, track
from .scan_parts import iterations_per_chunk


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
    per_chunk = iterations_per_chunk(config)
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
        return jax.lax.scan(_update_step, runner, first_iteration + jnp.arange(per_chunk))

    def train(key: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        return jax.lax.scan(_update_step, init(key), jnp.arange(config.num_iterations))

    return ScanTrain(train, init, run_chunk, network, per_chunk)


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
        buffer = empty_buffer(env_state, capacity, min_episode_steps=shortest)
        return Runner(learner, env_state, buffer, new_episodes(env_state, window), loop_key, jnp.bool_(False))

    return init


def train(config: DQNConfig, trial: Reporter | None = None, arm: Arm | None = None) -> TrainResult:
    """Trains ``config.run.num_seeds`` seeds in compiled ``vmap``s over the devices; figures are means over seeds.

    ``arm`` is the record it trains as (default: this file's :data:`ARM`); greedy evaluations are reported
    to ``trial`` if given (see :class:`~doors_gym_baselines.harness.Reporter`). A seed computes what it
    computes alone to float tolerance (its device's program has another batch shape). Each history row's
    ``per_seed`` holds each seed's figures; ``result.model`` is a :class:`~.scan_driver.ScanModel`.

    Raises:
        ValueError: ``config.run.devices`` beyond this process's devices.
    """
    program = make_pqn_train if config.hyperparameters.algorithm == "pqn" else make_train
    with jax_compilation_cache(config.run.jax_cache) as jax_cache:
        return train_seeds(arm or ARM, program, config, trial, jax_cache)


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
    algorithms=ALGORITHMS,
)
"""This file's arm."""

__all__ = ["ARM", "ScanModel", "load_model", "make_train", "save_model", "train"]
