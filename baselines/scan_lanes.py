"""Lanes: several settings of the fully jitted arm trained in one compiled program (one ``vmap`` over them).

A lane is one run of its own hyperparameters and seed. The hyperparameters that fix the program's arrays or
its control flow (network widths, batch, buffer, env count, train frequency, optimizer, loss) are the
program's, one for every lane; those in :data:`PER_LANE` are arrays with a value per lane, read in the trace:
the discount, the learning rate and its decay, gradient clipping, the target network's period and ``tau``,
learning starts, the exploration schedule, Double DQN, advantage learning's share and the exploring starts.
``make_train(config, lanes=True)`` of :mod:`.dqn_flax_scan` trains with them; each lane computes what its own run
computes, to float tolerance. One exception, in the random draws only: a program draws exploring starts when any of
its lanes has them, so a lane with ``restart_prob`` 0 among them plays the same algorithm with other draws than its
run alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .config import DQNConfig
from .dqn_flax import LearnerState, QNetwork, action_shortfall

PER_LANE = (
    "gamma",
    "learning_rate",
    "lr_end_fraction",
    "max_grad_norm",
    "tau",
    "target_update",
    "learning_starts",
    "exploration_fraction",
    "double_dqn",
    "advantage_learning",
    "restart_prob",
    "restart_fraction",
)
"""The hyperparameters that may differ between the lanes of one program."""


class LaneHyper(NamedTuple):
    """The per-lane hyperparameters (each an array, one value per lane once stacked), and the updates over which
    each lane's learning rate decays (``DQNConfig.lr_decay_updates``)."""

    gamma: Any
    learning_rate: Any
    lr_end_fraction: Any
    max_grad_norm: Any
    tau: Any
    target_update: Any
    learning_starts: Any
    exploration_fraction: Any
    double_dqn: Any
    advantage_learning: Any
    restart_prob: Any
    restart_fraction: Any
    decay_updates: Any


def lane_values(configs: Sequence[DQNConfig]) -> LaneHyper:
    """The lanes' :class:`LaneHyper` stacked over ``configs`` (NumPy arrays of shape ``(lanes,)``).

    Raises:
        ValueError: the configs differ in a hyperparameter outside :data:`PER_LANE` (or in their run settings
            other than the seed), which one program cannot hold.
    """
    first = configs[0]
    shared = {name: value for name, value in dataclasses.asdict(first.hyperparameters).items() if name not in PER_LANE}
    for config in configs[1:]:
        values = dataclasses.asdict(config.hyperparameters)
        differ = sorted(name for name, value in shared.items() if values[name] != value)
        if differ or dataclasses.replace(config.run, seed=first.run.seed) != first.run:
            raise ValueError(
                f"configs differ in {differ or ['run settings']}: the lanes of one program may differ only in "
                f"{', '.join(PER_LANE)} and the seed"
            )
    columns = {name: [getattr(config.hyperparameters, name) for config in configs] for name in PER_LANE}
    dtypes = {"target_update": np.int32, "learning_starts": np.int32, "double_dqn": bool}
    arrays = {name: np.asarray(values, dtypes.get(name, np.float32)) for name, values in columns.items()}
    return LaneHyper(**arrays, decay_updates=np.asarray([config.lr_decay_updates for config in configs], np.int32))


def program_config(configs: Sequence[DQNConfig]) -> DQNConfig:
    """The config a program of these lanes is traced with: the first lane's, learning from the earliest start, with
    exploring starts drawn where any lane has them (each lane's probability is its own, :func:`lane_restart`) and
    advantage learning traced where any lane has it (each lane's share is its own, :func:`lane_loss`)."""
    first = configs[0]
    earliest = min(config.hyperparameters.learning_starts for config in configs)
    restarts = max(config.hyperparameters.restart_prob for config in configs)
    share = max(config.hyperparameters.advantage_learning for config in configs)
    return first.replace(learning_starts=earliest, restart_prob=restarts, advantage_learning=share)


def lane_optimizer(config: DQNConfig) -> optax.GradientTransformation:
    """The optimizer's stateful part, the same in every lane: Adam's moments, or nothing for SGD."""
    return optax.scale_by_adam() if config.hyperparameters.optimizer == "adam" else optax.identity()


def lane_epsilon(config: DQNConfig, lane: LaneHyper, step: jax.Array) -> jax.Array:
    """The exploration rate at env step ``step`` with the lane's exploration fraction (``DQNConfig.epsilon``'s)."""
    hyper = config.hyperparameters
    duration = jnp.maximum(1.0, lane.exploration_fraction * config.run.total_steps)
    fraction = jnp.minimum(1.0, step / duration)
    return hyper.start_epsilon + fraction * (hyper.end_epsilon - hyper.start_epsilon)


def lane_restart(config: DQNConfig, lane: LaneHyper, step: jax.Array) -> jax.Array:
    """The lane's probability of exploring starts at env step ``step`` (``DQNConfig.restart_probability``'s)."""
    duration = jnp.maximum(1.0, lane.restart_fraction * config.run.total_steps)
    return lane.restart_prob * jnp.maximum(0.0, 1.0 - step / duration)


def lane_loss(network: QNetwork, config: DQNConfig) -> Callable:
    """``loss(params, target_params, batch, lane)``: the TD loss with the lane's discount, Double DQN flag and
    advantage learning's share."""
    huber = config.hyperparameters.loss == "huber"
    advantage_learning = config.hyperparameters.advantage_learning > 0  # any lane's (program_config's maximum)

    def loss_function(params: Any, target_params: Any, batch: tuple[Any, ...], lane: LaneHyper) -> jax.Array:
        obs, actions, rewards, next_obs, terminated, *multi_step = batch
        next_q = network.apply(target_params, next_obs)
        next_actions = network.apply(params, next_obs).argmax(axis=1)
        double_values = jnp.take_along_axis(next_q, next_actions[:, None], axis=1).squeeze(1)
        next_values = jnp.where(lane.double_dqn, double_values, next_q.max(axis=1))
        discounts = multi_step[0] if multi_step else lane.gamma  # a multi-step batch's gamma ** steps taken
        targets = rewards + discounts * next_values * (1.0 - terminated)
        if advantage_learning:  # a lane without it takes 0 of the shortfall
            targets = targets - lane.advantage_learning * action_shortfall(network.apply(target_params, obs), actions)
        targets = jax.lax.stop_gradient(targets)
        values = jnp.take_along_axis(network.apply(params, obs), actions[:, None], axis=1).squeeze(1)
        if huber:
            return optax.huber_loss(values, targets, delta=1.0).mean()
        return jnp.mean((values - targets) ** 2)

    return loss_function


def lane_learning_step(network: QNetwork, config: DQNConfig) -> Callable:
    """``step(state, batch, lane) -> (state, loss)``: ``dqn_flax.learn``'s step with the lane's hyperparameters
    (clipping, the linearly decayed learning rate, the target's period and ``tau``) read from ``lane``."""
    loss_function, optimizer = lane_loss(network, config), lane_optimizer(config)

    def step(state: LearnerState, batch: tuple, lane: LaneHyper) -> tuple[LearnerState, jax.Array]:
        loss, grads = jax.value_and_grad(loss_function)(state.params, state.target_params, batch, lane)
        norm = optax.tree.norm(grads)
        clip = (lane.max_grad_norm > 0) & (norm >= lane.max_grad_norm)
        grads = jax.tree.map(lambda g: jnp.where(clip, g / norm * lane.max_grad_norm, g), grads)
        changes, opt_state = optimizer.update(grads, state.opt_state, state.params)
        progress = jnp.minimum(state.updates / lane.decay_updates, 1.0)
        rate = lane.learning_rate * (1.0 - (1.0 - lane.lr_end_fraction) * progress)
        params = optax.apply_updates(state.params, jax.tree.map(lambda change: -rate * change, changes))
        updates = state.updates + 1
        target = optax.incremental_update(params, state.target_params, lane.tau)
        target_params = optax.periodic_update(target, state.target_params, updates, lane.target_update)
        return LearnerState(params, target_params, opt_state, updates), loss

    return step
