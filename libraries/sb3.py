"""The ``sb3-dqn`` arm: Stable-Baselines3's DQN (torch) on ``Doors-v0``, run by doors-gym's protocol
(:mod:`doors_gym_libraries.stable`). ``pip install "doors-gym[sb3]"``.

Its hyperparameters are SB3's own settings (:class:`SB3Hyperparameters`, SB3's defaults); ``lr_end_fraction``
gives SB3 a linear learning-rate schedule (RL Zoo's ``lin_``). The network sees what SB3 makes of the grid
(its one-hot ``MultiDiscrete`` preprocessing: ``H * W * 4`` features).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from doors_gym_baselines.api import LINEAR, ONE_MINUS, POWER_OF_TWO, Config, Range, field

from . import stable
from .common import (
    OBSERVATIONS,
    LibraryArm,
    check_choice,
    check_learning_rate,
    check_positive,
    check_sizes,
    check_unit,
    presets,
)

LIBRARY = "stable_baselines3"
JITTED = False
"""Whether the library compiles its functions at their first call (timed as ``compile``)."""
INTEGERS = ("n_envs", "buffer_size", "batch_size", "train_freq", "gradient_steps", "target_update_interval")
UNITS = ("gamma", "exploration_fraction", "exploration_initial_eps", "exploration_final_eps", "lr_end_fraction")


@dataclasses.dataclass(frozen=True)
class SB3Hyperparameters:
    """Stable-Baselines3 DQN's settings, SB3's defaults (``stable_baselines3.DQN``), with the vector env's size."""

    learning_rate: float = field(1e-4, "Adam's step size")
    lr_end_fraction: float = field(1.0, "learning rate at the end, as a fraction (SB3 schedule; 1: constant)")
    buffer_size: int = field(1_000_000, "replay buffer capacity, in transitions")
    learning_starts: int = field(100, "env steps before the first update")
    batch_size: int = field(32, "transitions per gradient step")
    tau: float = field(1.0, "target <- tau * online + (1 - tau) * target at each target update")
    gamma: float = field(0.99, "discount factor")
    train_freq: int = field(4, "vector-env steps between trainings")
    gradient_steps: int = field(1, "gradient steps per training")
    target_update_interval: int = field(10_000, "env steps between target updates")
    exploration_fraction: float = field(0.1, "share of the budget over which epsilon decays")
    exploration_initial_eps: float = field(1.0, "epsilon at the start")
    exploration_final_eps: float = field(0.05, "epsilon after the decay")
    max_grad_norm: float = field(10.0, "clip the gradients' global norm to this")
    net_arch: tuple[int, ...] = field((64, 64), "widths of the Q-network's hidden layers")
    n_envs: int = field(1, "envs of make_vec_env")
    observation: str = field("grid", "the env's observation (SB3 one-hot encodes the grid itself), or cells: the agent's and the goal's planes, as this package's arms read them")

    def __post_init__(self) -> None:
        check_positive(self, *INTEGERS)
        check_positive(self, "learning_starts", minimum=0)
        check_unit(self, *UNITS)
        check_unit(self, "tau", low_open=True)
        check_learning_rate(self)
        check_sizes(self, "net_arch")
        check_choice(self, "observation", OBSERVATIONS)
        if isinstance(self.max_grad_norm, bool) or not (
            isinstance(self.max_grad_norm, (int, float)) and self.max_grad_norm > 0
        ):
            raise ValueError(f"max_grad_norm={self.max_grad_norm!r} is out of range: expected a number > 0")


def library_settings(config: Config) -> dict[str, Any]:
    """``stable_baselines3.DQN``'s keywords for ``config``'s hyperparameters."""
    hyper = config.hyperparameters
    start, end = hyper.learning_rate, hyper.learning_rate * hyper.lr_end_fraction
    settings = {
        name: getattr(hyper, name) for name in (*INTEGERS[1:], *UNITS[:4], "learning_starts", "tau", "max_grad_norm")
    }
    return {
        **settings,
        "learning_rate": start if end == start else (lambda remaining: end + (start - end) * remaining),
        "policy_kwargs": {"net_arch": list(hyper.net_arch)},
    }


def q_values(agent: Any, inputs: np.ndarray) -> np.ndarray:
    """The SB3 agent's Q-values of network inputs (its own preprocessing applied)."""
    import torch

    with torch.no_grad():
        tensor, _ = agent.policy.obs_to_tensor(inputs)
        return agent.policy.q_net(tensor).cpu().numpy()


def train(config: Config, trial: Any = None, arm: Any = None) -> Any:
    """Trains one seed (see :func:`doors_gym_libraries.stable.train`)."""
    return stable.train(config, trial, arm or ARM)


def save_model(result: Any, path: str, seed_index: int = 0) -> None:
    """Writes SB3's own zip (``DQN.save``), with the arm and config added."""
    stable.save_model(result, path, seed_index)


def load_model(path: str) -> tuple[str, Any, Config]:
    """``(arm name, model, config)`` of a file :func:`save_model` wrote (read by ``DQN.load``)."""
    return stable.load_with(ARM, path)


SEARCH_SPACE = (
    Range("learning_rate", 1e-4, 1e-2, log=True),
    Range("one_minus_gamma", 0.05, 0.2, log=True, hyperparameter="gamma", scale=ONE_MINUS),
    Range("log2_batch_size", 5, 8, integer=True, hyperparameter="batch_size", scale=POWER_OF_TWO),
    Range("train_freq", 1, 4, integer=True),
    Range("target_update_interval", 200, 5000, log=True, integer=True),
    Range("learning_starts", 500, 10_000, log=True, integer=True),
    Range("exploration_fraction", 0.05, 0.5),
    Range("lr_end_fraction", 0.0, 1.0, scale=LINEAR),
)
"""Its tuning coordinates (RL Zoo's DQN sampler's, narrowed to this task; the network stays the preset's). As in RL
Zoo, whose sampler takes ``n_envs`` as given, the number of envs is the start preset's (16), not searched: a trial
of one env makes 16 times the updates of one of 16 at the same train frequency (200k of them: about 20 minutes
at the 5.9 ms per update SB3 takes here, against 1.2 minutes for 16 envs)."""

ARM = LibraryArm(
    "sb3-dqn",
    "torch",
    stable.ENV_ID,
    "SB3 DQN (torch) + Doors-v0",
    train,
    save_model,
    loader=load_model,
    hyperparameters=SB3Hyperparameters,
    presets=presets("sb3-dqn", ("defaults", "zoo", "shared", "shared-onehot", "tuned")),
    search_space=SEARCH_SPACE,
    requirements=("stable-baselines3", "torch"),
)
"""The arm's record (entry point ``sb3-dqn`` of the group ``doors_gym.arms``)."""
