"""PQN in the host loop (``algorithm: pqn``): each env's rollout, its Q(lambda) returns, and the learning phase.

The host loop's envs autoreset at the next step, so a step that follows an episode's end is a reset, not a
transition: :class:`RolloutStore` keeps a rollout's ``rollout_steps`` vector steps per env with a mask of the real
transitions, and a reset ends the return before it as the episode's end does. At the rollout's end
:func:`learn_from_rollout` computes the returns backward (:func:`lambda_returns`, Peng's Q(lambda), bootstrapped with
the values the acting network gives each next state) and makes ``epochs`` passes of ``minibatches`` minibatches over
the real transitions, each a step of the learner's :meth:`~.learner.Learner.regress` (``Q(s, a)`` regressed on the
return; no target network). A pass over fewer real transitions than ``rollout_steps * num_envs`` (the resets) fills
its last minibatches with transitions drawn again, so every phase makes the same updates of the same size, as the
fully jitted arm's does (:mod:`~doors_gym_baselines.learners.pqn_scan`, whose envs autoreset in the same step and have
no resets to skip).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import DQNConfig
from ..learners.cells import CELLS_DTYPE, input_width
from .learner import Learner


def lambda_returns(
    rewards: np.ndarray, terminated: np.ndarray, ended: np.ndarray, next_values: np.ndarray, gamma: float, lam: float
) -> np.ndarray:
    """Peng's Q(lambda) returns of a rollout, ``(T, num_envs)`` float32, as the jitted arm's
    :func:`~doors_gym_baselines.learners.pqn_scan.lambda_returns` defines them: backward from the last step,
    ``G_t = r_t + gamma * (1 - terminated_t) * B_t``, ``B_t = V_t`` where the episode ended at ``t`` or at the rollout's
    last step, else ``lam * G_{t+1} + (1 - lam) * V_t``."""
    returns = np.empty_like(rewards, dtype=np.float32)
    following = next_values[-1]
    for t in range(rewards.shape[0] - 1, -1, -1):
        bootstrap = np.where(ended[t], next_values[t], lam * following + (1.0 - lam) * next_values[t])
        following = rewards[t] + gamma * (1.0 - terminated[t]) * bootstrap
        returns[t] = following
    return returns


class RolloutStore:
    """One rollout of every env: ``rollout_steps`` vector steps, a slot per env and step, real transitions masked.

    ``add`` takes what the replay buffer's ``add`` takes (the loop stores through either); ``full`` says the rollout is
    complete, and :func:`learn_from_rollout` empties it.
    """

    def __init__(self, steps: int, num_envs: int, width: int) -> None:
        self.steps, self.num_envs, self.filled = steps, num_envs, 0
        self.cells = np.zeros((steps, num_envs, width), dtype=CELLS_DTYPE)
        self.next_cells = np.zeros_like(self.cells)
        self.actions = np.zeros((steps, num_envs), dtype=np.int64)
        self.rewards = np.zeros((steps, num_envs), dtype=np.float32)
        self.terminated = np.zeros((steps, num_envs), dtype=bool)
        self.ended = np.zeros((steps, num_envs), dtype=bool)
        self.real = np.zeros((steps, num_envs), dtype=bool)

    def add(
        self,
        cells: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_cells: np.ndarray,
        terminated: np.ndarray,
        envs: np.ndarray,
        ended: np.ndarray,
    ) -> None:
        """Stores a vector step's transitions of the envs ``envs`` (the others reset at this step: no transition)."""
        t = self.filled
        self.real[t], self.ended[t], self.terminated[t], self.rewards[t] = False, True, False, 0.0
        self.real[t, envs], self.ended[t, envs], self.terminated[t, envs] = True, ended, terminated
        self.cells[t, envs], self.next_cells[t, envs] = cells, next_cells
        self.actions[t, envs], self.rewards[t, envs] = actions, rewards
        self.filled += 1

    @property
    def full(self) -> bool:
        """Whether the rollout holds its ``steps`` vector steps."""
        return self.filled == self.steps


def make_store(config: DQNConfig) -> RolloutStore:
    """An empty rollout of ``config``'s envs."""
    hyper = config.hyperparameters
    return RolloutStore(hyper.rollout_steps, hyper.num_envs, input_width(config.params))


def learn_from_rollout(learner: Learner, store: RolloutStore, config: DQNConfig, rng: np.random.Generator) -> list[Any]:
    """The learning phase at a full rollout's end (see the module): returns its updates' losses, and empties it."""
    hyper = config.hyperparameters
    samples = store.steps * store.num_envs
    flat_next = store.next_cells.reshape(samples, -1)
    next_values = np.where(store.real, learner.max_values(flat_next).reshape(store.steps, store.num_envs), 0.0)
    returns = lambda_returns(store.rewards, store.terminated, store.ended, next_values, hyper.gamma, hyper.td_lambda)
    cells, actions = store.cells.reshape(samples, -1), store.actions.reshape(samples)
    real, size = np.flatnonzero(store.real.reshape(samples)), samples // hyper.minibatches
    flat_returns, losses = returns.reshape(samples), []
    for _ in range(hyper.epochs):
        order = rng.permutation(real)
        order = np.concatenate([order, rng.choice(real, samples - len(real))]) if len(real) < samples else order
        for batch in order.reshape(hyper.minibatches, size):
            losses.append(learner.regress((cells[batch], actions[batch], flat_returns[batch])))
    store.filled = 0
    return losses
