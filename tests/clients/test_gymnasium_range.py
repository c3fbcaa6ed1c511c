"""The NumPy env's contract on every Gymnasium that ``pip install doors-gym`` allows, 0.29.1 to the newest.

Codebases that pin ``gymnasium==0.29.1`` (CleanRL's requirements, older Stable-Baselines3 set-ups) make the env
by id, check it, step it in ``SyncVectorEnv`` and read episode statistics there: every ``Doors`` id and
observation mode does all four here. What needs Gymnasium 1.x says so in one line naming the installed version.
This file needs only Gymnasium, NumPy and pygame: ``.ci/run`` also runs it in a venv with ``gymnasium==0.29.1``.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import doors_gym
from doors_gym.core import OBS_MODES
from doors_gym.extras import GymnasiumTooOld, require_gymnasium_1

GYMNASIUM_1 = int(gym.__version__.split(".")[0]) >= 1
NUMPY_FLAT_IDS = tuple(env_id for env_id in doors_gym.FLAT_ENV_IDS if not env_id.startswith("DoorsJax"))
CASES = [
    pytest.param(env_id, {"obs_mode": mode}, id=f"{env_id}-{mode}")
    for env_id in doors_gym.NUMPY_ENV_IDS
    for mode in OBS_MODES
    # Coordinates carry no layout: with random doors they are refused (test_levels.py).
    if not (mode == "coords" and gym.spec(env_id).kwargs.get("doors") == "random")
] + [pytest.param(env_id, {}, id=env_id) for env_id in NUMPY_FLAT_IDS]
"""Every level's id in every observation mode it allows, and the flat ids as registered."""
NUM_ENVS = 3


def test_every_numpy_id_is_registered_and_covered():
    assert {case.values[0] for case in CASES} == set(doors_gym.NUMPY_ENV_IDS + NUMPY_FLAT_IDS) <= set(gym.registry)
    assert "Doors-v0" in doors_gym.NUMPY_ENV_IDS and "Doors-Flat-v0" in NUMPY_FLAT_IDS


@pytest.mark.parametrize(("env_id", "keywords"), CASES)
def test_every_id_and_observation_mode_passes_check_env(env_id, keywords):
    env = gym.make(env_id, cell_pixels=2, **keywords)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    env.close()


def episode_returns(infos: dict) -> list[float]:
    """Returns of the episodes ``RecordEpisodeStatistics`` closed at this ``SyncVectorEnv`` step.

    Gymnasium 1.x puts them in ``infos["episode"]`` with the ``"_episode"`` mask; 0.29 in
    ``infos["final_info"]``, one dict (or None) per env.
    """
    if "episode" in infos:
        return infos["episode"]["r"][infos["_episode"]].tolist()
    finished = [info for info in infos.get("final_info", ()) if info is not None and "episode" in info]
    return [float(np.asarray(info["episode"]["r"]).item()) for info in finished]


@pytest.mark.parametrize(("env_id", "keywords"), CASES)
def test_sync_vector_env_records_episode_statistics(env_id, keywords):
    def make():
        return gym.wrappers.RecordEpisodeStatistics(gym.make(env_id, max_episode_steps=10, **keywords))

    envs = gym.vector.SyncVectorEnv([make for _ in range(NUM_ENVS)])
    envs.action_space.seed(0)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (NUM_ENVS, *envs.single_observation_space.shape)
    returns = []
    for _ in range(40):
        obs, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
        assert rewards.shape == terminated.shape == truncated.shape == (NUM_ENVS,)
        returns += episode_returns(infos)
    envs.close()
    # 40 steps of episodes of at most 10 steps each: at least 3 finish per env; each return is a sum of
    # per-step distance gains, at most 2 per step.
    assert len(returns) >= 3 * NUM_ENVS
    assert all(abs(value) <= 2 * 10 for value in returns)


def test_what_needs_gymnasium_1_says_so_in_one_line(monkeypatch):
    if GYMNASIUM_1:
        require_gymnasium_1("anything")  # passes on 1.x
        monkeypatch.setattr(gym, "__version__", "0.29.1")
    with pytest.raises(GymnasiumTooOld) as raised:
        require_gymnasium_1("the native vector env of Doors-v0 (its autoreset modes)")
    message = str(raised.value)
    assert "\n" not in message and "needs gymnasium>=1.0, and this is gymnasium 0.29.1" in message
    assert isinstance(raised.value, ImportError)


@pytest.mark.skipif(GYMNASIUM_1, reason="Gymnasium 1.x builds the native vector env (tests/envs/test_vector.py)")
def test_the_native_vector_env_refuses_gymnasium_0_29_in_one_line():
    from doors_gym.envs import DoorsVectorEnv

    with pytest.raises(GymnasiumTooOld, match=rf"this is gymnasium {gym.__version__}"):
        DoorsVectorEnv(num_envs=2)
