"""DQN in PyTorch with ``torch.compile`` (LeanRL's ``dqn_torchcompile.py`` as the reference).

The arm ``torch-compile``: ``doors-gym train --arm torch-compile``. The learner of ``dqn_torch.py``
(same network, loss, optimizer and host loop, so the same algorithm and metrics) with LeanRL's opt-in
lines: the whole gradient step (forward, backward and the optimizer's step) compiled as one graph, and
the greedy policy compiled with ``fullgraph=True``. Compilation happens before training, on stand-in
batches of the real shapes, and is timed apart (the ``compile`` phase); the learner is then put back as
it was. Threads follow the eager arm's policy (:func:`doors_gym_baselines.runtime.torch_threads`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import torch

from .. import harness
from ..api import Arm
from ..config import ALGORITHMS, DQNConfig
from ..harness import Reporter, save_model
from ..harness.evaluation import evaluation_episodes
from ..harness.metrics import TrainResult
from ..runtime import torch_threads
from .cells import CELLS_DTYPE, HIDDEN, input_width
from .dqn_torch import QNetwork, TorchLearner
from .dqn_torch import load_model, native_model  # noqa: F401  (the torch model format and module)

COMPILE_MODE = "default"
"""torch.compile's mode for both functions (``benchmarks/update_cost.py`` compares the modes on a CPU)."""
IGNORED_PROFILER_NOTE = "Profiler record function"
"""The start of dynamo's note that it skips the optimizer's ``record_function`` context (profiler labels, which
this arm never records): nothing for a user to act on, so it is kept off the terminal."""


class _WithoutProfilerNote(logging.Filter):
    """Drops dynamo's :data:`IGNORED_PROFILER_NOTE` and lets every other record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(IGNORED_PROFILER_NOTE)


logging.getLogger("torch._dynamo.variables.ctx_manager").addFilter(_WithoutProfilerNote())


class CompiledTorchLearner(TorchLearner):
    """:class:`~doors_gym_baselines.learners.dqn_torch.TorchLearner` with a compiled gradient step and greedy policy."""

    def __init__(self, config: DQNConfig, network: QNetwork | None = None) -> None:
        super().__init__(config, network)
        self.facts["compile_mode"] = COMPILE_MODE
        # Each learner compiles afresh: a process that trains learner after learner (a tuning study) would
        # otherwise add every new learner's guards to the same code objects until dynamo's recompile limit
        # fails the fullgraph policy. The on-disk inductor cache still serves graphs it has compiled before.
        torch._dynamo.reset()
        # Static shapes: the loop uses three (num_envs and the evaluation's episodes for the policy, the update's
        # batch; PQN also values a whole rollout), all compiled below; a shape of its own per program is what a
        # compiler does best with. DQN compiles its TD step, PQN its regression and the rollout's values.
        self.pqn = config.hyperparameters.algorithm == "pqn"
        if self.pqn:
            self._regress = torch.compile(self.regression_step, dynamic=False, mode=COMPILE_MODE)
            self._best = torch.compile(self.best_values, fullgraph=True, dynamic=False, mode=COMPILE_MODE)
        else:
            self._step = torch.compile(self.gradient_step, dynamic=False, mode=COMPILE_MODE)
        self._greedy = torch.compile(self.greedy_actions, fullgraph=True, dynamic=False, mode=COMPILE_MODE)
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
        width = input_width(config.params)
        for size in sorted({hyper.num_envs, evaluation_episodes(config.params)}):
            with torch.inference_mode():
                self._greedy(stand_in_cells(size, num_cells, self.device, width))
        batch_size = config.update_batch_size
        cells, next_cells = (stand_in_cells(batch_size, num_cells, self.device, width) for _ in "ab")
        rewards, terminated = torch.zeros(batch_size, device=self.device), torch.zeros(batch_size, device=self.device)
        actions = torch.zeros(batch_size, dtype=torch.int64, device=self.device)
        if self.pqn:  # the rollout's next states are valued in one batch (harness/pqn.py)
            with torch.inference_mode():
                self._best(stand_in_cells(hyper.rollout_steps * hyper.num_envs, num_cells, self.device, width))
            step, batch = self._regress, (cells, actions, rewards)
        else:  # a multi-step batch brings its discounts (one more tensor, as the replay buffer samples it)
            discounts = (torch.ones(batch_size, device=self.device),) if hyper.n_step > 1 else ()
            step, batch = self._step, (cells, actions, rewards, next_cells, terminated, *discounts)
        for _ in range(2):  # the optimizer's first step initialises its state: a second graph
            self.optimizer.zero_grad()
            step(*batch)
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


def stand_in_cells(size: int, num_cells: int, device: torch.device, width: int = 2) -> torch.Tensor:
    """``(size, width)`` cells as the buffer stores them (an agent, a goal or none, door columns 0), for compiling."""
    cells = torch.zeros((size, width), dtype=torch_dtype(CELLS_DTYPE), device=device)
    cells[:, 1] = num_cells - 1
    cells[::2, 1] = HIDDEN  # both branches of the goal's row
    return cells


def torch_dtype(dtype: Any) -> torch.dtype:
    """The torch dtype of a NumPy dtype."""
    return getattr(torch, np.dtype(dtype).name)


def train(config: DQNConfig, trial: Reporter | None = None, arm: Arm | None = None) -> TrainResult:
    """Trains one seed as ``arm`` (default: this file's :data:`ARM`); reports greedy evaluations to ``trial``
    if given (see :class:`~doors_gym_baselines.harness.Reporter`).

    Returns a :class:`~doors_gym_baselines.harness.metrics.TrainResult` whose ``model`` is the
    :class:`CompiledTorchLearner`.
    """
    with torch_threads(config.run.torch_threads, config.run.device):
        return harness.train(arm or ARM, CompiledTorchLearner, config, trial)


ARM = Arm(
    "torch-compile", "torch", "Doors-v0", "torch.compile x Doors-v0 (NumPy)", train, save_model, algorithms=ALGORITHMS
)
"""This file's arm."""
