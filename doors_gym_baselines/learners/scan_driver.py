"""The fully jitted arm's host driver: its seeds laid out over the devices, trained in segments.

:func:`train_seeds` compiles one program for every device (``shard_map`` of a ``vmap`` over one device's
seeds), runs it segment by segment, and between segments reads the losses (pruning on a non-finite one),
evaluates every seed's greedy policy on the host and keeps the learning curve; then it builds the result
(with the scan's time split into phases by :mod:`.scan_profile` when the config asks for a profile).
The algorithm it drives is ``make_train`` of :mod:`.dqn_flax_scan`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from doors_gym.core import DoorsParams

from ..api import Arm
from ..config import DQNConfig
from ..harness import EvaluationSchedule, Progress, Reporter, finish, prune
from ..harness.checkpoint import Checkpoint, tree_from_host, tree_to_host
from ..harness.evaluation import Evaluation, TrainingFigures, evaluate_greedy, evaluate_policies, history_row
from ..harness.metrics import HistoryRow, TrainResult, solved_reward, solved_since
from .cells import encode
from .dqn_flax import FlaxPolicy, QNetwork, jitted_greedy_of_many
from .scan_lanes import lane_values, program_config
from .scan_profile import split_scan_time


CHECKPOINT_SECONDS = 60.0
"""Least seconds between two checkpoints of a run (``config.run.checkpoint``): a run saves after the first segment
that ends this long after its last save (or its start), so a killed run loses at most this and a segment, and a run
shorter than this writes none (a save takes a few ms to a second: a short run's time stays its training's)."""
RUNNER_LAYOUT = 2
"""The layout of the state a checkpoint holds, raised when it changes (2: the optimizer state holds Adam's moments
alone); a checkpoint of another layout is another run's, so the run starts afresh instead of failing to load it."""


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

    @property
    def slot_indices(self) -> list[int]:
        """The index in ``seeds`` of every slot's run (seeds may repeat: lanes of one seed)."""
        return [min(slot, len(self.seeds) - 1) for slot in range(self.per_device * self.mesh.size)]

    def seeds_per_device(self) -> list[int]:
        """How many of the run's own seeds each device trains."""
        left = [len(self.seeds) - index * self.per_device for index in range(self.mesh.size)]
        return [max(0, min(self.per_device, count)) for count in left]


def seed_layout(requested: int | None, seeds: list[int]) -> SeedLayout:
    """``seeds`` over :func:`seed_devices`, the same number on each device."""
    devices = seed_devices(requested, len(seeds))
    return SeedLayout(jax.sharding.Mesh(np.array(devices), ("seeds",)), seeds, -(-len(seeds) // len(devices)))


def compile_run(parts: Any, layout: SeedLayout, lanes: Any = None) -> tuple[Any, Callable]:
    """``(runner, chunk)``: the initial runner, and the chunk traced and compiled once for every device.

    ``lanes`` (:class:`~.dqn_flax.Knobs` of arrays over the seeds) becomes the runner's ``lane``.

    Each is ``shard_map`` of the ``vmap`` over one device's seeds: every device runs the program a single
    device would run for its seeds, all at once, and XLA compiles it once (not once per device).
    """
    from jax.sharding import NamedSharding, PartitionSpec

    seeds = PartitionSpec("seeds")
    keys = jax.device_put(jax.vmap(jax.random.key)(jnp.asarray(layout.slot_seeds)), NamedSharding(layout.mesh, seeds))
    init = jax.shard_map(jax.vmap(parts.init), mesh=layout.mesh, in_specs=seeds, out_specs=seeds, check_vma=False)
    runner = jax.jit(init).lower(keys).compile()(keys)
    if lanes is not None:
        slots = layout.slot_indices
        runner = runner._replace(lane=jax.device_put(jax.tree.map(lambda values: values[slots], lanes), keys.sharding))
    return runner, compile_chunk(parts, layout, runner)


def compile_chunk(parts: Any, layout: SeedLayout, runner: Any) -> Callable:
    """The chunk of ``parts`` traced and compiled for ``runner``'s seeds laid out as ``layout`` (``shard_map`` of
    the ``vmap`` over one device's seeds; the runner is donated)."""
    from jax.sharding import PartitionSpec

    seeds, shared = PartitionSpec("seeds"), PartitionSpec()
    if layout.per_device == 1 and parts.network.layer_norm:
        # One seed a device with LayerNorm runs its program unbatched: XLA on a CPU reduces LayerNorm's parameter
        # gradients over a batch axis of size 1 slowly (a PQN update 1.7x; the whole run at 31x31 1.4x). Without
        # LayerNorm the one-seed vmap costs no more, and those programs stay as they were, bit for bit.
        def function(runner: Any, first_iteration: jax.Array) -> Any:
            alone = jax.tree.map(lambda leaf: leaf[0], runner)
            return jax.tree.map(lambda leaf: leaf[None], parts.run_chunk(alone, first_iteration))

    else:
        function = jax.vmap(parts.run_chunk, in_axes=(0, None))
    # The chunk's loss is per seed only once learning starts: no check that values vary along the mesh.
    chunk = jax.shard_map(function, mesh=layout.mesh, in_specs=(seeds, shared), out_specs=(seeds, seeds), check_vma=False)
    return jax.jit(chunk, donate_argnums=0).lower(runner, jnp.int32(0)).compile()


def on_host(tree: Any, count: int) -> Any:
    """The first ``count`` seeds of a pytree stacked over seed slots, as NumPy arrays."""
    return jax.tree.map(lambda leaf: np.asarray(leaf)[:count], tree)


def train_seeds(
    arm: Arm, make_train: Callable[[DQNConfig], Any], config: DQNConfig, trial: Reporter | None, jax_cache: str | None
) -> TrainResult:
    """Trains the seeds of ``arm.configure(config)`` with ``make_train``'s functions (see
    :func:`doors_gym_baselines.learners.dqn_flax_scan.make_train`), segment by segment, evaluating between segments.

    ``jax_cache`` is the folder of JAX's compilation cache (None: none), recorded in the result's facts.

    With ``config.run.checkpoint`` the run saves its state there after a segment (at most every
    :data:`CHECKPOINT_SECONDS`) and, if the file holds this run's state
    (:class:`~.harness.checkpoint.Checkpoint`), goes on from it: its clock goes on from the
    seconds the file recorded (the time between the last segment and a kill is lost, not counted), and its
    facts list where it resumed.
    """
    seeds = compiled_seeds(arm, make_train, config, trial, time.perf_counter())
    config = seeds.config
    num_envs, num_seeds = config.hyperparameters.num_envs, config.run.num_seeds
    schedule = EvaluationSchedule(seeds.evaluate, seeds.history, trial, config)  # its progress: once the bar is made
    checkpoint = None
    if config.run.checkpoint is not None:
        checkpoint = Checkpoint(config.run.checkpoint, seeds.fingerprint(), seeds.resumes)
    first = global_step = 0
    saved = None if checkpoint is None else checkpoint.load()
    if saved is not None:
        first, global_step = saved["first"], saved["global_step"]
        seeds.load_state_dict(saved["seeds"], global_step)
        schedule.load_state_dict(saved["schedule"])
    label = f"{arm.name} x {num_seeds} seed{'s' * (num_seeds != 1)}"
    total = config.num_iterations * num_envs * num_seeds
    progress = Progress(total, label, config.run.quiet, done=min(first, config.num_iterations) * num_envs * num_seeds)
    schedule.progress = progress
    per_chunk = seeds.parts.iterations_per_chunk
    last_saved = time.perf_counter()
    while first < config.num_iterations:
        epsilon = seeds.run_chunk(first)
        done_iterations = min(first + per_chunk, config.num_iterations)
        global_step = done_iterations * num_envs
        progress.update((done_iterations - first) * num_envs * num_seeds, rolling=seeds.rolling_reward(), eps=epsilon)
        first += per_chunk
        if schedule.should_stop(global_step, more_to_come=first < config.num_iterations):
            break
        seeds.freeze_solved()
        seeds.freeze(getattr(trial, "stopped_lanes", ()))
        if seeds.frozen.all():  # every lane pruned, failed or solved
            break
        seeds.gather(chunks_left=-(-(config.num_iterations - first) // per_chunk))
        if checkpoint is not None and time.perf_counter() - last_saved >= CHECKPOINT_SECONDS:
            checkpoint.save({"first": first, "global_step": global_step, **seeds.state_dict(schedule)})
            last_saved = time.perf_counter()
    progress.close()
    if checkpoint is not None:
        checkpoint.remove()
    last = schedule.final(global_step)
    return seeds.result(arm, global_step, last, schedule.seconds, jax_cache)


def compiled_seeds(
    arm: Arm, make_train: Callable[..., Any], config: DQNConfig, trial: Reporter | None, start: float
) -> CompiledSeeds:
    """The run's program, compiled: the lanes of a study in one (``trial.lane_configs``, each as ``arm`` trains
    it; the program's config from :func:`~.scan_lanes.program_config`), else the seeds of ``arm.configure(config)``."""
    lane_configs = getattr(trial, "lane_configs", None)
    if not lane_configs:
        config = arm.configure(config)
        return CompiledSeeds(config, make_train(config), trial, start)
    if any(lane.run.checkpoint for lane in lane_configs):
        raise ValueError("checkpoint is not supported for the lanes of a study: expected checkpoint=None")
    config = program_config([arm.configure(lane) for lane in lane_configs])
    config = config.replace(num_seeds=len(lane_configs))
    lanes = Lanes([lane.run.seed for lane in lane_configs], lane_values(lane_configs))
    gather = bool(getattr(trial, "gather_lanes", False))
    return CompiledSeeds(config, make_train(config, lanes=True), trial, start, lanes, gather)


class Lanes(NamedTuple):
    """The lanes of a program (:mod:`.scan_lanes`): each one's seed and its own hyperparameters."""

    seeds: list[int]
    values: Any


class CompiledSeeds:
    """A run's seeds on their devices, trained chunk by chunk by one compiled program.

    Between chunks the host reads the losses (pruning on a non-finite one), evaluates the seeds'
    greedy policies and keeps the learning curve; ``scanning`` is the time spent in the chunks.

    The program holds the seeds of ``active`` (all of them at first). With ``gather`` (lanes of a study) the live
    lanes move into a smaller program once enough are frozen that the chunks it saves outweigh its compile
    (:meth:`gather`); what the host reads of the seeds that left (their networks and episode figures) is
    ``parked`` on the host. Each lane keeps its own clock (``clocks``): the program's compile, its share of every
    chunk it trained in (the chunk's seconds over the seeds each device ran) and its own evaluations, the seconds
    its trial would have taken as a run of its own.
    """

    SAVED = ("losses", "iterations", "scanning", "frozen", "kept", "last_figures", "clocks")
    """What a checkpoint keeps of the host's side beside the runner, the curve and the clock (:meth:`state_dict`)."""

    def __init__(
        self,
        config: DQNConfig,
        parts: Any,
        trial: Reporter | None,
        start: float,
        lanes: Lanes | None = None,
        gather: bool = False,
    ) -> None:
        run = config.run
        self.config, self.trial, self.start = config, trial, start
        self.parts, self.lanes, self.gather_lanes = parts, lanes, gather
        self.seeds = lanes.seeds if lanes else [run.seed + index for index in range(run.num_seeds)]
        self.layout = seed_layout(run.devices, self.seeds)
        self.runner, self.chunk = compile_run(self.parts, self.layout, lanes and lanes.values)
        self.compile_seconds = time.perf_counter() - start
        self.active = list(range(len(self.seeds)))
        self.parked: dict[str, Any] | None = None
        self.gathers: list[dict[str, float]] = []
        self.chunk_seconds = math.nan
        self.clocks = np.full(len(self.seeds), self.compile_seconds)
        self.history: list[HistoryRow] = []
        self.losses: list[float] = []
        self.scanning = 0.0
        self.iterations = 0
        self.frozen = np.zeros(run.num_seeds, bool)
        self.kept: dict[int, tuple[Evaluation, TrainingFigures]] = {}
        self.last_figures: list[tuple[Evaluation, TrainingFigures]] = []
        self.resumed: list[dict[str, float]] = []

    def fingerprint(self) -> dict[str, Any]:
        """What a checkpoint of this run must match to be resumed: the config's outcome, the seed slots of the
        program, JAX's version and the runner's layout (a resumed run must run the same program on the same state)."""
        slots = self.layout.per_device * self.layout.mesh.size
        return {"config": self.config.outcome_key(), "slots": slots, "jax": jax.__version__, "runner": RUNNER_LAYOUT}

    def resumes(self, saved: Any) -> bool:
        """Whether a checkpoint's ``saved`` fingerprint is this run's: the same seed slots and JAX version, and its
        config this config's outcome (``Config.same_outcome``: one written before a knob was added still matches
        while the knob keeps its default)."""
        mine = self.fingerprint()
        if not isinstance(saved, dict) or saved.keys() != mine.keys():
            return False
        return all(saved[name] == mine[name] for name in mine if name != "config") and self.config.same_outcome(
            saved["config"]
        )

    def state_dict(self, schedule: EvaluationSchedule) -> dict[str, Any]:
        """The run's state as plain arrays and records (a :class:`~.harness.checkpoint.Checkpoint`'s contents):
        the program's runner, the curve so far, the losses, the clocks, and ``schedule``'s state (kept in one
        pickle with the curve, whose last row it shares)."""
        return {
            "seeds": {
                "runner": tree_to_host(self.runner),
                "compile_seconds": self.compile_seconds,
                "elapsed": time.perf_counter() - self.start,
                "resumed": self.resumed,
                "history": self.history,
                **{name: getattr(self, name) for name in self.SAVED},
            },
            "schedule": schedule.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any], global_step: int) -> None:
        """Goes on from :meth:`state_dict`'s ``state["seeds"]`` (saved at env step ``global_step``): the runner
        placed as this program's, the curve put into the list the schedule shares, the clock moved back by the
        seconds already spent (this process's compile adds to them)."""
        self.runner = tree_from_host(state["runner"], self.runner)
        self.history[:] = state["history"]
        for name in self.SAVED:
            setattr(self, name, state[name])
        self.start -= state["elapsed"]
        self.compile_seconds += state["compile_seconds"]
        self.resumed = [*state["resumed"], {"at_step": global_step, "after_seconds": state["elapsed"]}]

    def run_chunk(self, first: int) -> float:
        """Runs the chunk that starts at iteration ``first`` and keeps its losses; returns its last epsilon."""
        num_envs, per_chunk = self.config.hyperparameters.num_envs, self.parts.iterations_per_chunk
        active = np.asarray(self.active)
        started = time.perf_counter()
        self.runner, metrics = self.chunk(self.runner, np.int32(first))
        metrics = on_host(metrics, len(active))  # waits for the chunk; a row per seed in the program
        self.chunk_seconds = time.perf_counter() - started
        self.scanning += self.chunk_seconds
        live = ~self.frozen[active]
        self.clocks[active[live]] += self.chunk_seconds / self.layout.per_device  # as if each ran alone
        learned = metrics["learned"][0]  # the same iterations learn in every seed
        losses = metrics["loss"][:, learned]
        if self.lanes:  # a lane whose loss turned non-finite stops alone; its trial is told by its reporter
            failed = active[~np.isfinite(losses).all(axis=1) & live].tolist()
            self.trial.lanes_failed(failed)
            self.freeze(failed)
            live = ~self.frozen[active]
        elif not np.isfinite(losses[live]).all():
            prune(self.trial, f"non-finite loss before step {(first + per_chunk) * num_envs}")
        self.losses.extend(losses[live].mean(axis=0).tolist())  # one entry per update, averaged over seeds
        self.iterations += per_chunk
        return float(metrics["epsilon"][0, -1])

    def seed_state(self, name: str) -> Any:
        """Every seed's ``runner.<name>`` (``learner`` or ``episodes``) as NumPy arrays stacked over the seeds:
        the program's seeds as they are now, the others as they were when they left it."""
        now = on_host(getattr(self.runner, name), len(self.active))
        if self.parked is None:
            return now
        return jax.tree.map(lambda whole, mine: put_rows(whole, self.active, mine), self.parked[name], now)

    def rolling_reward(self) -> float:
        """The seeds' mean rolling reward (NaN before any episode has ended)."""
        rolling = [figures.rolling_reward for figures in rolling_figures(self.seed_state("episodes"))]
        return float(np.nanmean(rolling)) if not np.isnan(rolling).all() else float("nan")

    def evaluate(self, step: int) -> tuple[Evaluation, HistoryRow]:
        """Every seed's greedy evaluation (their mean) and the history row at env step ``step``; with lanes, each
        seed's figures carry its own clock."""
        params = self.seed_state("learner").params
        training = rolling_figures(self.seed_state("episodes"))
        live = [index for index in range(len(self.seeds)) if not self.kept.get(index)]
        started = time.perf_counter()
        evaluated = dict(zip(live, evaluate_seeds(self.parts.network, params, live, self.config.params)))
        self.clocks[live] += (time.perf_counter() - started) / max(1, len(live))  # each lane's share
        evaluations = []
        for index in range(len(self.seeds)):
            if self.kept.get(index):  # a stopped seed's figures are those it stopped with
                evaluated[index], training[index] = self.kept[index]
            evaluations.append(evaluated[index])
        self.last_figures = list(zip(evaluations, training))
        bar = solved_reward(self.config.params)
        epsilon = self.config.epsilon(step)
        row = history_row(step, self.start, epsilon, self.losses, evaluations, training, self.seeds, bar)
        if self.lanes:
            clocked = [dataclasses.replace(mine, seconds=float(clock)) for mine, clock in zip(row.per_seed, self.clocks)]
            row = dataclasses.replace(row, per_seed=tuple(clocked))
        return Evaluation.mean(evaluations), row

    def freeze_solved(self) -> None:
        """Stops every seed solved through its hold-out window at the last evaluation, where its own run would
        have stopped: its learner, envs and episode figures stay as they are, and so do its evaluations.

        Only a run that stops when solved, of several seeds; a lone seed's run stops instead.
        """
        run = self.config.run
        if len(self.seeds) == 1 or not run.stop_when_solved or not self.history:
            return
        live = np.flatnonzero(~self.frozen)
        self.freeze([i for i in live if solved_since(self.history, run.hold_out_steps, seed=int(i)) is not None])

    def freeze(self, indices: Any) -> None:
        """Stops the seeds (lanes) at ``indices``: their state and figures stay as at the last evaluation."""
        indices = [int(index) for index in indices if not self.frozen[int(index)]]
        if not indices:
            return
        for index in indices:
            self.frozen[index] = True
            if self.last_figures:  # a lane failed before its first evaluation has none to keep
                self.kept[index] = self.last_figures[index]
        slots = [bool(self.frozen[self.active[slot]]) for slot in self.layout.slot_indices]
        frozen = jax.device_put(np.array(slots), self.runner.frozen.sharding)
        self.runner = self.runner._replace(frozen=frozen)

    def gather(self, chunks_left: int) -> bool:
        """Moves the live lanes into a program of fewer seeds per device when the chunks left would save more than
        the new program's compile (the last chunk's seconds scaled by the seeds per device; the compile as the
        last one took). The frozen lanes' networks and episode figures stay on the host. True if it gathered."""
        live = [index for index in self.active if not self.frozen[index]]
        if not (self.gather_lanes and live):
            return False
        layout = seed_layout(self.config.run.devices, [self.seeds[index] for index in live])
        saved = self.chunk_seconds * (1 - layout.per_device / self.layout.per_device) * chunks_left
        compile_seconds = self.gathers[-1]["seconds"] if self.gathers else self.compile_seconds
        if layout.per_device >= self.layout.per_device or not saved > compile_seconds:
            return False
        from jax.sharding import NamedSharding

        started = time.perf_counter()
        self.parked = {name: self.seed_state(name) for name in ("learner", "episodes")}
        rows = jnp.asarray([self.active.index(live[slot]) for slot in layout.slot_indices])
        # Each leaf keeps its partition on the new mesh (XLA gives an empty leaf, a layout table at a fixed-door
        # level, no partition: the compiled chunk expects it as it comes out).
        shardings = jax.tree.map(lambda leaf: NamedSharding(layout.mesh, leaf.sharding.spec), self.runner)
        runner = jax.device_put(jax.tree.map(lambda leaf: leaf[rows], self.runner), shardings)
        self.chunk = compile_chunk(self.parts, layout, runner)
        slots = (self.layout.per_device * self.layout.mesh.size, layout.per_device * layout.mesh.size)
        self.runner, self.layout, self.active = runner, layout, live
        seconds = time.perf_counter() - started
        self.gathers.append({"from_slots": slots[0], "to_slots": slots[1], "seconds": seconds, "saved_at_most": saved})
        return True

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
        learner = self.seed_state("learner")
        updates = int(learner.updates.sum())
        wall_seconds = time.perf_counter() - self.start  # the profile below is not part of the training
        phases = {"compile": self.compile_seconds, "evaluation": evaluation_seconds}
        method = "the scan's time, split as its compiled pieces take it when run apart"
        model = ScanModel(self.parts.network, learner.params, self.config.params)
        if self.config.run.profile and not self.lanes:  # the program's own pieces, timed apart (DQN's or PQN's)
            first_device = layout.mesh.devices.flat[0]
            device_runner = jax.tree.map(
                lambda leaf: jax.device_put(leaf[: layout.per_device], first_device), self.runner
            )
            phases.update(
                split_scan_time(self.config, device_runner, self.scanning, self.iterations, updates // num_seeds)
            )
        else:
            method = "profile off (or lanes of a study): the scan's time is in other"
        facts = {
            "jax_version": jax.__version__,
            "devices": [str(device) for device in layout.mesh.devices.flat],
            "seeds_per_device": layout.seeds_per_device(),
            "jax_cache": jax_cache,
        }
        if self.gathers:
            facts["gathers"] = self.gathers
        if self.resumed:
            facts["resumed"] = self.resumed
        figures = {"env_steps": global_step * num_seeds, "updates": updates, "model": model, "losses": self.losses}
        history = self.history
        return finish(arm, self.config, self.start, history, last, phases, method, wall_seconds, facts=facts, **figures)


def evaluate_seeds(network: Any, params: Any, indices: list[int], layout: DoorsParams) -> list[Evaluation]:
    """The greedy evaluations at ``layout`` of the seeds at ``indices`` (``params`` of ``network`` stacked over
    every seed): one seed alone as its own run evaluates, several at once
    (:func:`~.harness.evaluation.evaluate_policies`, their networks in one ``vmap``, padded to a power of two up
    to 8 and to a multiple of 8 beyond, so that a run compiles it a few times, not once per count)."""
    if len(indices) <= 1:
        policies = [seed_policy(network, params, index, layout) for index in indices]
        return [evaluate_greedy(policy.act, layout) for policy in policies]
    sets = 1 << (len(indices) - 1).bit_length() if len(indices) <= 8 else -(-len(indices) // 8) * 8
    rows = indices + [indices[0]] * (sets - len(indices))
    stacked = jax.tree.map(lambda leaf: leaf[rows], params)
    greedy = jitted_greedy_of_many(network)

    def act(obs: np.ndarray) -> np.ndarray:
        cells = encode(obs, layout)
        return np.asarray(greedy(stacked, cells.reshape(sets, -1, *cells.shape[1:]))).reshape(-1)

    return evaluate_policies(act, layout, sets)[: len(indices)]


def put_rows(whole: np.ndarray, rows: list[int], values: np.ndarray) -> np.ndarray:
    """A copy of ``whole`` with ``values`` in its ``rows``."""
    out = np.array(whole)
    out[rows] = values
    return out


def rolling_figures(episodes: Any) -> list[TrainingFigures]:
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


def seed_policy(
    network: QNetwork, stacked_params: Any, seed_index: int, layout: DoorsParams | None = None
) -> FlaxPolicy:
    """One seed's greedy policy, from parameters stacked over seeds (for host-side evaluation and files);
    ``layout`` is the run's (its doors are read off the grid where they are random)."""
    return FlaxPolicy(network, jax.tree.map(lambda leaf: leaf[seed_index], stacked_params), layout)


class ScanModel:
    """The trained networks of every seed of a run: ``policy(i)`` is seed ``i``'s; ``act`` is seed 0's."""

    def __init__(self, network: QNetwork, stacked_params: Any, layout: DoorsParams | None = None) -> None:
        self.network = network
        self.params = stacked_params
        self.layout = layout

    def policy(self, seed_index: int) -> FlaxPolicy:
        """Seed ``seed_index``'s greedy policy."""
        return seed_policy(self.network, self.params, seed_index, self.layout)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions of the first seed."""
        return self.policy(0).act(obs)

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """Q-values of the first seed."""
        return self.policy(0).q_values(obs)


def save_model(result: TrainResult, path: str, seed_index: int = 0) -> None:
    """Writes one seed's parameters in the Flax model format (``dqn_flax.load_model`` and ``enjoy`` read it)."""
    num_seeds = result.config.run.num_seeds
    if not 0 <= seed_index < num_seeds:
        raise ValueError(f"seed_index={seed_index} is out of range: expected 0..{num_seeds - 1}")
    result.model.policy(seed_index).save(path, result.arm, result.config)


