"""DQN with env, acting, replay buffer and updates in one ``lax.scan`` (PureJaxRL style).

The arm ``flax-scan``: ``doors-gym train --arm flax-scan --num-seeds 8`` or
``python -m baselines.dqn_flax_scan``.

``make_train(config)`` returns pure ``init(key)`` and ``run_chunk(runner, first_iteration)``;
``train`` jits ``vmap`` of both over seeds, so ``num_seeds`` seeds train in one
compile, each from its own key (its own network init, env starts and
exploration). The host only loops over chunks, to show progress and run greedy
evaluations between them. The network reads the agent's and the goal's cells
(:mod:`doors_gym_baselines.cells`), which the scan reads off the env states: the
replay buffer stores env states (5 int32 each), and acting and sampling take the
cells from them, never building or searching a grid.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from doors_gym import core
from doors_gym.core import DoorsState
from doors_gym.jax import functional as F

from .api import Arm
from .config import DQNConfig
from .dqn_flax import (
    FlaxPolicy,
    LearnerState,
    QNetwork,
    cells_of_states,
    init_params,
    learn,
    make_loss,
    make_network,
    make_optimizer,
)
from .dqn_flax import load_model as load_model
from .evaluation import Evaluation, TrainingFigures, evaluate_greedy, history_row
from .harness import EvaluationSchedule, Progress, Reporter, finish, prune
from .metrics import HistoryRow, TrainResult
from .runtime import jax_compilation_cache

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
    buffer: Buffer
    episodes: Episodes
    key: jax.Array


class Pieces(NamedTuple):
    """The parts of one scan iteration, each a pure function of one seed (vmap them over seeds).

    The scan calls them in this order; run apart, they time the phases of the
    arm (:func:`split_scan_time`).
    """

    select_actions: Callable[[Runner, jax.Array, jax.Array, jax.Array], jax.Array]
    """``(runner, epsilon, explore_key, random_key) -> actions``: epsilon-greedy."""
    env_step: Callable[[Runner, jax.Array, jax.Array], tuple]
    """``(runner, actions, step_key) -> batch_step's outputs``."""
    store: Callable[[Buffer, DoorsState, jax.Array, jax.Array, DoorsState, jax.Array, jax.Array], Buffer]
    """``(buffer, state, actions, reward, next_state, terminated, iteration_index) -> buffer``."""
    sample: Callable[[Buffer, jax.Array], tuple]
    """``(buffer, key) -> batch`` of agent and goal cells read off stored states."""
    learn: Callable[[Runner, tuple], tuple[Runner, jax.Array]]
    """``(runner, batch) -> (runner, loss)``: the gradient step and the target update (``batch`` from ``sample``
    in the same trace: it carries the grid size as a Python int)."""


class ScanTrain(NamedTuple):
    """What :func:`make_train` returns."""

    init: Callable[[jax.Array], Runner]
    run_chunk: Callable[[Runner, jax.Array], tuple[Runner, dict]]
    network: QNetwork
    iterations_per_chunk: int
    pieces: Pieces


def make_train(config: DQNConfig) -> ScanTrain:
    """Pure ``init(key) -> Runner`` and ``run_chunk(runner, first_iteration) -> (runner, metrics)``, and their parts."""
    network = make_network(config)
    optimizer = make_optimizer(config)
    iterations_per_chunk = max(1, -(-config.num_iterations // CHUNKS))
    pieces = make_pieces(config, network, optimizer)
    iteration = make_iteration(config, pieces)

    def run_chunk(runner: Runner, first_iteration: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        indices = first_iteration + jnp.arange(iterations_per_chunk)
        return jax.lax.scan(iteration, runner, indices)

    return ScanTrain(make_init(config, network, optimizer), run_chunk, network, iterations_per_chunk, pieces)


def make_init(
    config: DQNConfig, network: QNetwork, optimizer: optax.GradientTransformation
) -> Callable[[jax.Array], Runner]:
    """``init(key) -> Runner``: one seed's networks, env states, empty replay buffer and episode figures."""
    params = config.params
    num_envs = config.hyperparameters.num_envs
    capacity, window = config.hyperparameters.buffer_size, config.run.rolling_episodes

    def init(key: jax.Array) -> Runner:
        network_key, env_key, loop_key = jax.random.split(key, 3)
        network_params = init_params(network, network_key)
        learner = LearnerState(network_params, network_params, optimizer.init(network_params), jnp.int32(0))
        _, env_state = F.batch_reset(env_key, num_envs, params)
        empty_states = jax.tree.map(lambda field: jnp.zeros((capacity,), field.dtype), env_state)
        buffer = Buffer(
            empty_states,
            jnp.zeros(capacity, jnp.int32),
            jnp.zeros(capacity, jnp.float32),
            empty_states,
            jnp.zeros(capacity, jnp.float32),
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
        return Runner(learner, env_state, buffer, episodes, loop_key)

    return init


def make_pieces(config: DQNConfig, network: QNetwork, optimizer: optax.GradientTransformation) -> Pieces:
    """The parts of one iteration (:class:`Pieces`): acting, the env step, storing, sampling, learning."""
    params = config.params
    hyper = config.hyperparameters
    num_envs, width, capacity = hyper.num_envs, params.width, hyper.buffer_size

    def select_actions(runner: Runner, epsilon: jax.Array, explore_key: jax.Array, random_key: jax.Array) -> jax.Array:
        greedy = network.apply(runner.learner.params, cells_of_states(runner.env_state, width)).argmax(axis=1)
        random_actions = jax.random.randint(random_key, (num_envs,), 0, 5)
        explore = jax.random.uniform(explore_key, (num_envs,)) < epsilon
        return jnp.where(explore, random_actions, greedy).astype(jnp.int32)

    def env_step(runner: Runner, actions: jax.Array, step_key: jax.Array) -> tuple:
        return F.batch_step(step_key, runner.env_state, actions, params)

    def store(
        buffer: Buffer,
        state: DoorsState,
        actions: jax.Array,
        reward: jax.Array,
        next_state: DoorsState,
        terminated: jax.Array,
        iteration_index: jax.Array,
    ) -> Buffer:
        # Every seed writes at the same slots: computed from the (unbatched) iteration, the write is one
        # slice per field, in place, where a per-seed cursor made it a scatter over seeds.
        start = (iteration_index * num_envs) % capacity
        return _add(buffer, state, actions, reward, next_state, terminated, capacity, start)

    def sample(buffer: Buffer, key: jax.Array) -> tuple:
        index = jax.random.randint(key, (hyper.batch_size,), 0, jnp.maximum(buffer.size, 1))
        cells = lambda tree: cells_of_states(jax.tree.map(lambda field: field[index], tree), width)  # noqa: E731
        return (
            cells(buffer.state),
            buffer.action[index],
            buffer.reward[index],
            cells(buffer.next_state),
            buffer.terminated[index],
        )

    learning_step = learn(make_loss(network, config), optimizer, config)

    def learn_batch(runner: Runner, batch: tuple) -> tuple[Runner, jax.Array]:
        learner, loss = learning_step(runner.learner, batch)
        return runner._replace(learner=learner), loss

    return Pieces(select_actions, env_step, store, sample, learn_batch)


def make_iteration(
    config: DQNConfig, pieces: Pieces
) -> Callable[[Runner, jax.Array], tuple[Runner, dict[str, jax.Array]]]:
    """``iteration(runner, iteration_index) -> (runner, metrics)``: one vector step of every env, its
    transitions stored, and an update when one is due (the body of the scan)."""
    hyper = config.hyperparameters
    num_envs, window = hyper.num_envs, config.run.rolling_episodes

    def update(runner: Runner, key: jax.Array) -> tuple[Runner, jax.Array]:
        return pieces.learn(runner, pieces.sample(runner.buffer, key))

    def iteration(runner: Runner, iteration_index: jax.Array) -> tuple[Runner, dict[str, jax.Array]]:
        key, explore_key, random_key, step_key, sample_key = jax.random.split(runner.key, 5)
        global_step = (iteration_index + 1) * num_envs
        epsilon = config.epsilon(global_step, jnp)  # the host loop's schedule, in the trace
        actions = pieces.select_actions(runner, epsilon, explore_key, random_key)
        _, env_state, reward, terminated, truncated, info = pieces.env_step(runner, actions, step_key)
        buffer = pieces.store(
            runner.buffer, runner.env_state, actions, reward, info["final_state"], terminated, iteration_index
        )
        episodes = _track(runner.episodes, reward, terminated, truncated, jax.vmap(_distance)(env_state), window)
        runner = runner._replace(env_state=env_state, buffer=buffer, episodes=episodes, key=key)

        learn_now = (global_step > hyper.learning_starts) & (iteration_index % hyper.train_frequency == 0)
        runner, loss = jax.lax.cond(learn_now, update, lambda r, k: (r, jnp.float32(jnp.nan)), runner, sample_key)
        return runner, {"loss": loss, "learned": learn_now, "epsilon": epsilon}

    return iteration


def _distance(state: DoorsState) -> jax.Array:
    return core.state_distance(state, jnp)


def _add(
    buffer: Buffer,
    state: DoorsState,
    action: jax.Array,
    reward: jax.Array,
    next_state: DoorsState,
    terminated: jax.Array,
    capacity: int,
    start: jax.Array,
) -> Buffer:
    """Writes one transition per env from slot ``start`` (a ring).

    When the capacity is a multiple of the batch, a batch never wraps around the
    ring and is written as one slice; otherwise slot by slot.
    """
    count = action.shape[0]
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
        jnp.minimum(buffer.size + action.shape[0], capacity),
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


def rolling_figures(episodes: Episodes) -> list[TrainingFigures]:
    """Each seed's rolling figures over its ring (NaN while no episode has ended)."""
    count = np.minimum(np.asarray(episodes.count), episodes.returns.shape[-1])
    filled = np.arange(episodes.returns.shape[-1])[None, :] < count[:, None]
    returns, lengths = np.asarray(episodes.returns), np.asarray(episodes.lengths)
    with np.errstate(invalid="ignore", divide="ignore"):
        columns = {
            "rolling_reward": (returns * filled).sum(1) / (lengths * filled).sum(1),
            "train_success_rate": (np.asarray(episodes.success) * filled).sum(1) / count,
            "train_normalised_return": (np.asarray(episodes.normalised) * filled).sum(1) / count,
            "train_episode_return": (returns * filled).sum(1) / count,
            "train_episode_length": (lengths * filled).sum(1) / count,
        }
    return [TrainingFigures(**{name: float(values[i]) for name, values in columns.items()}) for i in range(len(count))]


def seed_policy(network: QNetwork, stacked_params: Any, seed_index: int) -> FlaxPolicy:
    """One seed's greedy policy, from parameters stacked over seeds (for host-side evaluation and files)."""
    return FlaxPolicy(network, jax.tree.map(lambda leaf: leaf[seed_index], stacked_params))


class ScanModel:
    """The trained networks of every seed of a run: ``policy(i)`` is seed ``i``'s; ``act`` is seed 0's."""

    def __init__(self, network: QNetwork, stacked_params: Any) -> None:
        self.network = network
        self.params = stacked_params

    def policy(self, seed_index: int) -> FlaxPolicy:
        """Seed ``seed_index``'s greedy policy."""
        return seed_policy(self.network, self.params, seed_index)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions of the first seed."""
        return self.policy(0).act(obs)

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """Q-values of the first seed."""
        return self.policy(0).q_values(obs)


def seed_devices(requested: int | None, num_seeds: int) -> list[jax.Device]:
    """The devices seeds spread over: ``requested`` of them, else one per device up to the seeds.

    On a CPU the devices are cores, as many as :func:`doors_gym_baselines.runtime.prepare_host_devices`
    made before JAX started; on a GPU they are the GPUs.
    """
    available = jax.local_devices()
    count = min(len(available), num_seeds) if requested is None else requested
    if not 1 <= count <= len(available):
        raise ValueError(
            f"devices={requested!r} is out of range: expected 1..{len(available)} (this process has "
            f"{len(available)} {available[0].platform} device(s))"
        )
    return available[:count]


class SeedLayout(NamedTuple):
    """How a run's seeds lie on its devices: the same number on each (the last device's spare slots train
    copies of the last seed, whose results are dropped), so that one program serves every device."""

    mesh: jax.sharding.Mesh
    seeds: list[int]
    per_device: int

    @property
    def slot_seeds(self) -> list[int]:
        """The seed of every slot: the run's seeds, then copies of the last one."""
        slots = self.per_device * self.mesh.size
        return self.seeds + [self.seeds[-1]] * (slots - len(self.seeds))

    def seeds_per_device(self) -> list[int]:
        """How many of the run's own seeds each device trains."""
        left = [len(self.seeds) - index * self.per_device for index in range(self.mesh.size)]
        return [max(0, min(self.per_device, count)) for count in left]


def seed_layout(requested: int | None, seeds: list[int]) -> SeedLayout:
    """``seeds`` over :func:`seed_devices`, the same number on each device."""
    devices = seed_devices(requested, len(seeds))
    return SeedLayout(jax.sharding.Mesh(np.array(devices), ("seeds",)), seeds, -(-len(seeds) // len(devices)))


def compile_run(parts: ScanTrain, layout: SeedLayout) -> tuple[Runner, Callable]:
    """``(runner, chunk)``: the initial runner, and the chunk traced and compiled once for every device.

    Each is ``shard_map`` of the ``vmap`` over one device's seeds: every device runs the program a single
    device would run for its seeds, all at once, and XLA compiles it once (not once per device).
    """
    from jax.sharding import NamedSharding, PartitionSpec

    seeds, shared = PartitionSpec("seeds"), PartitionSpec()
    mesh = layout.mesh
    keys = jax.device_put(jax.vmap(jax.random.key)(jnp.asarray(layout.slot_seeds)), NamedSharding(mesh, seeds))

    def per_device(function: Callable, in_specs: Any, out_specs: Any) -> Callable:
        # The chunk's loss is per seed only once learning starts: no check that values vary along the mesh.
        return jax.shard_map(function, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)

    init = jax.jit(per_device(jax.vmap(parts.init), seeds, seeds)).lower(keys).compile()
    runner = init(keys)
    chunk_function = per_device(jax.vmap(parts.run_chunk, in_axes=(0, None)), (seeds, shared), (seeds, seeds))
    lowered = jax.jit(chunk_function, donate_argnums=0).lower(runner, jnp.int32(0))
    return runner, lowered.compile()


def on_host(tree: Any, count: int) -> Any:
    """The first ``count`` seeds of a pytree stacked over seed slots, as NumPy arrays."""
    return jax.tree.map(lambda leaf: np.asarray(leaf)[:count], tree)


def train(config: DQNConfig, trial: Reporter | None = None, arm: Arm | None = None) -> TrainResult:
    """Trains ``config.run.num_seeds`` seeds in compiled ``vmap``s over the devices; figures are means over seeds.

    ``arm`` is the record it trains as (default: this file's :data:`ARM`); greedy evaluations are
    reported to ``trial`` if given (see :class:`~doors_gym_baselines.harness.Reporter`).

    The seeds spread over the devices of :func:`seed_devices` (:func:`seed_layout`), and one program
    compiled once runs every device's share at once (:func:`compile_run`). A seed computes what it
    computes alone to float tolerance: its device's program has another batch shape, and XLA does not
    promise bitwise equal results across batch shapes (on AVX-512 CPUs they agreed bit for bit, on AVX2
    they drift at the 7th digit; ``tests/baselines/test_speed.py`` holds them to 1e-5). Each row's
    ``per_seed`` holds each seed's figures; ``result.model`` is a :class:`ScanModel` (the network and
    parameters stacked over seeds).
    """
    with jax_compilation_cache(config.run.jax_cache) as jax_cache:
        return train_seeds(arm or ARM, config, trial, jax_cache)


def train_seeds(arm: Arm, config: DQNConfig, trial: Reporter | None, jax_cache: str | None) -> TrainResult:
    """:func:`train` with JAX's compilation cache in ``jax_cache`` (None: none): the host's loop over chunks."""
    start = time.perf_counter()
    config = arm.configure(config)
    num_envs, num_seeds = config.hyperparameters.num_envs, config.run.num_seeds
    seeds = CompiledSeeds(config, trial, start)
    progress = Progress(
        config.num_iterations * num_envs * num_seeds, f"{arm.name} x {num_seeds} seeds", config.run.quiet
    )
    schedule = EvaluationSchedule(seeds.evaluate, seeds.history, trial, config)
    per_chunk = seeds.parts.iterations_per_chunk
    first = 0
    while first < config.num_iterations:
        epsilon = seeds.run_chunk(first)
        done_iterations = min(first + per_chunk, config.num_iterations)
        global_step = done_iterations * num_envs
        progress.update((done_iterations - first) * num_envs * num_seeds, rolling=seeds.rolling_reward(), eps=epsilon)
        first += per_chunk
        if schedule.should_stop(global_step, more_to_come=first < config.num_iterations):
            break
    progress.close()
    last = schedule.final(global_step)
    return seeds.result(arm, global_step, last, schedule.seconds, jax_cache)


class CompiledSeeds:
    """A run's seeds on their devices, trained chunk by chunk by one compiled program.

    Between chunks the host reads the losses (pruning on a non-finite one), evaluates the seeds'
    greedy policies and keeps the learning curve; ``scanning`` is the time spent in the chunks.
    """

    def __init__(self, config: DQNConfig, trial: Reporter | None, start: float) -> None:
        run = config.run
        self.config, self.trial, self.start = config, trial, start
        self.parts = make_train(config)
        self.seeds = [run.seed + index for index in range(run.num_seeds)]
        self.layout = seed_layout(run.devices, self.seeds)
        self.runner, self.chunk = compile_run(self.parts, self.layout)
        self.compile_seconds = time.perf_counter() - start
        self.history: list[HistoryRow] = []
        self.losses: list[float] = []
        self.scanning = 0.0
        self.iterations = 0

    def run_chunk(self, first: int) -> float:
        """Runs the chunk that starts at iteration ``first`` and keeps its losses; returns its last epsilon."""
        num_envs, per_chunk = self.config.hyperparameters.num_envs, self.parts.iterations_per_chunk
        started = time.perf_counter()
        self.runner, metrics = self.chunk(self.runner, np.int32(first))
        metrics = on_host(metrics, len(self.seeds))  # waits for the chunk
        self.scanning += time.perf_counter() - started
        learned = metrics["learned"][0]  # the same iterations learn in every seed
        chunk_losses = metrics["loss"][:, learned]
        if not np.isfinite(chunk_losses).all():
            prune(self.trial, f"non-finite loss before step {(first + per_chunk) * num_envs}")
        self.losses.extend(chunk_losses.mean(axis=0).tolist())  # one entry per update, averaged over seeds
        self.iterations += per_chunk
        return float(metrics["epsilon"][0, -1])

    def rolling_reward(self) -> float:
        """The seeds' mean rolling reward (NaN before any episode has ended)."""
        rolling = [
            figures.rolling_reward for figures in rolling_figures(on_host(self.runner.episodes, len(self.seeds)))
        ]
        return float(np.nanmean(rolling)) if not np.isnan(rolling).all() else float("nan")

    def evaluate(self, step: int) -> tuple[Evaluation, HistoryRow]:
        """Every seed's greedy evaluation (their mean) and the history row at env step ``step``."""
        num_seeds = len(self.seeds)
        params = on_host(self.runner.learner.params, num_seeds)
        policies = [seed_policy(self.parts.network, params, index) for index in range(num_seeds)]
        evaluations = [evaluate_greedy(policy.act, self.config.params) for policy in policies]
        training = rolling_figures(on_host(self.runner.episodes, num_seeds))
        row = history_row(step, self.start, self.config.epsilon(step), self.losses, evaluations, training, self.seeds)
        return Evaluation.mean(evaluations), row

    def result(
        self,
        arm: Arm,
        global_step: int,
        last: tuple[Evaluation, HistoryRow],
        evaluation_seconds: float,
        jax_cache: str | None,
    ) -> TrainResult:
        """The run's result, its scan time split into phases when the config asks for a profile."""
        num_seeds, layout = len(self.seeds), self.layout
        updates = int(on_host(self.runner.learner.updates, num_seeds).sum())
        wall_seconds = time.perf_counter() - self.start  # the profile below is not part of the training
        phases = {"compile": self.compile_seconds, "evaluation": evaluation_seconds}
        method = "the scan's time, split as its compiled pieces take it when run apart"
        model = ScanModel(self.parts.network, on_host(self.runner.learner.params, num_seeds))
        if self.config.run.profile:
            first_device = layout.mesh.devices.flat[0]
            device_runner = jax.tree.map(
                lambda leaf: jax.device_put(leaf[: layout.per_device], first_device), self.runner
            )
            phases.update(
                split_scan_time(self.parts, device_runner, self.scanning, self.iterations, updates // num_seeds)
            )
        else:
            method = "profile off: the scan's time is in other"
        facts = {
            "jax_version": jax.__version__,
            "devices": [str(device) for device in layout.mesh.devices.flat],
            "seeds_per_device": layout.seeds_per_device(),
            "jax_cache": jax_cache,
        }
        figures = {"env_steps": global_step * num_seeds, "updates": updates, "model": model, "losses": self.losses}
        history = self.history
        return finish(arm, self.config, self.start, history, last, phases, method, wall_seconds, facts=facts, **figures)


PROFILE_CALLS = 30
"""Timed calls of each piece in :func:`split_scan_time` (after one that compiles)."""


def split_scan_time(
    parts: ScanTrain, runner: Runner, seconds: float, iterations: int, updates: int
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
    pieces = parts.pieces
    runner = jax.tree.map(jnp.copy, runner)  # the pieces below consume it
    index = jnp.int32(0)
    keys = jax.vmap(jax.random.split)(runner.key)

    def timed(function: Callable, args: tuple, in_axes: Any = 0, chain: Callable | None = None) -> float:
        """Seconds per call; ``chain(args, output)`` gives the next call's args (donating the first)."""
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
    scale = min(1.0, seconds / sum(predicted.values())) if predicted else 0.0
    return {name: value * scale for name, value in predicted.items()}


def save_model(result: TrainResult, path: str, seed_index: int = 0) -> None:
    """Writes one seed's parameters in the Flax model format (``dqn_flax.load_model`` and ``enjoy`` read it)."""
    num_seeds = result.config.run.num_seeds
    if not 0 <= seed_index < num_seeds:
        raise ValueError(f"seed_index={seed_index} is out of range: expected 0..{num_seeds - 1}")
    result.model.policy(seed_index).save(path, result.arm, result.config)


ARM = Arm(
    "flax-scan",
    "flax",
    "DoorsJax-v0",
    "Flax + JAX env, one jitted scan",
    train,
    save_model,
    seeds_in_one_run=True,
    steps_pure_functions=True,
)
"""This file's arm."""

__all__ = ["ARM", "ScanModel", "load_model", "make_train", "save_model", "train"]
