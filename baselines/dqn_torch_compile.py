"""DQN in PyTorch with ``torch.compile`` on the gradient step and on greedy action selection (LeanRL's manner).

The arm ``torch-compile``: ``doors-gym train --arm torch-compile``. The same
learner as ``dqn_torch.py`` (same network, loss, optimizer and host loop, so the
same algorithm and metrics), with its two hot functions compiled as LeanRL's
``dqn_torchcompile.py`` does: the whole update (forward, backward and the
optimizer's step) in one graph, and the greedy policy with ``fullgraph=True``.
Compilation happens before training, on a copy of the batch shapes, and is
timed apart (the ``compile`` phase); the learner is then put back as it was.

Threads: on a CPU the learner uses one intra-op thread per core this process
may run on (measured on the 2-core development machine, batch 128: 2 threads
beat 1 for eager and compiled updates alike, 1.38 against 1.56 ms eager and
1.26 against 1.43 ms compiled; ``benchmarks/dqn_solve.py`` runs the eager arm
with one thread beside the others). torch has one such setting per process,
so it stays set after training. On a GPU the learner leaves it alone. The
choice is recorded in the run's facts.
"""

from __future__ import annotations

import time
from typing import Any

import torch

import numpy as np

from doors_gym.core import AGENT, GOAL, OBS_DTYPE

from . import loop
from .config import DQNConfig
from .devices import available_cores
from .dqn_torch import QNetwork, TorchLearner
from .dqn_torch import load_model  # noqa: F401  (the torch model format)
from .loop import save_model  # noqa: F401  (save_model: this file's arm interface)
from .metrics import TrainResult
from .replay import CELL_DTYPE


class CompiledTorchLearner(TorchLearner):
    """:class:`~doors_gym_baselines.dqn_torch.TorchLearner` with a compiled gradient step and greedy policy."""

    def __init__(self, config: DQNConfig, network: QNetwork | None = None) -> None:
        super().__init__(config, network)
        if self.device.type == "cpu":
            torch.set_num_threads(available_cores())
        self.facts = {"torch_threads": torch.get_num_threads(), "torch_version": torch.__version__}
        # Each learner compiles afresh. A process that trains learner after learner (a tuning study) would
        # otherwise add every new learner's guards to the same code objects until dynamo's recompile limit
        # fails the fullgraph policy (found by the 40-trial study). The on-disk inductor cache still serves
        # graphs it has compiled before.
        torch._dynamo.reset()
        # Static shapes: the loop uses three (num_envs and W * W observations, batch_size transitions), all
        # compiled below. With dynamic shapes, torch's duck sizing took a 225-row batch and the 225 cells for
        # one size, and a kernel later indexed past the 450 plane rows.
        self._step = torch.compile(self.gradient_step, dynamic=False)
        self._greedy = torch.compile(self.greedy_actions, fullgraph=True, dynamic=False)
        self.compile_seconds = self._compile(config)

    def _compile(self, config: DQNConfig) -> float:
        """Runs each compiled function on stand-in batches, then puts the learner back; returns the seconds.

        The stand-ins have the real batches' shapes, dtypes and aliasing (distinct observation tensors), and
        the learner is put back in place (parameters copied into the same tensors, the optimizer's state
        zeroed as a fresh one starts): a replaced tensor or an emptied state would fail the compiled graphs'
        guards and recompile them inside the first updates.
        """
        start = time.perf_counter()
        saved = [tensor.detach().clone() for tensor in self._parameters_in_place()]
        hyper, num_cells = config.hyperparameters, config.params.num_cells
        for size in sorted({hyper.num_envs, config.params.width**2}):
            with torch.no_grad():
                self._greedy(stand_in_observations(size, num_cells, torch_dtype(OBS_DTYPE), self.device))
        batch_size = hyper.batch_size
        obs, next_obs = (
            stand_in_observations(batch_size, num_cells, torch_dtype(CELL_DTYPE), self.device) for _ in "ab"
        )
        rewards, terminated = torch.zeros(batch_size, device=self.device), torch.zeros(batch_size, device=self.device)
        actions = torch.zeros(batch_size, dtype=torch.int64, device=self.device)
        for _ in range(2):  # the optimizer's first step initialises its state: a second graph
            self.optimizer.zero_grad()
            self._step(obs, actions, rewards, next_obs, terminated)
        self.optimizer.zero_grad()
        with torch.no_grad():
            for tensor, value in zip(self._parameters_in_place(), saved):
                tensor.copy_(value)
            for state in self.optimizer.state.values():
                for value in state.values():
                    if isinstance(value, torch.Tensor):
                        value.zero_()  # step counts and moments, as before the first step
        return time.perf_counter() - start

    def _parameters_in_place(self) -> list[torch.Tensor]:
        """The online and target networks' parameters and buffers (what the warm-up changes)."""
        return [*self.network.state_dict().values(), *self.target_network.state_dict().values()]


def torch_dtype(dtype: Any) -> torch.dtype:
    """The torch dtype of a NumPy dtype (the envs' observations, the replay buffer's cells)."""
    return getattr(torch, np.dtype(dtype).name)


def stand_in_observations(size: int, num_cells: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``(size, num_cells)`` grids with an agent and a goal, for compiling on the real shapes and dtypes."""
    obs = torch.zeros((size, num_cells), dtype=dtype, device=device)
    obs[:, 0] = AGENT
    obs[:, num_cells - 1] = GOAL
    return obs


def train(config: DQNConfig, trial: Any = None) -> TrainResult:
    """Trains one seed; reports greedy evaluations to an Optuna ``trial`` if given.

    Returns a :class:`~doors_gym_baselines.metrics.TrainResult` whose ``model`` is the
    :class:`CompiledTorchLearner`.
    """
    return loop.train(CompiledTorchLearner, __spec__.name, config, trial)


def main(argv: list[str] | None = None) -> int:
    """``python -m baselines.dqn_torch_compile``: ``doors-gym train`` for this file's arm."""
    from .cli import train_main

    return train_main(__spec__.name, argv)


if __name__ == "__main__":
    raise SystemExit(main())
