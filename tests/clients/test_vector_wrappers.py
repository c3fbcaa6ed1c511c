"""``gym.make_vec`` in every mode with ``gymnasium.wrappers.vector`` wrappers, on both envs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs
from gymnasium.wrappers import vector as vector_wrappers

NUM_ENVS = 4
STEPS = 150


def make_vec(env_id: str, mode: str, **kwargs) -> gym.vector.VectorEnv:
    if env_id == "DoorsJax-v0":
        needs("jax")
    if mode == "native":
        return gym.make_vec(env_id, NUM_ENVS, **kwargs)
    # JAX is loaded in the test process and is multithreaded: async workers start by spawn.
    vector_kwargs = {"context": "spawn"} if mode == "async" else None
    return gym.make_vec(env_id, NUM_ENVS, vectorization_mode=mode, vector_kwargs=vector_kwargs, **kwargs)


def episodes(envs: gym.vector.VectorEnv, seed: int = 0) -> list[tuple[int, float, int]]:
    """``(env, return, length)`` of every episode that ends in ``STEPS`` random vector steps."""
    rng = np.random.default_rng(seed)
    envs.reset(seed=seed)
    ended = []
    for _ in range(STEPS):
        _, _, _, _, info = envs.step(rng.integers(0, 5, NUM_ENVS))
        if "episode" in info:
            for index in np.flatnonzero(info["_episode"]):
                ended.append(
                    (int(index), round(float(info["episode"]["r"][index]), 5), int(info["episode"]["l"][index]))
                )
    return ended


CASES = [
    ("Doors-v0", "native"),
    ("Doors-v0", "sync"),
    ("Doors-v0", "async"),
    ("DoorsJax-v0", "native"),
    ("DoorsJax-v0", "sync"),
]


@pytest.mark.parametrize(("env_id", "mode"), CASES)
def test_record_episode_statistics_in_every_mode(env_id, mode):
    envs = vector_wrappers.RecordEpisodeStatistics(make_vec(env_id, mode))
    try:
        ended = episodes(envs)
    finally:
        envs.close()
    assert len(ended) >= NUM_ENVS
    assert all(1 <= length <= 60 for _, _, length in ended)
    if env_id == "Doors-v0":
        # Native, sync and async Doors-v0 vector envs are the same envs: the same episodes for the same seed.
        reference = vector_wrappers.RecordEpisodeStatistics(make_vec("Doors-v0", "native"))
        assert ended == episodes(reference)


def test_doors_jax_async_with_spawned_workers():
    envs = vector_wrappers.RecordEpisodeStatistics(make_vec("DoorsJax-v0", "async", max_episode_steps=10))
    try:
        ended = episodes(envs)
    finally:
        envs.close()
    assert len(ended) >= NUM_ENVS * (STEPS // 11) and all(length <= 10 for _, _, length in ended)


@pytest.mark.parametrize(("env_id", "mode"), CASES)
def test_observation_and_reward_wrappers(env_id, mode):
    envs = make_vec(env_id, mode)
    envs = vector_wrappers.FlattenObservation(envs)
    envs = vector_wrappers.NormalizeReward(envs)
    envs = vector_wrappers.ClipReward(envs, min_reward=-1.0, max_reward=1.0)
    envs = vector_wrappers.DictInfoToList(envs)
    try:
        obs, infos = envs.reset(seed=1)
        assert obs.shape == (NUM_ENVS, 900) and (obs.sum(axis=1) == 225).all()
        assert isinstance(infos, list) and len(infos) == NUM_ENVS and "distance" in infos[0]
        rng = np.random.default_rng(1)
        for _ in range(70):
            obs, rewards, terminated, truncated, infos = envs.step(rng.integers(0, 5, NUM_ENVS))
            assert obs.shape == (NUM_ENVS, 900)
            assert np.isfinite(rewards).all() and (np.abs(rewards) <= 1.0).all()
            assert all(isinstance(info, dict) for info in infos)
    finally:
        envs.close()


def test_jax_to_numpy_vector_wrapper_on_jax_arrays():
    jax = needs("jax")
    envs = gym.make_vec("DoorsJax-v0", NUM_ENVS, array_type="jax")
    obs, info = envs.reset(seed=0)
    assert isinstance(obs, jax.Array) and isinstance(info["distance"], jax.Array)
    wrapped = vector_wrappers.JaxToNumpy(gym.make_vec("DoorsJax-v0", NUM_ENVS, array_type="jax"))
    numpy_obs, numpy_info = wrapped.reset(seed=0)
    assert isinstance(numpy_obs, np.ndarray) and isinstance(numpy_info["distance"], np.ndarray)
    np.testing.assert_array_equal(numpy_obs, np.asarray(obs))
    out = wrapped.step(np.ones(NUM_ENVS, dtype=np.int64))
    assert all(isinstance(array, np.ndarray) for array in out[:4])
    # The same as the NumPy default of the unwrapped shell, dtypes aside (JAX keeps rewards float32).
    plain = gym.make_vec("DoorsJax-v0", NUM_ENVS)
    plain.reset(seed=0)
    plain_out = plain.step(np.ones(NUM_ENVS, dtype=np.int64))
    for wrapped_array, plain_array in zip(out[:4], plain_out[:4]):
        np.testing.assert_array_equal(wrapped_array, plain_array)
