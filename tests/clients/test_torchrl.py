"""TorchRL against the envs by id: ``GymEnv`` and its ``check_env_specs`` in every mode TorchRL can read.

``obs_mode="onehot"`` is the exception, and the fault is TorchRL's: it converts any
``MultiBinary`` space with a multi-dimensional shape by passing the shape tuple as a
size (``Binary(spec.n)``), which fails for a plain Gymnasium env just as it does for
Doors. Flattening the observation first (Gymnasium's ``FlattenObservation``) is the
way round it, tested here too.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

needs("torch")
torchrl_gym = needs("torchrl.envs.libs.gym")
from torchrl.envs.utils import check_env_specs  # noqa: E402

from doors_gym.core import OBS_MODES  # noqa: E402

WORKING_MODES = {"grid": "observation", "coords": "observation", "rgb": "pixels", "flat": "observation"}
"""The modes ``GymEnv`` reads, and the key TorchRL gives the observation (a uint8 image is ``pixels``)."""
NUM_STEPS = 70  # more than the 60-step limit: the rollout crosses an episode's end


def test_the_working_modes_are_every_mode_but_onehot():
    assert set(WORKING_MODES) == set(OBS_MODES) - {"onehot"}


@pytest.mark.parametrize(
    ("env_id", "obs_mode"),
    [("Doors-v0", mode) for mode in WORKING_MODES] + [("DoorsJax-v0", "grid")],
)
def test_gym_env_passes_check_env_specs_and_rolls_out(env_id, obs_mode):
    if env_id == "DoorsJax-v0":
        needs("jax")
    env = torchrl_gym.GymEnv(env_id, obs_mode=obs_mode, cell_pixels=2)
    check_env_specs(env, seed=0)
    key = WORKING_MODES[obs_mode]
    space = gym.make(env_id, obs_mode=obs_mode, cell_pixels=2).observation_space
    # TorchRL one-hot encodes MultiDiscrete observations: grid (225,) -> (225, 4), coords (4,) -> (4, 15).
    assert env.observation_spec[key].shape[0] == space.shape[0]
    rollout = env.rollout(NUM_STEPS, break_when_any_done=False)
    assert rollout.batch_size == (NUM_STEPS,)
    assert env.observation_spec[key].is_in(rollout[key][0])
    done = rollout["next", "done"].squeeze(-1).numpy()
    truncated = rollout["next", "truncated"].squeeze(-1).numpy()
    terminated = rollout["next", "terminated"].squeeze(-1).numpy()
    np.testing.assert_array_equal(done, truncated | terminated)
    # Random actions from a bottom-row start rarely reach the top row: the 60-step limit ends an episode.
    assert done.any()
    rewards = rollout["next", "reward"].squeeze(-1).numpy()
    assert rewards.dtype == np.float32 and np.abs(rewards).max() <= np.sqrt(2) + 1e-6


def onehot_failure(env_id: str, **keywords) -> str:
    with pytest.raises(TypeError) as error:
        torchrl_gym.GymEnv(env_id, **keywords)
    return str(error.value)


class PlainMultiBinaryEnv(gym.Env):
    """Nothing of Doors: a Gymnasium env whose observation space is a 2-D ``MultiBinary``."""

    def __init__(self, shape=(3, 4), **_: object) -> None:
        self.observation_space = gym.spaces.MultiBinary(shape)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def test_onehot_fails_in_torchrl_as_any_multidimensional_multibinary_does():
    gym.register("PlainMultiBinary-v0", entry_point=PlainMultiBinaryEnv)
    try:
        plain = onehot_failure("PlainMultiBinary-v0")
        assert "argument must be" in plain and "not 'tuple'" in plain
        assert onehot_failure("Doors-v0", obs_mode="onehot") == plain
        # The same space, one-dimensional, converts: only the shape tuple trips TorchRL.
        check_env_specs(torchrl_gym.GymEnv("PlainMultiBinary-v0", shape=12), seed=0)
    finally:
        gym.registry.pop("PlainMultiBinary-v0")


def test_onehot_through_flatten_observation():
    env = torchrl_gym.GymWrapper(gym.wrappers.FlattenObservation(gym.make("Doors-v0", obs_mode="onehot")))
    check_env_specs(env, seed=0)
    assert env.observation_spec["observation"].shape == (15 * 15 * 4,)
    rollout = env.rollout(5)
    planes = rollout["observation"][0].numpy().reshape(15, 15, 4)
    assert (planes.sum(axis=-1) == 1).all() and planes[..., 1].sum() == 1  # one code per cell, one agent


def test_torchrl_drops_the_frameskip_it_offers_every_env():
    """GymEnv first makes the env with ``frameskip=1`` and drops it when the TypeError says, in Python's words,
    "unexpected keyword argument 'frameskip'"; our one-line error keeps those words and names the allowed ones."""
    with pytest.raises(TypeError, match=r"Doors envs got an unexpected keyword argument 'frameskip': expected"):
        gym.make("Doors-v0", frameskip=1)
    env = torchrl_gym.GymEnv("Doors-v0")
    assert env.wrapper_frame_skip == 1 and env.rollout(3).batch_size == (3,)
