"""DQN in Flax and optax against ``Doors-v0`` or ``DoorsJax-v0``: jitted acting and updates, host loop.

``python -m baselines.dqn_flax --env-id DoorsJax-v0`` or ``doors-gym train --arm flax``.
Follows ``dqn_torch.py`` section by section, so the two diff cleanly.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import flax.linen as nn
import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax

from doors_gym.core import AGENT, GOAL

from .common import (
    DQNConfig,
    EpisodeTracker,
    Progress,
    ReplayBuffer,
    TrainResult,
    evaluate_and_report,
    evaluate_greedy,
    history_row,
    is_solved,
    make_envs,
    prune,
    run_cli,
)

ARM = "flax"


class QNetwork(nn.Module):
    """MLP from the agent and goal planes to one Q-value per action.

    The first layer is a Dense layer over the one-hot agent and goal planes
    (``2 * H * W`` inputs). A one-hot input selects one kernel row per plane,
    so it is computed as those two rows: the same function and parameters,
    without multiplying zeros.
    """

    hidden_sizes: tuple[int, ...]
    num_actions: int = 5

    @nn.compact
    def __call__(self, obs: jax.Array | tuple[jax.Array, jax.Array, jax.Array]) -> jax.Array:
        """``(batch, H * W)`` int8 observations -> ``(batch, 5)`` Q-values.

        Also takes ``(agent_cell, goal_cell, goal_visible, num_cells)`` read off env states
        directly (see :func:`cells_of_states`): the same input, without building the grid.
        """
        if isinstance(obs, tuple):
            agent, goal, goal_visible, num_cells = obs
        else:
            agent, goal, goal_visible, num_cells = cells_of_observations(obs)
        kernel = self.param("planes_kernel", nn.initializers.lecun_normal(), (2 * num_cells, self.hidden_sizes[0]))
        bias = self.param("planes_bias", nn.initializers.zeros_init(), (self.hidden_sizes[0],))
        rows = jnp.take(kernel, agent, axis=0)  # jnp.take: params restored from a file are NumPy arrays
        goal_rows = jnp.take(kernel, num_cells + goal, axis=0)
        features = nn.relu(rows + jnp.where(goal_visible[:, None], goal_rows, 0.0) + bias)
        for hidden in self.hidden_sizes[1:]:
            features = nn.relu(nn.Dense(hidden)(features))
        return nn.Dense(self.num_actions)(features)


def cells_of_observations(obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, int]:
    """``(agent_cell, goal_cell, goal_visible, num_cells)`` of a batch of observations.

    Exactly one agent cell and at most one goal cell: a sum of cell indices
    finds them (a plain reduction; XLA's argmax is a slow two-value reduction
    on CPUs). The goal is hidden once the agent stands on it.
    """
    num_cells = obs.shape[-1]
    cells = jnp.arange(num_cells, dtype=jnp.int32)
    is_goal = obs == GOAL
    agent = jnp.sum(jnp.where(obs == AGENT, cells, 0), axis=-1)
    return agent, jnp.sum(jnp.where(is_goal, cells, 0), axis=-1), jnp.any(is_goal, axis=-1), num_cells


def cells_of_states(state: Any, width: int, num_cells: int) -> tuple[jax.Array, jax.Array, jax.Array, int]:
    """What :func:`cells_of_observations` reads off ``observation(state)``, computed from the state."""
    agent = state.agent_row * width + state.agent_col
    goal = state.goal_row * width + state.goal_col
    return agent, goal, agent != goal, num_cells


class LearnerState(NamedTuple):
    """Online and target parameters and the optimizer state (an immutable pytree)."""

    params: Any
    target_params: Any
    opt_state: Any


def make_optimizer(config: DQNConfig) -> optax.GradientTransformation:
    if config.optimizer == "adam":
        return optax.adam(config.learning_rate)
    return optax.sgd(config.learning_rate)


def make_loss(network: QNetwork, config: DQNConfig):
    """The TD loss ``loss(params, target_params, batch)``, shared with the fully jitted arm."""

    def loss_function(params: Any, target_params: Any, batch: tuple[Any, ...]) -> jax.Array:
        obs, actions, rewards, next_obs, terminated = batch
        next_values = network.apply(target_params, next_obs).max(axis=1)
        # Bootstrap through truncation: only termination cuts the return.
        targets = jax.lax.stop_gradient(rewards + config.gamma * next_values * (1.0 - terminated))
        values = jnp.take_along_axis(network.apply(params, obs), actions[:, None], axis=1).squeeze(1)
        if config.loss == "huber":
            return optax.huber_loss(values, targets, delta=1.0).mean()
        return jnp.mean((values - targets) ** 2)

    return loss_function


def make_update(network: QNetwork, optimizer: optax.GradientTransformation, config: DQNConfig):
    """The jitted gradient step: ``update(state, batch) -> (state, loss)``."""
    loss_function = make_loss(network, config)

    @jax.jit
    def update(state: LearnerState, batch: tuple[jax.Array, ...]) -> tuple[LearnerState, jax.Array]:
        loss, grads = jax.value_and_grad(loss_function)(state.params, state.target_params, batch)
        changes, opt_state = optimizer.update(grads, state.opt_state, state.params)
        return state._replace(params=optax.apply_updates(state.params, changes), opt_state=opt_state), loss

    return update


def greedy_actor(network: QNetwork, state_holder: list[LearnerState]):
    """A batch of NumPy observations -> greedy actions (NumPy), with the latest parameters."""
    apply = jax.jit(lambda params, obs: network.apply(params, obs).argmax(axis=1))

    def act(obs: np.ndarray) -> np.ndarray:
        return np.array(apply(state_holder[0].params, obs))

    return act


def train(config: DQNConfig, trial: Any = None) -> TrainResult:
    """Trains one seed; reports greedy evaluations to an Optuna ``trial`` if given.

    Returns a :class:`TrainResult` whose ``model`` is ``(QNetwork, params)``.
    """
    start = time.perf_counter()
    key = jax.random.key(config.seed)
    params = config.params
    envs = make_envs(config)
    q_network = QNetwork(tuple(config.hidden_sizes))
    network_params = q_network.init(key, jnp.zeros((1, params.num_cells), dtype=jnp.int8))
    optimizer = make_optimizer(config)
    state_holder = [LearnerState(network_params, network_params, optimizer.init(network_params))]
    update = make_update(q_network, optimizer, config)
    buffer = ReplayBuffer(config.buffer_size, params.num_cells, seed=config.seed)
    tracker = EpisodeTracker(config.num_envs, config.rolling_episodes)
    rng = np.random.default_rng(config.seed)
    act = greedy_actor(q_network, state_holder)
    progress = Progress(config.num_iterations * config.num_envs, f"{ARM} x {config.env_id}", config.quiet)

    obs, info = envs.reset(seed=config.seed)
    tracker.start(np.ones(config.num_envs, dtype=bool), info["distance"])
    previous_done = np.zeros(config.num_envs, dtype=bool)
    history: list[dict[str, float]] = []
    losses: list[float] = []
    updates = 0
    next_eval = config.eval_every or None
    for iteration in range(config.num_iterations):
        global_step = (iteration + 1) * config.num_envs
        epsilon = config.epsilon(global_step)
        actions = act(obs)
        explore = rng.random(config.num_envs) < epsilon
        actions[explore] = rng.integers(0, 5, int(explore.sum()))

        next_obs, rewards, terminated, truncated, info = envs.step(actions)
        # Next-step autoreset: a step that follows an episode end is a reset, not a transition.
        valid = ~previous_done
        buffer.add(obs[valid], actions[valid], rewards[valid], next_obs[valid], terminated[valid])
        finished = tracker.record(rewards, terminated, truncated, valid)
        tracker.start(previous_done, info["distance"])
        previous_done = terminated | truncated
        obs = next_obs

        if global_step > config.learning_starts and iteration % config.train_frequency == 0:
            batch = buffer.sample(config.batch_size)
            state_holder[0], loss = update(state_holder[0], batch)
            updates += 1
            losses.append(float(loss))
            if updates % config.target_update == 0:
                state_holder[0] = state_holder[0]._replace(target_params=state_holder[0].params)
            if not np.isfinite(losses[-1]):
                prune(trial, f"non-finite loss {losses[-1]} at step {global_step}")

        progress.update(config.num_envs, ret=finished[-1] if finished else float("nan"), eps=epsilon)
        if next_eval is not None and global_step >= next_eval and iteration + 1 < config.num_iterations:
            next_eval += config.eval_every
            history.append(evaluate_and_report(act, config, tracker, global_step, start, losses, trial))
            if config.stop_when_solved and is_solved(history[-1]):
                break
    progress.close()
    envs.close()
    evaluation = evaluate_greedy(act, params)
    history.append(history_row(evaluation, tracker, global_step, start, losses, config.epsilon(global_step)))
    return TrainResult(
        arm=ARM,
        config=config,
        evaluation=evaluation,
        rolling_reward=tracker.summary()["rolling_reward"],
        wall_seconds=time.perf_counter() - start,
        env_steps=global_step,
        updates=updates,
        history=history,
        model=(q_network, state_holder[0].params),
        losses=losses,
    )


def save_model(result: TrainResult, path: str) -> None:
    """Writes the parameters and the config as one msgpack file (``flax.serialization``)."""
    _, network_params = result.model
    payload = {
        "arm": ARM,
        "config": result.config.to_dict(),
        "params": flax.serialization.to_state_dict(network_params),
    }
    with open(path, "wb") as handle:
        handle.write(flax.serialization.msgpack_serialize(payload))


def load_model(path: str) -> tuple[QNetwork, Any, DQNConfig]:
    """Reads a file of :func:`save_model`: ``(network, params, config)``; no code is unpickled."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        payload = flax.serialization.msgpack_restore(data)
    except Exception as error:  # msgpack raises several types for foreign files
        raise ValueError(f"{path!r} is not a Flax DQN model written by save_model ({error})") from None
    if not isinstance(payload, dict) or payload.get("arm") not in ("flax", "flax-scan"):
        raise ValueError(f"{path!r} is not a Flax DQN model written by save_model")
    config = DQNConfig.from_dict(payload["config"])
    network = QNetwork(tuple(config.hidden_sizes))
    template = network.init(jax.random.key(0), jnp.zeros((1, config.params.num_cells), dtype=jnp.int8))
    params = jax.tree.map(jnp.asarray, flax.serialization.from_state_dict(template, payload["params"]))
    return network, params, config


def main(argv: list[str] | None = None) -> int:
    return run_cli(train, ARM, argv)


if __name__ == "__main__":
    raise SystemExit(main())
