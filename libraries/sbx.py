"""The ``sbx-dqn`` arm: SBX's DQN (Stable-Baselines3 in JAX) on ``Doors-v0``, run by doors-gym's protocol
(:mod:`doors_gym_libraries.stable`). ``pip install "doors-gym[sbx]"``.

Its hyperparameters are SBX's own settings (:class:`SBXHyperparameters`, SBX's defaults). SBX's Q-network is
two hidden layers of one width (``net_arch[0]``), its learning rate is constant, its gradients unclipped, and
its ``target_update_interval`` counts vector-env steps (SB3's counts env steps). Its network takes the
observation as it comes: the grid's cell codes by default, the one-hot ``flat`` grid with
``observation: flat``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from doors_gym_baselines.api import ONE_MINUS, POWER_OF_TWO, Config, Range, field

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

LIBRARY = "sbx"
JITTED = True
"""SBX jits its update and action selection at their first call (timed as ``compile``)."""
INTEGERS = ("n_envs", "buffer_size", "batch_size", "train_freq", "gradient_steps", "target_update_interval")
UNITS = ("gamma", "exploration_fraction", "exploration_initial_eps", "exploration_final_eps")


@dataclasses.dataclass(frozen=True)
class SBXHyperparameters:
    """SBX DQN's settings, SBX's defaults (``sbx.DQN``), with the vector env's size."""

    learning_rate: float = field(1e-4, "Adam's step size (constant)")
    buffer_size: int = field(1_000_000, "replay buffer capacity, in transitions")
    learning_starts: int = field(100, "env steps before the first update")
    batch_size: int = field(32, "transitions per gradient step")
    tau: float = field(1.0, "target <- tau * online + (1 - tau) * target at each target update")
    gamma: float = field(0.99, "discount factor")
    train_freq: int = field(4, "vector-env steps between trainings")
    gradient_steps: int = field(1, "gradient steps per training")
    target_update_interval: int = field(1000, "vector-env steps between target updates")
    exploration_fraction: float = field(0.1, "share of the budget over which epsilon decays")
    exploration_initial_eps: float = field(1.0, "epsilon at the start")
    exploration_final_eps: float = field(0.05, "epsilon after the decay")
    net_arch: tuple[int, ...] = field((256, 256), "the Q-network's two hidden layers (one width)")
    n_envs: int = field(1, "envs of make_vec_env")
    observation: str = field("grid", "the env's observation: the grid's cell codes, or its one-hot flat form, or cells: the agent's and the goal's planes, as this package's arms read them")

    def __post_init__(self) -> None:
        check_positive(self, *INTEGERS)
        check_positive(self, "learning_starts", minimum=0)
        check_unit(self, *UNITS)
        check_unit(self, "tau", low_open=True)
        check_learning_rate(self)
        check_sizes(self, "net_arch")
        check_choice(self, "observation", OBSERVATIONS)
        if len(self.net_arch) != 2 or self.net_arch[0] != self.net_arch[1]:
            raise ValueError(
                f"net_arch={self.net_arch!r} is not supported by SBX's DQN: expected two hidden layers of one width"
            )


def library_settings(config: Config) -> dict[str, Any]:
    """``sbx.DQN``'s keywords for ``config``'s hyperparameters."""
    hyper = config.hyperparameters
    names = (*INTEGERS[1:], *UNITS, "learning_rate", "learning_starts", "tau")
    return {**{name: getattr(hyper, name) for name in names}, "policy_kwargs": {"net_arch": list(hyper.net_arch)}}


def q_values(agent: Any, inputs: np.ndarray) -> np.ndarray:
    """The SBX agent's Q-values of network inputs."""
    policy = agent.policy
    return np.asarray(policy.qf.apply(policy.qf_state.params, inputs))


def train(config: Config, trial: Any = None, arm: Any = None) -> Any:
    """Trains one seed (see :func:`doors_gym_libraries.stable.train`)."""
    return stable.train(config, trial, arm or ARM)


def save_model(result: Any, path: str, seed_index: int = 0) -> None:
    """Writes SBX's own zip (``DQN.save``), with the arm and config added."""
    stable.save_model(result, path, seed_index)


def load_model(path: str) -> tuple[str, Any, Config]:
    """``(arm name, model, config)`` of a file :func:`save_model` wrote (read by ``DQN.load``)."""
    return stable.load_with(ARM, path)


SEARCH_SPACE = (
    Range("learning_rate", 1e-4, 1e-2, log=True),
    Range("one_minus_gamma", 0.05, 0.2, log=True, hyperparameter="gamma", scale=ONE_MINUS),
    Range("log2_batch_size", 5, 8, integer=True, hyperparameter="batch_size", scale=POWER_OF_TWO),
    Range("train_freq", 1, 4, integer=True),
    Range("target_update_interval", 10, 1000, log=True, integer=True),
    Range("learning_starts", 500, 10_000, log=True, integer=True),
    Range("exploration_fraction", 0.05, 0.5),
)
"""Its tuning coordinates (RL Zoo's DQN sampler's, narrowed to this task; the network stays the preset's). As in RL
Zoo, whose sampler takes ``n_envs`` as given, the number of envs is the start preset's (16), not searched: a trial
of one env makes 16 times the updates of one of 16 at the same train frequency (200k of them: about 6 minutes
at the 1.9 ms per update SBX takes here, against 24 seconds for 16 envs)."""

ARM = LibraryArm(
    "sbx-dqn",
    "jax",
    stable.ENV_ID,
    "SBX DQN (JAX) + Doors-v0",
    train,
    save_model,
    loader=load_model,
    hyperparameters=SBXHyperparameters,
    presets=presets("sbx-dqn", ("defaults", "zoo", "shared", "shared-onehot", "tuned")),
    search_space=SEARCH_SPACE,
    requirements=("sbx-rl", "jax"),
)
"""The arm's record (entry point ``sbx-dqn`` of the group ``doors_gym.arms``)."""
