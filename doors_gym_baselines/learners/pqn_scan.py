"""PQN in the fully jitted arm (``--set algorithm=pqn``): Q(lambda) over parallel envs, no replay, no target network.

PQN (Gallici et al., "Simplifying Deep Temporal Difference Learning", ICLR 2025; purejaxql's ``pqn_*.py`` as the
reference) steps ``num_envs`` envs with the online network's epsilon-greedy actions for ``rollout_steps`` vector
steps, computes Peng's Q(lambda) returns backward over that rollout (:func:`lambda_returns`, bootstrapped with the
values the acting network gave the next states), then takes ``epochs`` passes of ``minibatches`` minibatches of
TD error against those returns. LayerNorm (``layer_norm``) keeps TD learning stable without a target network.

The program has the DQN program's shape (:mod:`.dqn_flax_scan`, :mod:`.scan_parts`), so the driver (:mod:`.scan_driver`: segments,
evaluations, seeds in one run, checkpoints) runs it unchanged: one scan iteration is one vector step; the rollout
sits in the runner's ``buffer`` slot, and the learning phase runs at the rollout's last step. The network, inputs,
optimizer, learning-rate schedule, epsilon schedule, step cost and episode figures are the DQN arm's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from doors_gym.jax import functional as F

from ..config import DQNConfig, schedules
from ..harness.device_replay import cells_of_states
from ..harness.replay import learned_reward
from .dqn_flax import (
    Knobs,
    LearnerState,
    QNetwork,
    epsilon_greedy,
    init_params,
    make_network,
    make_optimizer,
    make_regression_step,
)
from .scan_parts import Runner, ScanTrain, distance, keep_frozen, make_env_step, new_episodes, track
from .scan_parts import iterations_per_chunk


class Rollout(NamedTuple):
    """The transitions of the rollout under way, ``(rollout_steps, num_envs, ...)`` each."""

    cells: jax.Array
    actions: jax.Array
    rewards: jax.Array
    """The rewards the learner learns (the env's less the step cost)."""
    terminated: jax.Array
    ended: jax.Array
    """The episode ended at this step (terminated or truncated): the return stops here."""
    next_values: jax.Array
    """``max_a Q(s', a)`` of the step's true next state ``s'`` (the final state where the episode ended), under the
    network that acted."""


def lambda_returns(
    rewards: jax.Array, terminated: jax.Array, ended: jax.Array, next_values: jax.Array, gamma: Any, lam: Any
) -> jax.Array:
    """Peng's Q(lambda) returns of a rollout (each argument ``(T, num_envs)``), backward from its last step:
    ``G_t = r_t + gamma * (1 - terminated_t) * B_t``, with ``B_t = V_t`` where the episode ended at ``t`` or ``t`` is
    the rollout's last step, else ``B_t = lam * G_{t+1} + (1 - lam) * V_t`` (``V_t``: ``next_values``, the best
    action's value at the next state). ``lam`` 0 gives one-step Q-learning targets."""

    def back(following: jax.Array, step: tuple) -> tuple[jax.Array, jax.Array]:
        reward, term, end, value = step
        bootstrap = jnp.where(end, value, lam * following + (1.0 - lam) * value)
        value_of_step = reward + gamma * (1.0 - term) * bootstrap
        return value_of_step, value_of_step

    steps = (rewards, terminated.astype(rewards.dtype), ended, next_values)
    return jax.lax.scan(back, next_values[-1], steps, reverse=True)[1]


def make_train(config: DQNConfig, lanes: bool = False) -> ScanTrain:
    """The pure functions of a PQN run of ``config`` (the :class:`~.scan_parts.ScanTrain` of the DQN program);
    each traces for one seed (vmap it).

    With ``lanes`` each seed is a lane of a study (:mod:`.scan_lanes`), as in the DQN program: its runner's ``lane``
    holds its own discount, learning rate and decay, gradient clipping, exploration schedule and exploring starts
    (the knobs PQN reads), and ``config`` gives the program's shapes, ``td_lambda`` and rollout.
    """
    params, hyper = config.params, config.hyperparameters
    num_envs, width, window, steps = hyper.num_envs, params.width, config.run.rolling_episodes, hyper.rollout_steps
    network, optimizer, own_knobs = make_network(config), make_optimizer(config), Knobs.of(config)
    total = config.run.total_steps
    env_step = make_env_step(config)
    # Only seeds trained together can stop apart; a lone seed's program is left exactly as it was.
    keep = keep_frozen if config.run.num_seeds > 1 or lanes else lambda frozen, old, new: new
    knobs_of = (lambda runner: runner.lane) if lanes else (lambda runner: own_knobs)  # noqa: E731
    learn = make_learn(network, config, knobs_of, keep)

    def _update_step(runner: Runner, iteration_index: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        key, explore_key, random_key, step_key, learn_key = jax.random.split(runner.key, 5)
        global_step = (iteration_index + 1) * num_envs
        params_now, knobs = runner.learner.params, knobs_of(runner)
        epsilon = schedules.epsilon(
            global_step, hyper.start_epsilon, hyper.end_epsilon, knobs.exploration_fraction, total, jnp
        )
        cells = cells_of_states(runner.env_state, width)
        actions = epsilon_greedy(network.apply(params_now, cells).argmax(axis=1), epsilon, explore_key, random_key)
        env_state, reward, terminated, truncated, info, restarted = env_step(
            step_key, runner.env_state, actions, knobs, global_step
        )
        next_values = network.apply(params_now, cells_of_states(info["final_state"], width)).max(axis=1)
        slot = iteration_index % steps
        learned = learned_reward(reward, hyper.step_cost)
        step = (cells, actions, learned, terminated, terminated | truncated, next_values)
        rollout = Rollout(*(whole.at[slot].set(part) for whole, part in zip(runner.buffer, step)))
        new_distance = jax.vmap(distance)(env_state)
        episodes = track(runner.episodes, reward, terminated, truncated, new_distance, window, restarted)
        env_state, episodes = keep(runner.frozen, (runner.env_state, runner.episodes), (env_state, episodes))
        runner = runner._replace(env_state=env_state, buffer=rollout, episodes=episodes, key=key)
        learn_now = slot == steps - 1
        no_update = lambda r, k: (r, jnp.float32(jnp.nan))  # noqa: E731
        runner, loss = jax.lax.cond(learn_now, learn, no_update, runner, learn_key)
        return runner, {"loss": loss, "learned": learn_now, "epsilon": epsilon}

    init = make_init(config, network, optimizer)
    per_chunk = iterations_per_chunk(config)

    def run_chunk(runner: Runner, first_iteration: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        return jax.lax.scan(_update_step, runner, first_iteration + jnp.arange(per_chunk))

    def train(key: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        return jax.lax.scan(_update_step, init(key), jnp.arange(config.num_iterations))

    return ScanTrain(train, init, run_chunk, network, per_chunk)


def make_init(config: DQNConfig, network: QNetwork, optimizer: Any) -> Callable[[jax.Array], Runner]:
    """``init(key) -> Runner``: one seed's network (no target copy), env states, empty rollout and episode figures;
    the key splits as the DQN program's (network, envs, loop)."""
    hyper, window = config.hyperparameters, config.run.rolling_episodes
    num_envs, steps = hyper.num_envs, hyper.rollout_steps

    def init(key: jax.Array) -> Runner:
        network_key, env_key, loop_key = jax.random.split(key, 3)
        network_params = init_params(network, network_key)
        learner = LearnerState(network_params, None, optimizer.init(network_params), jnp.int32(0))
        _, env_state = F.batch_reset(env_key, num_envs, config.params)
        cells = cells_of_states(env_state, config.params.width)
        rollout = Rollout(
            jnp.zeros((steps, *cells.shape), cells.dtype),
            jnp.zeros((steps, num_envs), jnp.int32),
            jnp.zeros((steps, num_envs)),
            jnp.zeros((steps, num_envs), bool),
            jnp.zeros((steps, num_envs), bool),
            jnp.zeros((steps, num_envs)),
        )
        return Runner(learner, env_state, rollout, new_episodes(env_state, window), loop_key, jnp.bool_(False))

    return init


def make_learn(network: QNetwork, config: DQNConfig, knobs_of: Callable, keep: Callable) -> Callable:
    """``learn(runner, key) -> (runner, loss)``: the learning phase at a rollout's end: its Q(lambda) returns, then
    ``epochs`` passes over its transitions in ``minibatches`` shuffled minibatches, a step of
    :func:`~.dqn_flax.make_regression_step` each with the runner's knobs (``knobs_of(runner)``; the loss: their
    mean); a frozen seed or lane keeps its learner (``keep``)."""
    hyper = config.hyperparameters
    samples = hyper.rollout_steps * hyper.num_envs
    size = samples // hyper.minibatches
    step = make_regression_step(network, config)

    def learn(runner: Runner, key: jax.Array) -> tuple[Runner, jax.Array]:
        knobs = knobs_of(runner)

        def one_update(state: LearnerState, batch: tuple[jax.Array, ...]) -> tuple[LearnerState, jax.Array]:
            return step(state, batch, knobs)

        rollout = runner.buffer
        returns = lambda_returns(
            rollout.rewards, rollout.terminated, rollout.ended, rollout.next_values, knobs.gamma, hyper.td_lambda
        )
        flat = (rollout.cells.reshape(samples, -1), rollout.actions.reshape(samples), returns.reshape(samples))
        orders = jnp.concatenate([jax.random.permutation(k, samples) for k in jax.random.split(key, hyper.epochs)])
        batches = jax.tree.map(lambda x: x[orders].reshape(hyper.epochs * hyper.minibatches, size, *x.shape[1:]), flat)
        learner, losses = jax.lax.scan(one_update, runner.learner, batches)
        learner = keep(runner.frozen, runner.learner, learner)
        return runner._replace(learner=learner), losses.mean()

    return learn
