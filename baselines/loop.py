"""The host loop every framework shares, behind a small learner protocol.

The torch and Flax arms differ only in their network and gradient step, so the
loop that drives them is written once: vector-env rollout with epsilon-greedy
exploration, next-step autoreset masking, the replay buffer, episode figures,
the evaluation cadence, pruning and the result. A framework brings a
:class:`Learner`. One loop also keeps the comparison fair: whatever differs
between two host-loop arms is the framework, not the loop around it. (The
fully jitted arm has its own loop inside ``lax.scan``, which is its point.)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

import doors_gym  # noqa: F401  (registers the ids)
from doors_gym import core

from . import cells as cell_codes
from .arms import arm_of
from .config import DQNConfig
from .evaluation import EpisodeTracker, Evaluation, evaluate_greedy, history_row
from .metrics import HistoryRow, Timings, TrainResult, solved_since
from .replay import ReplayBuffer

Batch = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""``(cells, actions, rewards, next_cells, terminated)`` sampled from the replay buffer (see :mod:`.cells`)."""


class Learner(Protocol):
    """What a framework brings to the host loop; everything the loop reads of it is declared here.

    Its network reads the cells of :mod:`doors_gym_baselines.cells`, which the loop finds once per
    observation. An update returns its loss as the framework's own scalar, without waiting for it: the
    loop reads losses (:meth:`read_losses`) only where it logs them, so no update waits on the host.
    """

    compile_seconds: float
    """Seconds spent compiling before training (0 for an eager learner)."""
    facts: dict[str, Any]
    """How the run is made (threads, devices, versions), tagged on its MLflow run."""

    def greedy(self, cells: np.ndarray) -> np.ndarray:
        """Greedy actions ``(batch,)`` for cells ``(batch, 2)``."""

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions ``(batch,)`` for grid observations ``(batch, H * W)`` (a model's public policy)."""

    def update(self, batch: Batch) -> Any:
        """One gradient step on a replay batch, and the target network's update when one is due; returns the loss."""

    def read_losses(self, losses: list[Any]) -> np.ndarray:
        """The values of losses :meth:`update` returned, float64 (waits for them)."""

    def save(self, path: str, arm: str, config: DQNConfig) -> None:
        """Writes the model file (its framework's format, recognised by content)."""


def make_envs(config: DQNConfig) -> gym.vector.VectorEnv:
    """The training vector env of a host-loop arm (NumPy arrays out, for either env id)."""
    run = config.run
    kwargs: dict[str, Any] = {
        "grid_size": tuple(run.grid_size),
        "n_doors": run.n_doors,
        "door_cols": run.door_cols,
        "max_episode_steps": run.max_episode_steps,
    }
    num_envs = config.hyperparameters.num_envs
    if run.env_id == "DoorsJax-v0" or run.vectorization == "native":
        return gym.make_vec(run.env_id, num_envs, **kwargs)
    return gym.make_vec(run.env_id, num_envs, vectorization_mode=run.vectorization, **kwargs)


def in_a_terminal() -> bool:
    """Whether the command writes to a terminal (both streams): progress bars are for people, not logs."""
    return sys.stdout.isatty() and sys.stderr.isatty()


class Progress:
    """A tqdm bar over env steps with SPS, the latest return and epsilon.

    Silent when ``quiet`` and when the output is not a terminal (a log file or a pipe would keep
    every redraw of the bar).
    """

    def __init__(self, total: int, description: str, quiet: bool) -> None:
        self._bar = None
        if not quiet and in_a_terminal():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=description, unit="step", unit_scale=True, dynamic_ncols=True)

    def update(self, steps: int, **figures: float) -> None:
        if self._bar is not None:
            self._bar.update(steps)
            self._bar.set_postfix(
                {key: f"{value:.3g}" for key, value in figures.items() if value == value}, refresh=False
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class NonFiniteLoss(ArithmeticError):
    """A run's loss turned non-finite: it cannot learn further (outside a study; a trial is pruned instead)."""


def prune(trial: Any, message: str) -> None:
    """Ends a run: ``optuna.TrialPruned`` inside a study, :class:`NonFiniteLoss` outside one."""
    if trial is None:
        raise NonFiniteLoss(message)
    import optuna

    raise optuna.TrialPruned(message)


class Reporter(Protocol):
    """What a run reports its evaluations to (Optuna's ``Trial`` methods, and the score to report)."""

    def observe(self, row: HistoryRow) -> float:
        """Takes an evaluation in (logging it, say) and returns the value to report for it."""

    def report(self, value: float, step: int) -> None:
        """Reports ``value`` at env step ``step`` (``optuna.Trial.report``)."""

    def should_prune(self) -> bool:
        """Whether the run should stop here (``optuna.Trial.should_prune``)."""


class GreedyReward:
    """A plain Optuna trial as a :class:`Reporter`: it is told the greedy per-step reward of each evaluation."""

    def __init__(self, trial: Any) -> None:
        self.trial = trial

    def observe(self, row: HistoryRow) -> float:
        return row.greedy_step_reward

    def report(self, value: float, step: int) -> None:
        self.trial.report(value, step)

    def should_prune(self) -> bool:
        return self.trial.should_prune()


def report(trial: Reporter | None, row: HistoryRow) -> None:
    """Reports an evaluation to ``trial`` and prunes when it says so."""
    if trial is None:
        return
    trial.report(trial.observe(row), step=int(row.step))
    if trial.should_prune():
        prune(trial, f"pruned at step {int(row.step)}")


class EvaluationSchedule:
    """The greedy evaluations of a run: every ``eval_every`` env steps while training, and one at the end.

    Every loop (the host loop and the fully jitted arm's) evaluates through
    this, so the cadence, the reports to an Optuna ``trial`` and the stop when
    solved are the same in every arm. ``seconds`` is the time spent evaluating.
    """

    def __init__(
        self,
        evaluate: Callable[[int], tuple[Evaluation, HistoryRow]],
        history: list[HistoryRow],
        trial: Any,
        config: DQNConfig,
    ) -> None:
        self._evaluate = evaluate
        self._history = history
        self._trial = trial
        self._config = config
        self._next_step = config.run.eval_every or None
        self._last: tuple[Evaluation, HistoryRow] | None = None
        self.seconds = 0.0

    def _timed(self, step: int) -> tuple[Evaluation, HistoryRow]:
        started = time.perf_counter()
        evaluated = self._evaluate(step)
        self.seconds += time.perf_counter() - started
        return evaluated

    def should_stop(self, global_step: int, more_to_come: bool) -> bool:
        """Evaluates if one is due at ``global_step`` (and training goes on); True when training should stop.

        A mid-training evaluation is recorded and reported to the trial (which
        may prune). A run that stops when solved stops once it has been solved
        at every evaluation of the last ``hold_out_steps`` env steps.
        """
        if self._next_step is None or global_step < self._next_step or not more_to_come:
            return False
        self._next_step += self._config.run.eval_every
        self._last = self._timed(global_step)
        self._history.append(self._last[1])
        report(self._trial, self._last[1])
        run = self._config.run
        return run.stop_when_solved and solved_since(self._history, run.hold_out_steps) is not None

    def final(self, global_step: int) -> tuple[Evaluation, HistoryRow]:
        """The evaluation at the end of training (recorded by :func:`finish`).

        A run that stopped at an evaluation ends on that evaluation (taken out
        of the history, where :func:`finish` puts it back as the final row).
        """
        if self._last is not None and self._last[1].step == global_step and self._history[-1] is self._last[1]:
            self._history.pop()
            return self._last
        return self._timed(global_step)


def finish(
    arm: Any,
    config: DQNConfig,
    start: float,
    history: list[HistoryRow],
    last: tuple[Evaluation, HistoryRow],
    phases: dict[str, float],
    method: str = "timed in the loop",
    wall_seconds: float | None = None,
    **figures: Any,
) -> TrainResult:
    """The result of a run whose final evaluation is ``last``.

    ``phases`` are the seconds of the timed phases; the rest of the wall time
    (since ``start``, unless ``wall_seconds`` is given) is ``other``. ``figures``
    are the env steps, updates, model, losses and facts.
    """
    evaluation, final = last
    history.append(final)
    wall_seconds = time.perf_counter() - start if wall_seconds is None else wall_seconds
    timings = Timings(**phases, other=max(0.0, wall_seconds - sum(phases.values())), method=method)
    return TrainResult(
        arm=arm.name,
        config=config,
        evaluation=evaluation,
        rolling_reward=final.rolling_reward,
        wall_seconds=wall_seconds,
        history=history,
        timings=timings,
        **figures,
    )


def save_model(result: TrainResult, path: str, seed_index: int = 0) -> None:
    """Writes the trained model of a host-loop run (one seed per run: ``seed_index`` is 0)."""
    if seed_index != 0:
        raise ValueError(f"seed_index={seed_index} is out of range: a {result.arm} run trains one seed (0)")
    result.model.save(path, result.arm, result.config)


def train(
    make_learner: Callable[[DQNConfig], Learner], implementation: str, config: DQNConfig, trial: Any = None
) -> TrainResult:
    """Trains one seed of a host-loop arm; reports greedy evaluations to an Optuna ``trial`` if given.

    Args:
        make_learner: builds the framework's learner from the config (seeding its networks).
        implementation: the arm's module name (with the env id, it names the arm).
        config: hyperparameters and run settings.
        trial: an Optuna trial (or the tuner's tracked trial), or None.

    Returns:
        A :class:`~doors_gym_baselines.metrics.TrainResult` whose ``model`` is the learner.
    """
    start = time.perf_counter()
    arm = arm_of(implementation, config.run.env_id)
    hyper, run = config.hyperparameters, config.run
    num_envs = hyper.num_envs
    learner = make_learner(config)
    envs = make_envs(config)
    buffer = ReplayBuffer(hyper.buffer_size, seed=run.seed)
    tracker = EpisodeTracker(num_envs, run.rolling_episodes)
    rng = np.random.default_rng(run.seed)
    progress = Progress(config.num_iterations * num_envs, f"{arm.name}", run.quiet)
    losses = LossLog(learner, trial)

    def evaluate(step: int) -> tuple[Evaluation, HistoryRow]:
        evaluation = evaluate_greedy(learner.act, config.params)
        training = tracker.summary()
        row = history_row(step, start, config.epsilon(step), losses.read(step), [evaluation], [training], [run.seed])
        return evaluation, row

    obs, info = envs.reset(seed=run.seed)
    cells = cell_codes.encode(obs)
    tracker.start(np.ones(num_envs, dtype=bool), info["distance"])
    previous_done = np.zeros(num_envs, dtype=bool)
    history: list[HistoryRow] = []
    updates = 0
    schedule = EvaluationSchedule(evaluate, history, trial, config)
    # Seconds per phase: six clock reads per vector step (about 0.1 % of a step; see Timings).
    clock = time.perf_counter
    acting = stepping = buffering = updating = 0.0
    for iteration in range(config.num_iterations):
        global_step = (iteration + 1) * num_envs
        epsilon = config.epsilon(global_step)
        t0 = clock()
        actions = np.array(learner.greedy(cells), dtype=np.int64)  # ours to change (a JAX result is read-only)
        explore = rng.random(num_envs) < epsilon
        actions[explore] = rng.integers(0, core.NUM_ACTIONS, int(explore.sum()))
        t1 = clock()
        next_obs, rewards, terminated, truncated, info = envs.step(actions)
        t2 = clock()
        next_cells = cell_codes.encode(next_obs)  # once per observation: acting and the buffer share them
        # Next-step autoreset: a step that follows an episode end is a reset, not a transition.
        valid = ~previous_done
        buffer.add(cells[valid], actions[valid], rewards[valid], next_cells[valid], terminated[valid])
        t3 = clock()
        acting += t1 - t0
        stepping += t2 - t1
        buffering += t3 - t2
        finished = tracker.record(rewards, terminated, truncated, valid)
        tracker.start(previous_done, info["distance"])
        previous_done = terminated | truncated
        cells = next_cells

        if global_step > hyper.learning_starts and iteration % hyper.train_frequency == 0:
            t4 = clock()
            batch = buffer.sample(hyper.batch_size)
            t5 = clock()
            # Bootstrap through truncation: only termination cuts the return (the learners' TD targets).
            losses.add(learner.update(batch))
            updates += 1
            buffering += t5 - t4
            updating += clock() - t5

        progress.update(num_envs, ret=finished[-1] if finished else float("nan"), eps=epsilon)
        if schedule.should_stop(global_step, more_to_come=iteration + 1 < config.num_iterations):
            break
    progress.close()
    envs.close()
    last = schedule.final(global_step)
    losses.read(global_step)
    phases = {
        "env_step": stepping,
        "action_selection": acting,
        "replay_buffer": buffering,
        "update": updating,
        "evaluation": schedule.seconds,
        "compile": learner.compile_seconds,
    }
    figures = {"env_steps": global_step, "updates": updates, "model": learner, "losses": losses.values}
    return finish(arm, config, start, history, last, phases, facts=learner.facts, **figures)


class LossLog:
    """The losses of a run, read from the learner only where they are logged (no host sync per update).

    :meth:`read` turns the pending losses into floats at an evaluation, prunes (or stops the run) on a
    non-finite one, and returns every value so far.
    """

    def __init__(self, learner: Learner, trial: Any) -> None:
        self._learner = learner
        self._trial = trial
        self._pending: list[Any] = []
        self.values: list[float] = []

    def add(self, loss: Any) -> None:
        self._pending.append(loss)

    def read(self, step: int) -> list[float]:
        """Every loss so far, as floats (the pending ones read now)."""
        if self._pending:
            read = self._learner.read_losses(self._pending)
            self._pending = []
            self.values.extend(read.tolist())
            if not np.isfinite(read).all():
                prune(self._trial, f"non-finite loss before step {step}")
        return self.values
