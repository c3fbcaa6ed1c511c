"""The NumPy envs: ``DoorsEnv`` (``Doors-v0``) and its native vector env."""

from doors_gym.envs.doors import DoorsEnv
from doors_gym.envs.vector import DoorsVectorEnv

__all__ = ["DoorsEnv", "DoorsVectorEnv"]
