"""Measuring an agent: greedy play from every start/goal pair, and the figures of training episodes.

Framework-free (NumPy only), so every arm uses it without pulling in another's stack.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from doors_gym import core
from doors_gym.core import DoorsParams, DoorsState
from doors_gym.envs.vector import DoorsVectorEnv

from .metrics import SOLVED_ROLLING_REWARD, SOLVED_SUCCESS, HistoryRow, SeedFigures


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """Greedy play from every start/goal pair of the layout."""

    success_rate: float
    mean_step_reward: float
    normalised_return: float
    mean_return: float
    episodes: int

    @property
    def solved(self) -> bool:
        """Greedy success of at least 99 % (the rolling-reward half of "solved" is a training figure)."""
        return self.success_rate >= SOLVED_SUCCESS

    @classmethod
    def mean(cls, evaluations: Sequence[Evaluation]) -> Evaluation:
        """The mean of several seeds' evaluations (episodes add up)."""
        return cls(
            success_rate=float(np.mean([e.success_rate for e in evaluations])),
            mean_step_reward=float(np.mean([e.mean_step_reward for e in evaluations])),
            normalised_return=float(np.mean([e.normalised_return for e in evaluations])),
            mean_return=float(np.mean([e.mean_return for e in evaluations])),
            episodes=sum(e.episodes for e in evaluations),
        )


def all_start_states(params: DoorsParams) -> DoorsState:
    """Every start of the layout as a batch: agent on the bottom row, goal on the top row."""
    agent_col, goal_col = np.divmod(np.arange(params.width * params.width), params.width)
    return core.initial_state(params, agent_col, goal_col)


def start_observations(params: DoorsParams, count: int) -> np.ndarray:
    """The grid observations ``(count, H * W)`` of the first ``count`` greedy evaluations' starts: start/goal pairs
    in order where the doors are fixed, the episodes of :data:`EVALUATION_SEED` (doors drawn) where they are random."""
    if params.random_doors:
        envs = DoorsVectorEnv(count, **_layout_keywords(params))
        return envs.reset(seed=EVALUATION_SEED)[0]
    return np.asarray(core.observation(params, all_start_states(params)))[:count]


EVALUATION_EPISODES = 1000
"""Greedy episodes of an evaluation where the doors are random (SPEC's "at least 1000")."""
EVALUATION_SEED = 2**31 - 1
"""The seed of those episodes' starts and layouts: the same at every evaluation, apart from training seeds."""


def evaluation_episodes(params: DoorsParams) -> int:
    """Episodes of one greedy evaluation (the batch its policy acts on): ``W * W`` start/goal pairs where the
    doors are fixed, :data:`EVALUATION_EPISODES` where they are random."""
    return EVALUATION_EPISODES if params.random_doors else params.width * params.width


def describe_evaluation(params: DoorsParams) -> str:
    """What one greedy evaluation plays, in words (``"all 225 start/goal pairs"`` on ``Doors-v0``)."""
    if params.random_doors:
        return f"{EVALUATION_EPISODES} episodes of fixed starts and doors (seed {EVALUATION_SEED})"
    return f"all {evaluation_episodes(params)} start/goal pairs"


def evaluate_greedy(act: Callable[[np.ndarray], np.ndarray], params: DoorsParams) -> Evaluation:
    """Plays ``act`` (a batch of grid observations -> greedy actions) from every start, one episode each.

    Where the doors are fixed: all ``W * W`` start/goal pairs, exact (the policy and the env are
    deterministic). Where they are random: :data:`EVALUATION_EPISODES` episodes whose starts and doors
    come from :data:`EVALUATION_SEED`, the same at every evaluation. Uses the native vector env, one env
    per episode; these episodes are never used for training.
    """
    return evaluate_policies(act, params, 1)[0]


def evaluate_policies(act: Callable[[np.ndarray], np.ndarray], params: DoorsParams, policies: int) -> list[Evaluation]:
    """:func:`evaluate_greedy` of ``policies`` policies at once, on the same episodes: one vector env of every
    policy's episodes, policy after policy, and ``act`` maps its ``(policies * episodes, ...)`` observations to
    their actions (each policy's rows by its own network). Each policy's figures are those
    :func:`evaluate_greedy` gives it alone (each episode is stepped as alone; the sums run in the same order)."""
    limit = params.max_episode_steps or core.DEFAULT_MAX_EPISODE_STEPS
    if params.random_doors:
        envs = DoorsVectorEnv(EVALUATION_EPISODES, max_episode_steps=limit, **_layout_keywords(params))
        obs, info = envs.reset(seed=EVALUATION_SEED)
        start_distance = np.asarray(info["distance"], dtype=np.float64)
        starts = envs.state
    else:
        starts = all_start_states(params)
        start_distance = np.asarray(core.state_distance(starts), dtype=np.float64)
        envs = None
    episodes = len(start_distance)
    if envs is None or policies > 1:
        envs = DoorsVectorEnv(episodes * policies, max_episode_steps=limit, **_layout_keywords(params))
        envs.reset(seed=0)
        tiled = core.map_state(lambda field: np.tile(field, (policies,) + (1,) * (np.ndim(field) - 1)), starts)
        obs = envs.set_state(tiled)
    returns = np.zeros(envs.num_envs)
    lengths = np.zeros(envs.num_envs, dtype=np.int64)
    success = np.zeros(envs.num_envs, dtype=bool)
    running = np.ones(envs.num_envs, dtype=bool)
    while running.any():
        obs, rewards, terminated, truncated, _ = envs.step(np.asarray(act(obs), dtype=np.int64))
        returns[running] += rewards[running]
        lengths[running] += 1
        success |= running & terminated
        running &= ~(terminated | truncated)
    evaluations = []
    for mine in np.split(np.arange(envs.num_envs), policies):
        evaluations.append(
            Evaluation(
                success_rate=float(success[mine].mean()),
                mean_step_reward=float(returns[mine].sum() / lengths[mine].sum()),
                normalised_return=float(np.mean(returns[mine] / np.maximum(start_distance, 1e-6))),
                mean_return=float(returns[mine].mean()),
                episodes=episodes,
            )
        )
    return evaluations


def _layout_keywords(params: DoorsParams) -> dict[str, Any]:
    """The env keywords of ``params``'s layout (Doors-v0's call unchanged where it is the study's)."""
    keywords: dict[str, Any] = {"grid_size": params.grid_size}
    if params.random_doors:
        return {**keywords, "n_doors": params.n_doors, "n_walls": params.n_walls, "doors": params.doors}
    keywords["door_cols"] = params.door_cols
    if params.n_walls != core.DEFAULT_N_WALLS:
        keywords["n_walls"] = params.n_walls
    return keywords


@dataclasses.dataclass(frozen=True)
class TrainingFigures:
    """Figures of the last ``rolling_episodes`` training episodes (NaN before the first one ends).

    ``rolling_reward`` is the study's Table 2 figure: their total reward over their total steps.
    """

    rolling_reward: float = math.nan
    train_success_rate: float = math.nan
    train_normalised_return: float = math.nan
    train_episode_return: float = math.nan
    train_episode_length: float = math.nan


class EpisodeTracker:
    """Per-episode figures of a vector env with next-step autoreset, and the study's rolling reward.

    ``start(mask, distance)`` marks envs whose episode begins (reset or
    autoreset step), ``record(...)`` adds one step for the envs in ``active``.
    An episode started with ``counted=False`` (an exploring start, anywhere on the grid) is
    played and returned by ``record`` but stays out of the rolling figures.
    """

    def __init__(self, num_envs: int, rolling_episodes: int) -> None:
        self.returns = np.zeros(num_envs)
        self.lengths = np.zeros(num_envs, dtype=np.int64)
        self.start_distance = np.ones(num_envs)
        self.counted = np.ones(num_envs, dtype=bool)
        self.window: collections.deque[tuple[float, int, bool, float]] = collections.deque(maxlen=rolling_episodes)
        self.episodes = 0

    def start(self, mask: np.ndarray, distance: np.ndarray, counted: bool = True) -> None:
        """Envs in ``mask`` begin an episode at ``distance`` from their goal; it enters the rolling figures when
        ``counted``."""
        self.returns[mask] = 0.0
        self.lengths[mask] = 0
        self.start_distance[mask] = distance[mask]
        self.counted[mask] = counted

    def record(
        self, rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, active: np.ndarray
    ) -> list[float]:
        """Adds a step; returns the returns of the episodes that ended on it."""
        self.returns[active] += rewards[active]
        self.lengths[active] += 1
        ended = active & (terminated | truncated)
        finished = []
        for index in np.flatnonzero(ended):
            episode = (float(self.returns[index]), int(self.lengths[index]), bool(terminated[index]))
            if self.counted[index]:
                self.window.append((*episode, episode[0] / max(float(self.start_distance[index]), 1e-6)))
            finished.append(episode[0])
        self.episodes += len(finished)
        return finished

    def summary(self) -> TrainingFigures:
        """Rolling figures over the last ``rolling_episodes`` episodes (NaN before the first one)."""
        if not self.window:
            return TrainingFigures()
        returns, lengths, success, normalised = (np.array(column) for column in zip(*self.window))
        return TrainingFigures(
            rolling_reward=float(returns.sum() / lengths.sum()),
            train_success_rate=float(success.mean()),
            train_normalised_return=float(normalised.mean()),
            train_episode_return=float(returns.mean()),
            train_episode_length=float(lengths.mean()),
        )


def history_row(
    step: int,
    start: float,
    epsilon: float,
    losses: Sequence[float],
    evaluations: Sequence[Evaluation],
    training: Sequence[TrainingFigures],
    seeds: Sequence[int],
    solved_reward: float = SOLVED_ROLLING_REWARD,
) -> HistoryRow:
    """One point of a learning curve from each seed's greedy evaluation and training figures.

    Figures are means over the seeds that have them (a seed whose first
    episode has not ended has NaN training figures); ``loss`` is the mean of
    the last 100 updates.
    """
    seconds = time.perf_counter() - start
    mean = Evaluation.mean(evaluations)
    per_seed = tuple(
        SeedFigures(
            seed=seed, rolling_reward=figures.rolling_reward, solved_reward=solved_reward, **_greedy_figures(evaluation)
        )
        for seed, evaluation, figures in zip(seeds, evaluations, training)
    )
    training_means = {
        name: _nanmean([getattr(figures, name) for figures in training])
        for name in (spec.name for spec in dataclasses.fields(TrainingFigures))
    }
    return HistoryRow(
        step=step,
        seconds=seconds,
        sps=step * len(seeds) / seconds,
        epsilon=epsilon,
        loss=float(np.mean(losses[-100:])) if len(losses) else math.nan,
        per_seed=per_seed,
        **_greedy_figures(mean),
        **training_means,
    )


def _greedy_figures(evaluation: Evaluation) -> dict[str, float]:
    """The ``greedy_*`` fields of a history row and of a seed's figures (:mod:`.metrics`) from an evaluation."""
    return {
        "greedy_success_rate": evaluation.success_rate,
        "greedy_step_reward": evaluation.mean_step_reward,
        "greedy_normalised_return": evaluation.normalised_return,
    }


def _nanmean(values: Sequence[float]) -> float:
    """Mean over the finite values; NaN (without a warning) when there are none."""
    finite = [value for value in values if not math.isnan(value)]
    return float(np.mean(finite)) if finite else math.nan
