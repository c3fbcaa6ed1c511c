"""DQN with env, acting, replay buffer and updates in one ``lax.scan`` (PureJaxRL style).

``python -m baselines.dqn_flax_scan --num-seeds 8`` or ``doors-gym train --arm flax-scan``.

``make_train(config)`` returns pure ``init(key)`` and ``run_chunk(runner, first_iteration)``;
``train`` jits ``vmap`` of both over seeds, so ``num_seeds`` seeds train in one
compile, each from its own key (its own network init, env starts and
exploration). The host only loops over chunks, to show progress and run greedy
evaluations between them. The replay buffer stores env states (5 int32 each),
not observations: the observation of a sampled batch is rebuilt by the same
``observation`` function the env uses.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from doors_gym.core import DoorsState
from doors_gym.jax import functional as F

from .common import DQNConfig, Evaluation, Progress, TrainResult, evaluate_greedy, is_solved, prune, report, run_cli
from .dqn_flax import LearnerState, QNetwork, cells_of_states, load_model, make_loss, make_optimizer
from .dqn_flax import save_model as save_flax_model

ARM = "flax-scan"
CHUNKS = 20
"""Host round trips per run: progress, greedy evaluations and pruning happen between chunks."""


class Buffer(NamedTuple):
    """Replay buffer of ``(state, action, reward, next_state, terminated)``, each ``(capacity, ...)``."""

    state: DoorsState
    action: jax.Array
    reward: jax.Array
    next_state: DoorsState
    terminated: jax.Array
    size: jax.Array
    cursor: jax.Array


class Episodes(NamedTuple):
    """Running episodes per env and a ring of the last ``rolling_episodes`` finished ones."""

    running_return: jax.Array
    running_length: jax.Array
    start_distance: jax.Array
    returns: jax.Array
    lengths: jax.Array
    success: jax.Array
    normalised: jax.Array
    count: jax.Array


class Runner(NamedTuple):
    """Everything one seed carries through the scan."""

    learner: LearnerState
    env_state: DoorsState
    obs: jax.Array
    buffer: Buffer
    episodes: Episodes
    updates: jax.Array
    key: jax.Array


def make_train(
    config: DQNConfig,
) -> tuple[Callable[[jax.Array], Runner], Callable[[Runner, jax.Array], tuple[Runner, dict]], QNetwork, int]:
    """Pure ``init(key) -> Runner`` and ``run_chunk(runner, first_iteration) -> (runner, metrics)``.

    Returns ``(init, run_chunk, network, iterations_per_chunk)``.
    """
    params = config.params
    num_envs = config.num_envs
    network = QNetwork(tuple(config.hidden_sizes))
    optimizer = make_optimizer(config)
    epsilon_schedule = optax.linear_schedule(
        config.start_epsilon, config.end_epsilon, max(1, int(config.exploration_fraction * config.total_steps))
    )
    iterations_per_chunk = max(1, -(-config.num_iterations // CHUNKS))
    capacity, window = config.buffer_size, config.rolling_episodes

    def init(key: jax.Array) -> Runner:
        network_key, env_key, loop_key = jax.random.split(key, 3)
        network_params = network.init(network_key, jnp.zeros((1, params.num_cells), dtype=jnp.int8))
        learner = LearnerState(network_params, network_params, optimizer.init(network_params))
        obs, env_state = F.batch_reset(env_key, num_envs, params)
        empty_states = jax.tree.map(lambda field: jnp.zeros((capacity,), field.dtype), env_state)
        buffer = Buffer(
            empty_states,
            jnp.zeros(capacity, jnp.int32),
            jnp.zeros(capacity, jnp.float32),
            empty_states,
            jnp.zeros(capacity, jnp.float32),
            jnp.int32(0),
            jnp.int32(0),
        )
        episodes = Episodes(
            jnp.zeros(num_envs),
            jnp.zeros(num_envs, jnp.int32),
            jax.vmap(_distance)(env_state),
            jnp.zeros(window),
            jnp.zeros(window, jnp.int32),
            jnp.zeros(window, bool),
            jnp.zeros(window),
            jnp.int32(0),
        )
        return Runner(learner, env_state, obs, buffer, episodes, jnp.int32(0), loop_key)

    loss_function = make_loss(network, config)

    def update(runner: Runner, key: jax.Array) -> tuple[Runner, jax.Array]:
        buffer = runner.buffer
        index = jax.random.randint(key, (config.batch_size,), 0, jnp.maximum(buffer.size, 1))
        # The network reads the agent and goal cells; from stored states they need no grid.
        cells = lambda tree: cells_of_states(  # noqa: E731
            jax.tree.map(lambda field: field[index], tree), params.width, params.num_cells
        )
        batch = (
            cells(buffer.state),
            buffer.action[index],
            buffer.reward[index],
            cells(buffer.next_state),
            buffer.terminated[index],
        )
        learner = runner.learner
        loss, grads = jax.value_and_grad(loss_function)(learner.params, learner.target_params, batch)
        changes, opt_state = optimizer.update(grads, learner.opt_state, learner.params)
        network_params = optax.apply_updates(learner.params, changes)
        updates = runner.updates + 1
        target_params = optax.periodic_update(network_params, learner.target_params, updates, config.target_update)
        return runner._replace(learner=LearnerState(network_params, target_params, opt_state), updates=updates), loss

    def iteration(runner: Runner, iteration_index: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        key, explore_key, random_key, step_key, sample_key = jax.random.split(runner.key, 5)
        global_step = (iteration_index + 1) * num_envs
        epsilon = epsilon_schedule(global_step)
        greedy = network.apply(runner.learner.params, runner.obs).argmax(axis=1)
        random_actions = jax.random.randint(random_key, (num_envs,), 0, 5)
        explore = jax.random.uniform(explore_key, (num_envs,)) < epsilon
        actions = jnp.where(explore, random_actions, greedy).astype(jnp.int32)

        obs, env_state, reward, terminated, truncated, info = F.batch_step(step_key, runner.env_state, actions, params)
        buffer = _add(runner.buffer, runner.env_state, actions, reward, info["final_state"], terminated, capacity)
        episodes = _track(runner.episodes, reward, terminated, truncated, jax.vmap(_distance)(env_state), window)
        runner = runner._replace(env_state=env_state, obs=obs, buffer=buffer, episodes=episodes, key=key)

        learn = (global_step > config.learning_starts) & (iteration_index % config.train_frequency == 0)
        runner, loss = jax.lax.cond(learn, update, lambda r, k: (r, jnp.float32(jnp.nan)), runner, sample_key)
        return runner, {"loss": loss, "learned": learn, "epsilon": epsilon}

    def run_chunk(runner: Runner, first_iteration: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        indices = first_iteration + jnp.arange(iterations_per_chunk)
        return jax.lax.scan(iteration, runner, indices)

    return init, run_chunk, network, iterations_per_chunk


def _distance(state: DoorsState) -> jax.Array:
    from doors_gym import core

    return core.state_distance(state, jnp)


def _add(
    buffer: Buffer,
    state: DoorsState,
    action: jax.Array,
    reward: jax.Array,
    next_state: DoorsState,
    terminated: jax.Array,
    capacity: int,
) -> Buffer:
    """Writes one transition per env at the cursor (a ring)."""
    index = (buffer.cursor + jnp.arange(action.shape[0])) % capacity
    put = lambda stored, new: jax.tree.map(lambda field, value: field.at[index].set(value), stored, new)  # noqa: E731
    return Buffer(
        put(buffer.state, state),
        buffer.action.at[index].set(action),
        buffer.reward.at[index].set(reward),
        put(buffer.next_state, next_state),
        buffer.terminated.at[index].set(terminated.astype(jnp.float32)),
        jnp.minimum(buffer.size + action.shape[0], capacity),
        (buffer.cursor + action.shape[0]) % capacity,
    )


def _track(
    episodes: Episodes,
    reward: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    new_distance: jax.Array,
    window: int,
) -> Episodes:
    """Adds a step to the running episodes and moves the ended ones into the ring."""
    running_return = episodes.running_return + reward
    running_length = episodes.running_length + 1
    done = terminated | truncated
    slot = jnp.where(done, (episodes.count + jnp.cumsum(done) - 1) % window, window)  # window: dropped
    put = lambda ring, value: ring.at[slot].set(value, mode="drop")  # noqa: E731
    return Episodes(
        running_return=jnp.where(done, 0.0, running_return),
        running_length=jnp.where(done, 0, running_length),
        start_distance=jnp.where(done, new_distance, episodes.start_distance),
        returns=put(episodes.returns, running_return),
        lengths=put(episodes.lengths, running_length),
        success=put(episodes.success, terminated),
        normalised=put(episodes.normalised, running_return / jnp.maximum(episodes.start_distance, 1e-6)),
        count=episodes.count + done.sum(),
    )


def rolling_figures(episodes: Episodes) -> dict[str, np.ndarray]:
    """Per-seed rolling reward, success and normalised return over the ring (NaN while empty)."""
    count = np.minimum(np.asarray(episodes.count), episodes.returns.shape[-1])
    filled = np.arange(episodes.returns.shape[-1])[None, :] < count[:, None]
    returns, lengths = np.asarray(episodes.returns), np.asarray(episodes.lengths)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "rolling_reward": (returns * filled).sum(1) / (lengths * filled).sum(1),
            "train_success_rate": (np.asarray(episodes.success) * filled).sum(1) / count,
            "train_normalised_return": (np.asarray(episodes.normalised) * filled).sum(1) / count,
            "train_episode_return": (returns * filled).sum(1) / count,
            "train_episode_length": (lengths * filled).sum(1) / count,
        }


def seed_actor(network: QNetwork, stacked_params: Any, seed_index: int) -> Callable[[np.ndarray], np.ndarray]:
    """Greedy actions of one seed's parameters, for host-side evaluation (compiled once per network)."""
    apply = _greedy_apply(network)
    own = jax.tree.map(lambda leaf: leaf[seed_index], stacked_params)
    return lambda obs: np.asarray(apply(own, obs))


@functools.lru_cache(maxsize=8)
def _greedy_apply(network: QNetwork) -> Callable[[Any, Any], jax.Array]:
    return jax.jit(lambda params, obs: network.apply(params, obs).argmax(axis=1))


def _nanmean(values: np.ndarray) -> float:
    """Mean over seeds that have figures; NaN (without a warning) before any episode ended."""
    values = np.asarray(values, dtype=float)
    finite = values[~np.isnan(values)]
    return float(finite.mean()) if finite.size else float("nan")


def _mean_evaluation(evaluations: list[Evaluation]) -> Evaluation:
    return Evaluation(
        success_rate=float(np.mean([e.success_rate for e in evaluations])),
        mean_step_reward=float(np.mean([e.mean_step_reward for e in evaluations])),
        normalised_return=float(np.mean([e.normalised_return for e in evaluations])),
        mean_return=float(np.mean([e.mean_return for e in evaluations])),
        episodes=sum(e.episodes for e in evaluations),
    )


def train(config: DQNConfig, trial: Any = None) -> TrainResult:
    """Trains ``config.num_seeds`` seeds in one compiled ``vmap``; figures are means over seeds.

    ``result.per_seed`` (in ``history[-1]["per_seed"]``) holds each seed's
    figures; ``result.model`` is ``(QNetwork, params stacked over seeds)``.
    """
    start = time.perf_counter()
    init, run_chunk, network, iterations_per_chunk = make_train(config)
    seeds = jnp.arange(config.num_seeds) + config.seed
    keys = jax.vmap(jax.random.key)(seeds)
    runner = jax.jit(jax.vmap(init))(keys)
    chunk = jax.jit(jax.vmap(run_chunk, in_axes=(0, None)), donate_argnums=0)
    progress = Progress(
        config.num_iterations * config.num_envs * config.num_seeds, f"{ARM} x {config.num_seeds} seeds", config.quiet
    )
    history: list[dict[str, Any]] = []
    losses: list[float] = []
    next_eval = config.eval_every or None
    first = 0
    while first < config.num_iterations:
        runner, metrics = chunk(runner, jnp.int32(first))
        learned = np.asarray(metrics["learned"])[0]  # the same iterations learn in every seed
        chunk_losses = np.asarray(metrics["loss"])[:, learned]
        if not np.isfinite(chunk_losses).all():
            prune(trial, f"non-finite loss before step {(first + iterations_per_chunk) * config.num_envs}")
        losses.extend(chunk_losses.mean(axis=0).tolist())  # one entry per update, averaged over seeds
        done_iterations = min(first + iterations_per_chunk, config.num_iterations)
        global_step = done_iterations * config.num_envs
        rolling = rolling_figures(runner.episodes)
        progress.update(
            (done_iterations - first) * config.num_envs * config.num_seeds,
            rolling=_nanmean(rolling["rolling_reward"]),
            eps=float(np.asarray(metrics["epsilon"])[0, -1]),
        )
        first += iterations_per_chunk
        if next_eval is not None and global_step >= next_eval and first < config.num_iterations:
            next_eval += config.eval_every
            row = _history_row(network, runner, config, global_step, start, losses)
            history.append(row)
            report(trial, row)
            if config.stop_when_solved and all(is_solved(seed) for seed in row["per_seed"]):
                break
    jax.block_until_ready(runner)
    progress.close()
    row = _history_row(network, runner, config, global_step, start, losses)
    history.append(row)
    return TrainResult(
        arm=ARM,
        config=config,
        evaluation=row["evaluation"],
        rolling_reward=row["rolling_reward"],
        wall_seconds=time.perf_counter() - start,
        env_steps=global_step * config.num_seeds,
        updates=int(np.asarray(runner.updates).sum()),
        history=history,
        model=(network, runner.learner.params),
        losses=losses,
    )


def _history_row(
    network: QNetwork, runner: Runner, config: DQNConfig, step: int, start: float, losses: list[float]
) -> dict[str, Any]:
    evaluations = [
        evaluate_greedy(seed_actor(network, runner.learner.params, i), config.params) for i in range(config.num_seeds)
    ]
    rolling = rolling_figures(runner.episodes)
    evaluation = _mean_evaluation(evaluations)
    seconds = time.perf_counter() - start
    per_seed = [
        {
            "seed": config.seed + i,
            "greedy_success_rate": e.success_rate,
            "greedy_step_reward": e.mean_step_reward,
            "greedy_normalised_return": e.normalised_return,
            "rolling_reward": float(rolling["rolling_reward"][i]),
        }
        for i, e in enumerate(evaluations)
    ]
    return {
        "step": step,
        "seconds": seconds,
        "sps": step * config.num_seeds / seconds,
        "epsilon": config.epsilon(step),
        "greedy_success_rate": evaluation.success_rate,
        "greedy_step_reward": evaluation.mean_step_reward,
        "greedy_normalised_return": evaluation.normalised_return,
        "loss": float(np.mean(losses[-100:])) if losses else float("nan"),
        "rolling_reward": _nanmean(rolling["rolling_reward"]),
        "train_success_rate": _nanmean(rolling["train_success_rate"]),
        "train_normalised_return": _nanmean(rolling["train_normalised_return"]),
        "train_episode_return": _nanmean(rolling["train_episode_return"]),
        "train_episode_length": _nanmean(rolling["train_episode_length"]),
        "evaluation": evaluation,
        "per_seed": per_seed,
    }


def save_model(result: TrainResult, path: str, seed_index: int = 0) -> None:
    """Writes one seed's parameters in the format of ``dqn_flax.save_model`` (``enjoy`` reads both)."""
    network, stacked = result.model
    one_seed = jax.tree.map(lambda leaf: leaf[seed_index], stacked)
    save_flax_model(TrainResult(**{**result.__dict__, "model": (network, one_seed)}), path)


__all__ = ["load_model", "make_train", "save_model", "train"]


def main(argv: list[str] | None = None) -> int:
    return run_cli(train, ARM, argv)


if __name__ == "__main__":
    raise SystemExit(main())
