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

from doors_gym_baselines.api import Config, field

from . import stable
from .stable import INTEGERS, UNITS

LIBRARY = "sbx"
JITTED = True
"""SBX jits its update and action selection at their first call (timed as ``compile``)."""


@dataclasses.dataclass(frozen=True)
class SBXHyperparameters(stable.StableHyperparameters):
    """SBX DQN's settings, SBX's defaults (``sbx.DQN``), with the vector env's size: SB3's
    (:class:`~doors_gym_libraries.stable.StableHyperparameters`), with SBX's defaults and meaning where they differ."""

    learning_rate: float = field(1e-4, "Adam's step size (constant)")
    target_update_interval: int = field(1000, "vector-env steps between target updates")
    net_arch: tuple[int, ...] = field((256, 256), "the Q-network's two hidden layers (one width)")
    observation: str = field(
        "grid",
        "the env's observation: the grid's cell codes, or its one-hot flat form, or cells: the agent's and the "
        "goal's planes, as this package's arms read them",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
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


SEARCH_SPACE = stable.zoo_space((10, 1000))
"""Its tuning coordinates (:func:`~doors_gym_libraries.stable.zoo_space`: target updates every 10 to 1000
vector-env steps). One env instead of 16 means 200k updates: about 6 minutes at the 1.9 ms per update SBX takes
here, against 24 seconds for 16 envs."""

ARM = stable.make_arm("sbx-dqn", "jax", "SBX DQN (JAX) + Doors-v0", SBXHyperparameters, SEARCH_SPACE, ("sbx-rl", "jax"))
"""The arm's record (entry point ``sbx-dqn`` of the group ``doors_gym.arms``)."""
