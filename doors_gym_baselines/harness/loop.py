"""The host loop of the torch and Flax arms: one loop for five arms, behind the small :class:`~.learner.Learner`
protocol.

We keep the loop shared rather than copying it into each learner file (CleanRL's choice): five arms run it,
and whatever differs between two of them must be the framework, never a drifted copy of the loop. The
loop is :func:`train`, top to bottom: epsilon-greedy acting, the env step, storing the transitions,
sampling a batch and the learner's update, the evaluations, the result. A learner file brings its network
and gradient step (:class:`~.learner.Learner`); the fully jitted arm has its own loop inside ``lax.scan``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np

import doors_gym  # noqa: F401  (registers the ids)
from doors_gym import core

from ..arm import Arm
from ..config import DQNConfig, level_env_id
from ..learners import cells as cell_codes
from .evaluation import EpisodeTracker, Evaluation, evaluate_greedy, history_row
from .learner import Learner
from .metrics import HistoryRow, TrainResult, solved_reward
from .pqn import learn_from_rollout, make_store
from .progress import Progress
from .replay import ReplayBuffer, learned_reward, min_episode_steps
from .result import finish
from .schedule import EvaluationSchedule, Reporter, prune

LOOP_PHASES = ("env_step", "action_selection", "replay_buffer", "update")
"""The phases the host loop times itself (evaluation and compile are timed where they happen)."""
Result = TypeVar("Result")


class PhaseTimer:
    """Seconds per named phase, added up over the calls it times (two clock reads per call).

    The loop calls its phases through :meth:`timed`, so the timing stays out of the algorithm.
    """

    def __init__(self, *phases: str) -> None:
        self.seconds = dict.fromkeys(phases, 0.0)

    def timed(self, phase: str, function: Callable[..., Result], *args: Any) -> Result:
        """``function(*args)``, its seconds added to ``phase``."""
        started = time.perf_counter()
        result = function(*args)
        self.seconds[phase] += time.perf_counter() - started
        return result


def make_envs(config: DQNConfig) -> gym.vector.VectorEnv:
    """The training vector env of a host-loop arm (NumPy arrays out, for either env id)."""
    run = config.run
    kwargs = run.env_keywords
    num_envs = config.hyperparameters.num_envs
    env_id = level_env_id(run.env_id, config.params)
    if run.env_id == "DoorsJax-v0" or run.vectorization == "native":
        return gym.make_vec(env_id, num_envs, **kwargs)
    return gym.make_vec(env_id, num_envs, vectorization_mode=run.vectorization, **kwargs)


class Rollout:
    """The training envs, the replay buffer and the episode figures under a learner's epsilon-greedy policy.

    The cells of each observation are found once (:func:`doors_gym_baselines.learners.cells.encode`): the learner
    acts on them and the replay buffer stores them.
    """

    def __init__(self, config: DQNConfig, learner: Learner) -> None:
        hyper, run = config.hyperparameters, config.run
        self.learner = learner
        self.num_envs = hyper.num_envs
        self.envs = make_envs(config)
        self.params = config.params
        doors = cell_codes.door_count(self.params)
        self.buffer = make_store(config) if hyper.algorithm == "pqn" else ReplayBuffer(
            hyper.buffer_size,
            run.seed,
            doors,
            num_envs=self.num_envs,
            min_episode_steps=min_episode_steps(self.params),
            n_step=hyper.n_step,
            gamma=hyper.gamma,
        )  # fmt: skip
        self.restarts = config.restarts
        self.step_cost = hyper.step_cost
        self.tracker = EpisodeTracker(self.num_envs, run.rolling_episodes)
        self.rng = np.random.default_rng(run.seed)
        obs, info = self.envs.reset(seed=run.seed)
        self.cells = cell_codes.encode(obs, self.params)
        self.tracker.start(np.ones(self.num_envs, dtype=bool), info["distance"])
        self.previous_done = np.zeros(self.num_envs, dtype=bool)

    def act(self, epsilon: float) -> np.ndarray:
        """Epsilon-greedy actions ``(num_envs,)`` int64 for the current cells."""
        # A copy of our own to change (a JAX result is read-only).
        actions = np.array(self.learner.greedy(self.cells), dtype=np.int64)
        explore = self.rng.random(self.num_envs) < epsilon
        actions[explore] = self.rng.integers(0, core.NUM_ACTIONS, int(explore.sum()))
        return actions

    def store(
        self,
        actions: np.ndarray,
        next_obs: np.ndarray,
        rewards: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        info: dict[str, Any],
        restart_probability: float = 0.0,
    ) -> list[float]:
        """Stores a vector step's transitions and episode figures; returns the returns of the episodes it ended.

        Next-step autoreset: a step that follows an episode end is a reset, not a transition. With exploring
        starts (``restart_prob > 0``) an env whose episode ended is instead reset at once, with probability
        ``restart_probability``, to a start anywhere (the envs' ``start="anywhere"`` reset option); that
        episode stays out of the rolling figures.
        """
        next_cells = cell_codes.encode(next_obs, self.params)  # once per observation: acting and the buffer share them
        valid = ~self.previous_done
        envs = np.flatnonzero(valid)
        done = terminated | truncated
        learned = learned_reward(rewards[valid], self.step_cost)  # the env's reward is tracked
        self.buffer.add(
            self.cells[valid], actions[valid], learned, next_cells[valid], terminated[valid], envs, done[valid]
        )
        finished = self.tracker.record(rewards, terminated, truncated, valid)
        self.tracker.start(self.previous_done, info["distance"])
        self.previous_done = done
        if self.restarts and done.any():
            self._restart(done & (self.rng.random(self.num_envs) < restart_probability), next_cells)
        self.cells = next_cells
        return finished

    def _restart(self, mask: np.ndarray, next_cells: np.ndarray) -> None:
        """Resets the envs in ``mask`` (their episodes just ended) to starts anywhere, in place of the autoreset."""
        if not mask.any():
            return
        obs, info = self.envs.reset(options={"reset_mask": mask, "start": "anywhere"})
        next_cells[mask] = cell_codes.encode(np.asarray(obs)[mask], self.params)
        self.tracker.start(mask, np.asarray(info["distance"]), counted=False)
        self.previous_done = self.previous_done & ~mask

    def close(self) -> None:
        """Closes the envs."""
        self.envs.close()


class LossLog:
    """The losses of a run, read from the learner only where they are logged (no host sync per update).

    :meth:`read` turns the pending losses into floats at an evaluation, prunes (or stops the run) on a
    non-finite one, and returns every value so far.
    """

    def __init__(self, learner: Learner, trial: Reporter | None) -> None:
        self._learner = learner
        self._trial = trial
        self._pending: list[Any] = []
        self.values: list[float] = []

    def add(self, loss: Any) -> None:
        """Keeps an update's loss, not waited for."""
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


def greedy_evaluation(
    config: DQNConfig, start: float, rollout: Rollout, losses: LossLog
) -> Callable[[int], tuple[Evaluation, HistoryRow]]:
    """``evaluate(step)`` for the :class:`~.schedule.EvaluationSchedule`: the learner's greedy play from every
    start, and the history row with the training episodes' figures and the losses so far."""

    def evaluate(step: int) -> tuple[Evaluation, HistoryRow]:
        evaluation = evaluate_greedy(rollout.learner.act, config.params)
        training = rollout.tracker.summary()
        seeds = [config.run.seed]
        bar = solved_reward(config.params)
        row = history_row(step, start, config.epsilon(step), losses.read(step), [evaluation], [training], seeds, bar)
        return evaluation, row

    return evaluate


def train(
    arm: Arm, make_learner: Callable[[DQNConfig], Learner], config: DQNConfig, trial: Reporter | None = None
) -> TrainResult:
    """Trains one seed of a host-loop arm; reports greedy evaluations to ``trial`` if given.

    Args:
        arm: the arm it trains as (its record, from the learner file).
        make_learner: builds the framework's learner from the config (seeding its networks).
        config: hyperparameters and run settings.
        trial: what the evaluations are reported to (the tuner's tracked trial, or an Optuna trial wrapped
            as :class:`~.schedule.GreedyReward`), or None.

    Returns:
        A :class:`~doors_gym_baselines.harness.metrics.TrainResult` whose ``model`` is the learner.
    """
    start = time.perf_counter()
    hyper = config.hyperparameters
    learner = make_learner(config)
    rollout = Rollout(config, learner)
    progress = Progress(config.num_iterations * hyper.num_envs, arm.name, config.run.quiet)
    losses = LossLog(learner, trial)
    history: list[HistoryRow] = []
    schedule = EvaluationSchedule(greedy_evaluation(config, start, rollout, losses), history, trial, config, progress)
    timer = PhaseTimer(*LOOP_PHASES)
    updates, pqn = 0, hyper.algorithm == "pqn"
    for iteration in range(config.num_iterations):
        global_step = (iteration + 1) * hyper.num_envs
        epsilon = config.epsilon(global_step)
        actions = timer.timed("action_selection", rollout.act, epsilon)
        next_obs, rewards, terminated, truncated, info = timer.timed("env_step", rollout.envs.step, actions)
        restart = config.restart_probability(global_step) if rollout.restarts else 0.0
        stored = (actions, next_obs, rewards, terminated, truncated, info, restart)
        finished = timer.timed("replay_buffer", rollout.store, *stored)
        if pqn and rollout.buffer.full:  # PQN learns at each rollout's end (harness/pqn.py)
            phase = timer.timed("update", learn_from_rollout, learner, rollout.buffer, config, rollout.rng)
            for loss in phase:
                losses.add(loss)
            updates += len(phase)
        elif not pqn and global_step > hyper.learning_starts and iteration % hyper.train_frequency == 0:
            for _ in range(hyper.gradient_steps):
                batch = timer.timed("replay_buffer", rollout.buffer.sample, hyper.batch_size)
                # Bootstrap through truncation: only termination cuts the return (the learners' TD targets).
                losses.add(timer.timed("update", learner.update, batch))
            updates += hyper.gradient_steps
        progress.update(hyper.num_envs, ret=finished[-1] if finished else float("nan"), eps=epsilon)
        if schedule.should_stop(global_step, more_to_come=iteration + 1 < config.num_iterations):
            break
    progress.close()
    rollout.close()
    last = schedule.final(global_step)
    losses.read(global_step)
    phases = {**timer.seconds, "evaluation": schedule.seconds, "compile": learner.compile_seconds}
    figures = {"env_steps": global_step, "updates": updates, "model": learner, "losses": losses.values}
    return finish(arm, config, start, history, last, phases, facts=learner.facts, **figures)


def save_model(result: TrainResult, path: str, seed_index: int = 0) -> None:
    """Writes the trained model of a host-loop run (one seed per run: ``seed_index`` is 0)."""
    if seed_index != 0:
        raise ValueError(f"seed_index={seed_index} is out of range: a {result.arm} run trains one seed (0)")
    result.model.save(path, result.arm, result.config)
