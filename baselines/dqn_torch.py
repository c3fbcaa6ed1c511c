"""DQN in PyTorch against ``Doors-v0`` or ``DoorsJax-v0`` (CleanRL's ``dqn.py`` as the reference).

The arms ``torch-numpy`` and ``torch-jax``: ``doors-gym train --arm torch-numpy`` or
``python -m baselines.dqn_torch``. The shared host loop (:mod:`.loop`) drives a
:class:`TorchLearner`; ``dqn_flax.py`` follows the same order, section by section.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from doors_gym.core import AGENT, GOAL, NUM_ACTIONS

from . import loop
from .config import DQNConfig, first_line
from .loop import Batch, save_model  # noqa: F401  (save_model: this file's arm interface)
from .metrics import TrainResult

MODEL_FORMAT = "doors-gym-dqn"


class QNetwork(nn.Module):
    """MLP from the agent and goal planes to one Q-value per action.

    The first layer is a linear layer over the one-hot agent and goal planes
    (``2 * H * W`` inputs, :func:`~doors_gym_baselines.loop.encode`). A one-hot
    input selects one weight column per plane, so it is computed as those two
    columns: the same function and parameters, without multiplying zeros.
    """

    def __init__(self, num_cells: int, hidden_sizes: tuple[int, ...], num_actions: int = NUM_ACTIONS) -> None:
        super().__init__()
        self.num_cells = num_cells
        self.register_buffer("cells", torch.arange(num_cells), persistent=False)
        self.planes = nn.Linear(2 * num_cells, hidden_sizes[0])
        layers: list[nn.Module] = [nn.ReLU()]
        width = hidden_sizes[0]
        for hidden in hidden_sizes[1:]:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, num_actions))
        self.network = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``(batch, H * W)`` integer grid observations -> ``(batch, 5)`` Q-values.

        Exactly one agent cell and at most one goal cell: a sum of cell indices
        finds them (as the Flax network does). An argmax over the masks found them
        too, but inductor's vectorised argmax returned indices past the grid for
        rows without a goal (the agent standing on it), and the compiled arm's
        gather crashed.
        """
        agent = torch.where(obs == AGENT, self.cells, 0).sum(dim=1)
        is_goal = obs == GOAL
        goal = torch.where(is_goal, self.cells, 0).sum(dim=1)
        goal_visible = is_goal.any(dim=1, keepdim=True)  # the agent covers a reached goal
        rows = self.planes.weight.t()
        first = rows[agent] + rows[self.num_cells + goal] * goal_visible + self.planes.bias
        return self.network(first)


def make_optimizer(config: DQNConfig, parameters: Any) -> torch.optim.Optimizer:
    """Adam or SGD at the config's learning rate.

    A decaying rate is a tensor that the schedule changes in place, so a compiled
    step reads it instead of recompiling at every new value.
    """
    hyper = config.hyperparameters
    optimizer = torch.optim.Adam if hyper.optimizer == "adam" else torch.optim.SGD
    decays = hyper.lr_end_fraction < 1.0
    return optimizer(parameters, lr=torch.tensor(hyper.learning_rate) if decays else hyper.learning_rate)


def make_scheduler(config: DQNConfig, optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler | None:
    """The linear learning-rate decay to ``lr_end_fraction`` at the run's last update (None when constant).

    Stepped after every update: update ``k`` (from 0) runs at
    ``learning_rate * (1 - (1 - lr_end_fraction) * min(1, k / (num_updates - 1)))``, as optax's
    ``linear_schedule`` gives the Flax arms.
    """
    hyper = config.hyperparameters
    if hyper.lr_end_fraction >= 1.0:
        return None
    span = max(1, config.num_updates - 1)
    drop = 1.0 - hyper.lr_end_fraction
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1.0 - drop * min(1.0, k / span))


class TorchLearner:
    """Online and target ``QNetwork``, optimizer and TD loss: the torch side of the host loop."""

    def __init__(self, config: DQNConfig, network: QNetwork | None = None) -> None:
        torch.manual_seed(config.run.seed)
        self.device = torch.device(config.run.device)
        hyper = config.hyperparameters
        num_cells = config.params.num_cells
        self.gamma = hyper.gamma
        self.network = (network or QNetwork(num_cells, hyper.hidden_sizes)).to(self.device)
        self.target_network = QNetwork(num_cells, hyper.hidden_sizes).to(self.device)
        self.target_network.load_state_dict(self.network.state_dict())
        self.optimizer = make_optimizer(config, self.network.parameters())
        self.scheduler = make_scheduler(config, self.optimizer)
        self.loss_function = nn.SmoothL1Loss() if hyper.loss == "huber" else nn.MSELoss()
        self.double_dqn, self.tau, self.max_grad_norm = hyper.double_dqn, hyper.tau, hyper.max_grad_norm

        self._greedy = self.greedy_actions
        self._step = self.gradient_step

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions for a batch of grid observations."""
        # DoorsJax-v0 hands out read-only views of JAX buffers; torch wants writable memory.
        obs = obs if obs.flags.writeable else obs.copy()
        with torch.no_grad():
            return self._greedy(torch.as_tensor(obs, device=self.device)).cpu().numpy()

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """``(batch, 5)`` Q-values of a batch of grid observations."""
        obs = obs if obs.flags.writeable else obs.copy()
        with torch.no_grad():
            return self.network(torch.as_tensor(obs, device=self.device)).cpu().numpy()

    def update(self, batch: Batch) -> float:
        """One gradient step; bootstraps through truncation (only termination cuts the return)."""
        self.optimizer.zero_grad()  # outside the step: torch.compile does not trace it
        loss = self._step(*(torch.as_tensor(array, device=self.device) for array in batch)).item()
        if self.scheduler is not None:
            self.scheduler.step()
        return loss

    def greedy_actions(self, obs: torch.Tensor) -> torch.Tensor:
        """``(batch,)`` greedy actions of ``(batch, H * W)`` observations."""
        return self.network(obs).argmax(dim=1)

    def gradient_step(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        rewards: torch.Tensor,
        next_obs: torch.Tensor,
        terminated: torch.Tensor,
    ) -> torch.Tensor:
        """The TD loss of a batch, its gradient and the optimizer's step (gradients zeroed before); returns the loss."""
        with torch.no_grad():
            next_q = self.target_network(next_obs)
            if self.double_dqn:
                next_actions = self.network(next_obs).argmax(dim=1, keepdim=True)
                next_values = next_q.gather(1, next_actions).squeeze(1)
            else:
                next_values = next_q.max(dim=1).values
            targets = rewards + self.gamma * next_values * (1.0 - terminated)
        values = self.network(obs).gather(1, actions[:, None]).squeeze(1)
        loss = self.loss_function(values, targets)
        loss.backward()
        if self.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.network.parameters(), self.max_grad_norm)
        self.optimizer.step()
        return loss.detach()

    def sync_target(self) -> None:
        """Updates the target: a copy of the online network, or ``tau`` of the way towards it (Polyak)."""
        if self.tau >= 1.0:
            self.target_network.load_state_dict(self.network.state_dict())
            return
        with torch.no_grad():
            for target, online in zip(self.target_network.parameters(), self.network.parameters()):
                target.mul_(1.0 - self.tau).add_(online, alpha=self.tau)

    def save(self, path: str, arm: str, config: DQNConfig) -> None:
        """The ``state_dict`` and the config (plain types) with ``torch.save``: it loads with ``weights_only``."""
        payload = {"format": MODEL_FORMAT, "arm": arm, "config": config.to_dict()}
        torch.save({**payload, "state_dict": self.network.state_dict()}, path)


def train(config: DQNConfig, trial: Any = None) -> TrainResult:
    """Trains one seed; reports greedy evaluations to an Optuna ``trial`` if given.

    Returns a :class:`~doors_gym_baselines.metrics.TrainResult` whose ``model`` is the :class:`TorchLearner`.
    """
    return loop.train(TorchLearner, __spec__.name, config, trial)


def load_model(path: str, device: str = "cpu") -> tuple[str, TorchLearner, DQNConfig]:
    """``(arm, learner, config)`` of a file of :func:`save_model`, read with ``weights_only=True``."""
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
    except Exception as error:  # noqa: BLE001 - torch raises several types for damaged or foreign archives
        raise ValueError(f"{path!r} is not a readable torch DQN model ({first_line(error)})") from None
    if not isinstance(saved, dict) or saved.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path!r} is not a torch DQN model written by doors-gym (no {MODEL_FORMAT!r} format tag)")
    config = DQNConfig.from_dict(saved["config"])
    network = QNetwork(config.params.num_cells, config.hyperparameters.hidden_sizes)
    try:
        network.load_state_dict(saved["state_dict"])
    except (KeyError, RuntimeError) as error:
        raise ValueError(f"{path!r} holds weights that do not fit its own config ({first_line(error)})") from None
    learner = TorchLearner(config.replace(device=device), network.eval())
    return saved["arm"], learner, config


def main(argv: list[str] | None = None) -> int:
    """``python -m baselines.dqn_torch``: ``doors-gym train`` for this file's arms."""
    from .cli import train_main

    return train_main(__spec__.name, argv)


if __name__ == "__main__":
    raise SystemExit(main())
