"""DQN in PyTorch against ``Doors-v0`` or ``DoorsJax-v0`` (CleanRL's ``dqn.py`` as the reference).

The arms ``torch-numpy`` and ``torch-jax``: ``doors-gym train --arm torch-numpy``. In CleanRL's order:
the network (:class:`QNetwork`), the optimizer, the update (:meth:`TorchLearner.update`: TD loss,
gradient step, target update), then ``train``, which hands the learner to the host loop shared by every
host-loop arm (:func:`doors_gym_baselines.harness.loop.train`: act, step, store, sample, update,
evaluate). ``dqn_flax.py`` follows the same order, section by section; ``dqn_torch_compile.py`` is this
learner with its step and policy compiled.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from torch import nn

from doors_gym.core import AGENT, GOAL, NUM_ACTIONS, WALL, DoorsParams

from .. import harness
from ..api import Arm, StudyFigures, arm_for_env
from ..config import ALGORITHMS, LAYER_NORM_EPSILON, DQNConfig, first_line, schedules
from ..harness import Batch, Reporter, save_model
from ..harness.metrics import TrainResult
from ..runtime import torch_threads
from .cells import HIDDEN, RelativeRows, encode, input_layout

MODEL_FORMAT = "doors-gym-dqn"


class QNetwork(nn.Module):
    """MLP from the agent's and the goal's cells to one Q-value per action.

    The first layer is linear over the one-hot agent and goal planes (``2 * H * W`` inputs, see
    :mod:`~doors_gym_baselines.learners.cells`), initialised as torch initialises ``nn.Linear``. A one-hot
    plane selects one row of its weight, so the layer keeps its weight as contiguous rows, one per
    plane cell (an embedding table), and adds the agent's row, the goal's row (none once the agent
    stands on the goal) and the bias. Where the input carries door columns (random doors), the layer has
    ``num_inputs`` rows and also adds, per door, the row ``door_offsets[k] + column``. With ``relative``
    (:class:`~doors_gym_baselines.learners.cells.RelativeRows`, the hyperparameter ``relative_inputs``) it also adds the rows
    of the agent's row and column and of the goal's and each door's column relative to the agent's (``grid_width``
    columns); without ``cell_planes`` (the hyperparameter) it adds those alone, not the agent's and the goal's cell
    rows. With ``layer_norm`` every hidden layer's sum goes through a LayerNorm of its own before its ReLU.
    """

    def __init__(
        self,
        num_cells: int,
        hidden_sizes: tuple[int, ...],
        num_actions: int = NUM_ACTIONS,
        door_offsets: tuple[int, ...] = (),
        num_inputs: int | None = None,
        relative: RelativeRows | None = None,
        grid_width: int = 0,
        dueling: bool = False,
        layer_norm: bool = False,
        cell_planes: bool = True,
    ) -> None:
        super().__init__()
        self.num_cells = num_cells
        self.cell_planes = cell_planes
        self.has_doors = bool(door_offsets)
        self.register_buffer("door_offsets", torch.tensor(door_offsets, dtype=torch.int64), persistent=False)
        self.relative = relative
        self.grid_width = grid_width
        doors = relative.doors if relative is not None else ()
        self.register_buffer("relative_doors", torch.tensor(doors, dtype=torch.int64), persistent=False)
        first = nn.Linear(num_inputs or 2 * num_cells, hidden_sizes[0])
        self.planes_weight = nn.Parameter(first.weight.detach().t().contiguous())  # (2 * H * W, width) rows
        self.planes_bias = nn.Parameter(first.bias.detach().clone())
        normalized = lambda width: [nn.LayerNorm(width, eps=LAYER_NORM_EPSILON)] if layer_norm else []  # noqa: E731
        layers: list[nn.Module] = [*normalized(hidden_sizes[0]), nn.ReLU()]
        width = hidden_sizes[0]
        for hidden in hidden_sizes[1:]:
            layers += [nn.Linear(width, hidden), *normalized(hidden), nn.ReLU()]
            width = hidden
        self.dueling = dueling
        if dueling:  # a state value and the actions' advantages from the last hidden layer
            self.value, self.advantage = nn.Linear(width, 1), nn.Linear(width, num_actions)
        else:
            layers.append(nn.Linear(width, num_actions))
        self.network = nn.Sequential(*layers)

    def forward(self, cells: torch.Tensor) -> torch.Tensor:
        """``(batch, 2 + doors)`` integer cells (agent, goal or -1, door columns) -> ``(batch, 5)`` Q-values."""
        agent, goal = cells[:, 0].long(), cells[:, 1].long()
        if self.relative is not None:
            indices, weights = self.relative_rows(cells, agent, goal)
            features = nn.functional.embedding_bag(indices, self.planes_weight, per_sample_weights=weights, mode="sum")
            return self.head(features + self.planes_bias)
        rows = self.planes_weight
        goal_rows = rows[self.num_cells + goal.clamp(min=0)] * (goal >= 0).unsqueeze(1)
        if self.has_doors:
            doors = rows[cells[:, 2:].long() + self.door_offsets].sum(dim=1)
            return self.head(rows[agent] + goal_rows + doors + self.planes_bias)
        return self.head(rows[agent] + goal_rows + self.planes_bias)

    def head(self, features: torch.Tensor) -> torch.Tensor:
        """The first layer's sum -> Q-values: the hidden layers, then the output layer or the dueling heads."""
        hidden = self.network(features)
        if not self.dueling:
            return hidden
        advantage = self.advantage(hidden)
        return self.value(hidden) + advantage - advantage.mean(dim=-1, keepdim=True)


    def relative_rows(
        self, cells: torch.Tensor, agent: torch.Tensor, goal: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The first layer's rows with the relative inputs (:class:`~doors_gym_baselines.learners.cells.RelativeRows`) and
        their weights, ``(batch, 5 + 2 * doors)`` each: the agent's and the goal's cells, the agent's row and column,
        the goal's column relative to the agent's, then the door columns and each door's column relative to the
        agent's; the goal's two rows weigh 0 once the agent stands on the goal.

        One ``embedding_bag`` sums them: its backward writes one gradient of the layer's weight, where indexing it
        once per input wrote a dense one per input and added them (the update at ``31x31`` took twice as long).
        """
        relative, width = self.relative, self.grid_width
        column = agent % width
        visible = goal >= 0
        goal = goal.clamp(min=0)
        indices = [
            agent,
            self.num_cells + goal,
            relative.agent_row + agent // width,
            relative.agent_col + column,
            relative.goal + goal % width - column,
        ]
        one = torch.ones_like(agent, dtype=self.planes_weight.dtype)
        shown = visible.to(one.dtype)
        weights = [one, shown, one, one, shown]
        if not self.cell_planes:  # the relative rows alone
            indices, weights = indices[2:], weights[2:]
        if self.has_doors:
            doors = cells[:, 2:].long()
            relative_doors = doors - column.unsqueeze(1) + self.relative_doors
            indices += [*(doors + self.door_offsets).unbind(1), *relative_doors.unbind(1)]
            weights += [one] * (2 * doors.shape[1])
        return torch.stack(indices, dim=1), torch.stack(weights, dim=1)


class GridQNetwork(nn.Module):
    """A :class:`QNetwork` over grid observations, for the model's native torch flavour (what its users hand it).

    It finds the cells as :func:`doors_gym_baselines.learners.cells.encode` does, in torch ops that ``torch.export``
    traces; training never uses it (the cells are found once per observation there).
    """

    def __init__(self, network: QNetwork, layout: DoorsParams | None = None) -> None:
        super().__init__()
        self.network = network
        self.layout = layout if network.has_doors else None

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``(batch, H * W)`` integer grids -> ``(batch, 5)`` Q-values."""
        is_goal = obs == GOAL
        agent = (obs == AGENT).to(torch.uint8).argmax(dim=1)
        goal = torch.where(is_goal.any(dim=1), is_goal.to(torch.uint8).argmax(dim=1), HIDDEN)
        cells = torch.stack([agent, goal], dim=1)
        if self.layout is None:
            return self.network(cells)
        return self.network(torch.cat([cells, self.door_columns(obs)], dim=1))

    def door_columns(self, obs: torch.Tensor) -> torch.Tensor:
        """``(batch, n_walls * n_doors)`` open columns of each wall row, ascending (as ``cells.door_columns``)."""
        layout = self.layout
        grid = obs.reshape(obs.shape[0], layout.height, layout.width)[:, list(layout.wall_rows), :]
        columns = torch.arange(layout.width, device=obs.device)
        ranked = torch.where(grid != WALL, columns, layout.width + columns).sort(dim=-1).values
        return ranked[..., : layout.n_doors].reshape(obs.shape[0], -1)


def make_network(config: DQNConfig) -> QNetwork:
    """The config's Q-network: over the two cells, and the door columns where the doors are random (with the
    relative inputs where ``relative_inputs``)."""
    params, hyper = config.params, config.hyperparameters
    relative, planes = hyper.relative_inputs, hyper.cell_planes
    return QNetwork(
        params.num_cells,
        hyper.hidden_sizes,
        **input_layout(params, relative, planes)._asdict(),
        dueling=hyper.dueling,
        layer_norm=hyper.layer_norm,
        cell_planes=planes,
    )


def make_optimizer(config: DQNConfig, parameters: Any, device: torch.device) -> torch.optim.Optimizer:
    """Adam or SGD at the config's learning rate, on torch's fused path (one kernel for every parameter).

    Fused is torch's fastest optimizer path (``benchmarks/update_cost.py`` compares it with the others).
    A decaying rate is a 0-d float32 tensor on ``device`` that the schedule changes in place, so a
    compiled step reads it instead of recompiling at every new value.
    """
    hyper = config.hyperparameters
    optimizer = torch.optim.Adam if hyper.optimizer == "adam" else torch.optim.SGD
    decays = hyper.lr_end_fraction < 1.0
    rate = torch.tensor(hyper.learning_rate, device=device) if decays else hyper.learning_rate
    return optimizer(parameters, lr=rate, fused=True)


def make_scheduler(config: DQNConfig, optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler | None:
    """The learning rate's linear decay to ``lr_end_fraction`` (None when constant) over ``config.lr_decay_updates``
    updates (the run's last one by default): stepped after every update, update ``k`` (from 0) runs at
    :func:`~doors_gym_baselines.config.schedules.learning_rate` of ``k``, the JAX arms' rate.
    """
    hyper = config.hyperparameters
    if hyper.lr_end_fraction >= 1.0:
        return None
    span, end = config.lr_decay_updates, hyper.lr_end_fraction
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: schedules.learning_rate(k, 1.0, end, span))


class TorchLearner:
    """Online and target ``QNetwork``, optimizer and TD loss: the torch side of the host loop."""

    def __init__(self, config: DQNConfig, network: QNetwork | None = None) -> None:
        torch.manual_seed(config.run.seed)
        self.device = torch.device(config.run.device)
        hyper = config.hyperparameters
        self.gamma = hyper.gamma
        self.layout = config.params  # where the doors are random, encoding reads them off the grid
        self.network = (network or make_network(config)).to(self.device)
        self.target_network = make_network(config).to(self.device)
        self.target_network.load_state_dict(self.network.state_dict())
        self.optimizer = make_optimizer(config, self.network.parameters(), self.device)
        self.scheduler = make_scheduler(config, self.optimizer)
        self.loss_function = nn.SmoothL1Loss() if hyper.loss == "huber" else nn.MSELoss()
        self.double_dqn, self.tau, self.max_grad_norm = hyper.double_dqn, hyper.tau, hyper.max_grad_norm
        self.advantage_learning = hyper.advantage_learning
        self.target_update = hyper.target_update
        self.updates = 0
        self.compile_seconds = 0.0
        self.facts: dict[str, Any] = {
            "torch_threads": torch.get_num_threads(),
            "torch_version": torch.__version__,
            "optimizer_path": "fused",
        }
        self._greedy = self.greedy_actions
        self._best = self.best_values
        self._step = self.gradient_step
        self._regress = self.regression_step

    def greedy(self, cells: np.ndarray) -> np.ndarray:
        """Greedy actions for a batch of cells."""
        with torch.inference_mode():
            return self._greedy(torch.as_tensor(cells, device=self.device)).cpu().numpy()

    def max_values(self, cells: np.ndarray) -> np.ndarray:
        """The best action's value of each of a batch of cells (PQN's bootstrap)."""
        with torch.inference_mode():
            return self._best(torch.as_tensor(cells, device=self.device)).cpu().numpy()

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions for a batch of grid observations."""
        return self.greedy(encode(obs, self.layout))

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """``(batch, 5)`` Q-values of a batch of grid observations."""
        with torch.inference_mode():
            return self.network(torch.as_tensor(encode(obs, self.layout), device=self.device)).cpu().numpy()

    def update(self, batch: Batch) -> torch.Tensor:
        """One gradient step, then the target's update when one is due; returns the loss, not waited for.

        Bootstraps through truncation (only termination cuts the return).
        """
        self.optimizer.zero_grad()  # outside the step: torch.compile does not trace it
        loss = self._step(*(torch.as_tensor(array, device=self.device) for array in batch))
        if self.scheduler is not None:
            self.scheduler.step()
        self.updates += 1
        if self.updates % self.target_update == 0:
            self.sync_target()
        return loss

    def regress(self, batch: Batch) -> torch.Tensor:
        """One gradient step of ``Q(s, a)`` on the returns of a PQN minibatch ``(cells, actions, returns)``, at the
        scheduled rate (no target network, no target update); returns the loss, not waited for."""
        self.optimizer.zero_grad()
        loss = self._regress(*(torch.as_tensor(array, device=self.device) for array in batch))
        if self.scheduler is not None:
            self.scheduler.step()
        self.updates += 1
        return loss

    def read_losses(self, losses: list[torch.Tensor]) -> np.ndarray:
        """The values of :meth:`update`'s losses (one copy to the host for all of them)."""
        return torch.stack(losses).double().cpu().numpy()

    def greedy_actions(self, cells: torch.Tensor) -> torch.Tensor:
        """``(batch,)`` greedy actions of ``(batch, 2)`` cells."""
        return self.network(cells).argmax(dim=1)

    def best_values(self, cells: torch.Tensor) -> torch.Tensor:
        """``(batch,)`` values of the best action of ``(batch, width)`` cells."""
        return self.network(cells).max(dim=1).values

    def td_targets(
        self,
        cells: torch.Tensor,
        actions: torch.Tensor,
        rewards: torch.Tensor,
        next_cells: torch.Tensor,
        terminated: torch.Tensor,
        discounts: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The TD targets of a batch, as :func:`doors_gym_baselines.learners.dqn_flax.make_loss` computes them for the JAX
        arms: Double DQN where ``double_dqn``, bootstrapped through truncation (only termination cuts the return),
        a multi-step batch's ``discounts`` (``gamma ** steps taken``) after its summed rewards (a one-step batch
        discounts by ``gamma``), less advantage learning's share of the taken action's shortfall from the best."""
        next_q = self.target_network(next_cells)
        if self.double_dqn:  # the online network picks the next action, the target network values it
            next_actions = self.network(next_cells).argmax(dim=1, keepdim=True)
            next_values = next_q.gather(1, next_actions).squeeze(1)
        else:
            next_values = next_q.max(dim=1).values
        discount = self.gamma if discounts is None else discounts
        targets = rewards + discount * next_values * (1.0 - terminated)
        if self.advantage_learning > 0:  # the taken action's shortfall from the best, under the target
            q = self.target_network(cells)
            shortfall = q.max(dim=1).values - q.gather(1, actions[:, None]).squeeze(1)
            targets = targets - self.advantage_learning * shortfall
        return targets

    def gradient_step(self, cells: torch.Tensor, actions: torch.Tensor, *batch: torch.Tensor) -> torch.Tensor:
        """The TD loss of a batch (``(cells, actions, rewards, next_cells, terminated[, discounts])``, see
        :meth:`td_targets`), its gradient and the optimizer's step (gradients zeroed before); returns the loss."""
        with torch.no_grad():
            targets = self.td_targets(cells, actions, *batch)
        values = self.network(cells).gather(1, actions[:, None]).squeeze(1)
        return self.descend(self.loss_function(values, targets))

    def regression_step(self, cells: torch.Tensor, actions: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
        """PQN's loss of a minibatch (``Q(s, a)`` against its return), its gradient and the optimizer's step
        (gradients zeroed before); returns the loss."""
        values = self.network(cells).gather(1, actions[:, None]).squeeze(1)
        return self.descend(self.loss_function(values, returns))

    def descend(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss``'s gradient, clipped to ``max_grad_norm``, and the optimizer's step; returns the loss, detached."""
        loss.backward()
        if self.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.network.parameters(), self.max_grad_norm, foreach=True)
        self.optimizer.step()
        return loss.detach()

    def sync_target(self) -> None:
        """Updates the target: a copy of the online network, or ``tau`` of the way towards it (Polyak)."""
        with torch.no_grad():
            online, target = list(self.network.parameters()), list(self.target_network.parameters())
            if self.tau >= 1.0:
                torch._foreach_copy_(target, online)
            else:
                torch._foreach_lerp_(target, online, self.tau)

    def save(self, path: str, arm: str, config: DQNConfig) -> None:
        """The ``state_dict`` and the config (plain types) with ``torch.save``: it loads with ``weights_only``."""
        payload = {"format": MODEL_FORMAT, "arm": arm, "config": config.to_dict()}
        torch.save({**payload, "state_dict": self.network.state_dict()}, path)


def train(config: DQNConfig, trial: Reporter | None = None, arm: Arm | None = None) -> TrainResult:
    """Trains one seed as ``arm`` (default: this file's arm for the config's env id); reports greedy
    evaluations to ``trial`` if given (see :class:`~doors_gym_baselines.harness.Reporter`).

    Returns a :class:`~doors_gym_baselines.harness.metrics.TrainResult` whose ``model`` is the :class:`TorchLearner`.
    """
    arm = arm or arm_for_env(ARMS, config.run.env_id)
    with torch_threads(config.run.torch_threads, config.run.device):
        return harness.train(arm, TorchLearner, config, trial)


def load_model(path: str, device: str = "cpu") -> tuple[str, TorchLearner, DQNConfig]:
    """``(arm, learner, config)`` of a file of :func:`save_model`, read with ``weights_only=True``.

    Raises:
        ValueError: the file is not a torch model of doors-gym, or its weights do not fit its own config.
    """
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
    except Exception as error:  # noqa: BLE001 - torch raises several types for damaged or foreign archives
        raise ValueError(f"{path!r} is not a readable torch DQN model ({first_line(error)})") from None
    if not isinstance(saved, dict) or saved.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path!r} is not a torch DQN model written by doors-gym (no {MODEL_FORMAT!r} format tag)")
    config = DQNConfig.from_dict(saved["config"])
    network = make_network(config)
    try:
        network.load_state_dict(saved["state_dict"])
    except (KeyError, RuntimeError) as error:
        raise ValueError(f"{path!r} holds weights that do not fit its own config ({first_line(error)})") from None
    learner = TorchLearner(config.replace(device=device), network.eval())
    return saved["arm"], learner, config


TORCH_NUMPY = Arm("torch-numpy", "torch", "Doors-v0", "torch x Doors-v0 (NumPy)", train, save_model,
                  algorithms=ALGORITHMS, study=StudyFigures("PyTorch + Gym (sync envs)", 0.73, 22.5 * 60))
TORCH_JAX = dataclasses.replace(TORCH_NUMPY, name="torch-jax", env_id="DoorsJax-v0", label="torch x DoorsJax-v0",
                                study=None)  # fmt: skip
ARMS = (TORCH_NUMPY, TORCH_JAX)
"""This file's arms: the same learner against the NumPy env and the JAX env."""


def native_model(result: TrainResult, seed_index: int = 0) -> nn.Module:
    """The trained network as a torch module from grids ``(batch, H * W)`` to Q-values (MLflow's torch flavour)."""
    return GridQNetwork(result.model.network, result.config.params)
