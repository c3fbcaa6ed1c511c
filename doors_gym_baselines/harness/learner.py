"""What a framework brings to the host loop: the :class:`Learner` protocol."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..config import DQNConfig

Batch = tuple[np.ndarray, ...]
"""``(cells, actions, rewards, next_cells, terminated)`` sampled from the replay buffer (see :mod:`..cells`; cells
with their door columns where the doors are random); with multi-step returns (``n_step > 1``) the rewards are each
return's discounted sum and ``discounts`` (``gamma ** steps taken``) follows."""


class Learner(Protocol):
    """A framework's networks and gradient step; everything the host loop reads of them is declared here.

    Its network reads the cells of :mod:`doors_gym_baselines.learners.cells`, which the loop finds once per
    observation. An update returns its loss as the framework's own scalar, without waiting for it: the
    loop reads losses (:meth:`read_losses`) only where it logs them, so no update waits on the host.
    The trained learner is the run's model: :meth:`act` is its public policy, :meth:`save` its file.
    """

    compile_seconds: float
    """Seconds spent compiling before training (0 for an eager learner): the run's ``compile`` phase."""
    facts: dict[str, Any]
    """How the run is made (threads, devices, versions), tagged on its MLflow run."""

    def greedy(self, cells: np.ndarray) -> np.ndarray:
        """Greedy actions ``(batch,)`` for cells ``(batch, 2)`` (with the door columns where doors are random)."""

    def max_values(self, cells: np.ndarray) -> np.ndarray:
        """``(batch,)`` float32: the best action's value of each of a batch of cells, under the online network
        (PQN's bootstrap, ``algorithm: pqn``)."""

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions ``(batch,)`` for grid observations ``(batch, H * W)`` (a model's public policy)."""

    def update(self, batch: Batch) -> Any:
        """One gradient step on a replay batch, and the target network's update when one is due; returns the loss."""

    def regress(self, batch: tuple[np.ndarray, np.ndarray, np.ndarray]) -> Any:
        """PQN's gradient step (``algorithm: pqn``): ``Q(s, a)`` regressed on the returns of a minibatch ``(cells,
        actions, returns)``, no target network; returns the loss."""

    def read_losses(self, losses: list[Any]) -> np.ndarray:
        """The values of losses :meth:`update` returned, float64 (waits for them)."""

    def save(self, path: str, arm: str, config: DQNConfig) -> None:
        """Writes the model file (its framework's format, recognised by content)."""
