"""DQN baselines on Doors: PyTorch and Flax against both envs, and a fully jitted Flax arm.

Installed as ``doors_gym_baselines`` (so it never clashes with another
distribution's top-level ``baselines``); from a clone, ``python -m baselines.dqn_torch``.
Every arm exposes ``train(config, trial=None) -> TrainResult``.
"""

from doors_gym.cli import ARM_MODULES, ARMS

__all__ = ["ARMS", "ARM_MODULES"]
