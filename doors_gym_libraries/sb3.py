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

from doors_gym_baselines.api import LINEAR, Config, Range, field

from . import stable
from .common import check_unit
from .stable import INTEGERS

LIBRARY = "stable_baselines3"
JITTED = False
"""Whether the library compiles its functions at their first call (timed as ``compile``)."""
UNITS = (*stable.UNITS, "lr_end_fraction")


@dataclasses.dataclass(frozen=True)
class SB3Hyperparameters(stable.StableHyperparameters):
    """Stable-Baselines3 DQN's settings, SB3's defaults (``stable_baselines3.DQN``), with the vector env's size: the
    ones SBX shares (:class:`~doors_gym_libraries.stable.StableHyperparameters`), its learning-rate schedule and
    its gradient clipping."""

    lr_end_fraction: float = field(1.0, "learning rate at the end, as a fraction (SB3 schedule; 1: constant)")
    max_grad_norm: float = field(10.0, "clip the gradients' global norm to this")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_unit(self, "lr_end_fraction")
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


SEARCH_SPACE = (*stable.zoo_space((200, 5000)), Range("lr_end_fraction", 0.0, 1.0, scale=LINEAR))
"""Its tuning coordinates (:func:`~doors_gym_libraries.stable.zoo_space`: target updates every 200 to 5000 env
steps), and the learning rate's end fraction. One env instead of 16 means 200k updates: about 20 minutes at the
5.9 ms per update SB3 takes here, against 1.2 minutes for 16 envs."""

ARM = stable.make_arm(
    "sb3-dqn", "torch", "SB3 DQN (torch) + Doors-v0", SB3Hyperparameters, SEARCH_SPACE, ("stable-baselines3", "torch")
)
"""The arm's record (entry point ``sb3-dqn`` of the group ``doors_gym.arms``)."""
