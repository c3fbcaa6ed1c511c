"""One meaning for each setting across ``make``, ``make_vec`` (native, sync, async) and both ids."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

from doors_gym import core

ENV_IDS = ["Doors-v0", "DoorsJax-v0"]
VECTOR_MODES = ["native", "sync", "async"]
NO_LIMIT_STEPS = 150
"""Steps a ``max_episode_steps=-1`` episode runs without ending (staying never reaches the goal)."""


def skip_without_jax(env_id: str) -> None:
    if env_id == "DoorsJax-v0":
        needs("jax")


def make_vec(env_id: str, mode: str, **kwargs) -> gym.vector.VectorEnv:
    skip_without_jax(env_id)
    if mode == "native":
        return gym.make_vec(env_id, 2, **kwargs)
    # The test process has loaded JAX, which is multithreaded: async workers start by spawn, not fork.
    vector_kwargs = {"context": "spawn"} if mode == "async" else None
    return gym.make_vec(env_id, 2, vectorization_mode=mode, vector_kwargs=vector_kwargs, **kwargs)


def single_episode_length(env: gym.Env, cap: int = NO_LIMIT_STEPS) -> int | None:
    """Steps until truncation while staying (never terminates); None if still running after ``cap``."""
    env.reset(seed=0)
    for step in range(1, cap + 1):
        _, _, terminated, truncated, _ = env.step(core.STAY)
        assert not terminated
        if truncated:
            return step
    return None


def vector_episode_length(envs: gym.vector.VectorEnv, cap: int = NO_LIMIT_STEPS) -> int | None:
    envs.reset(seed=0)
    for step in range(1, cap + 1):
        _, _, terminated, truncated, _ = envs.step(np.zeros(envs.num_envs, dtype=np.int64))
        assert not np.any(terminated)
        if np.all(truncated):
            return step
        assert not np.any(truncated)
    return None


LIMITS = [({}, 60), ({"max_episode_steps": None}, 60), ({"max_episode_steps": 7}, 7), ({"max_episode_steps": -1}, None)]
LIMIT_IDS = ["omitted", "None", "7", "-1"]


@pytest.mark.parametrize(("kwargs", "length"), LIMITS, ids=LIMIT_IDS)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_max_episode_steps_under_make(env_id, kwargs, length):
    skip_without_jax(env_id)
    env = gym.make(env_id, **kwargs)
    assert single_episode_length(env) == length
    assert env.spec.max_episode_steps == length


# Every env, mode and limit, except that one spawned JAX async env is enough (each worker imports JAX).
VECTOR_LIMIT_CASES = [
    pytest.param(env_id, mode, kwargs, length, id=f"{env_id}-{mode}-{limit_id}")
    for env_id in ENV_IDS
    for mode in VECTOR_MODES
    for (kwargs, length), limit_id in zip(LIMITS, LIMIT_IDS)
    if not (env_id == "DoorsJax-v0" and mode == "async" and limit_id != "7")
]


@pytest.mark.parametrize(("env_id", "mode", "kwargs", "length"), VECTOR_LIMIT_CASES)
def test_max_episode_steps_under_make_vec(env_id, mode, kwargs, length):
    envs = make_vec(env_id, mode, **kwargs)
    try:
        assert vector_episode_length(envs) == length
        if mode == "native":
            assert envs.unwrapped.params.max_episode_steps == length
    finally:
        envs.close()


BAD_LIMITS = [0, -2, 2.5, "60"]
MAKE_LIMIT_ERRORS = (ValueError, TypeError) if tuple(map(int, gym.__version__.split(".")[:2])) >= (1, 4) else (
    ValueError,
    TypeError,
    AssertionError,
)
"""``gym.make`` (and the ``sync`` mode) hand ``max_episode_steps`` to Gymnasium's ``TimeLimit``, which asserts before
1.4 (gymnax 1.0.1, in the test extra, caps Gymnasium below 1.4); the env never sees the keyword there."""


@pytest.mark.parametrize("value", BAD_LIMITS, ids=[repr(value) for value in BAD_LIMITS])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_bad_max_episode_steps_is_an_error_everywhere(env_id, value):
    skip_without_jax(env_id)
    with pytest.raises(MAKE_LIMIT_ERRORS) as caught:
        gym.make(env_id, max_episode_steps=value)
    assert "max_episode_steps" in str(caught.value)
    for mode in ("native", "sync"):
        with pytest.raises((ValueError, TypeError) if mode == "native" else MAKE_LIMIT_ERRORS) as caught:
            make_vec(env_id, mode, max_episode_steps=value)
        assert "max_episode_steps" in str(caught.value)
    with pytest.raises(ValueError, match=rf"max_episode_steps={value!r} is invalid.*-1 \(no limit\)"):
        gym.make_vec(env_id, 2, max_episode_steps=value)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_an_unknown_keyword_is_named_with_the_allowed_ones_everywhere(env_id):
    from doors_gym.spaces import ENV_KEYWORDS

    skip_without_jax(env_id)
    makers = {
        "make": lambda: gym.make(env_id, grid=(9, 9)),
        "make_vec": lambda: gym.make_vec(env_id, 2, grid=(9, 9)),
        "sync": lambda: make_vec(env_id, "sync", grid=(9, 9)),
    }
    for how, build in makers.items():
        with pytest.raises(TypeError) as caught:
            build()
        message = str(caught.value)
        assert "'grid'" in message and all(repr(name) in message for name in ENV_KEYWORDS), (how, message)
        assert len(message.splitlines()) == 1, (how, message)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_both_shells_return_numpy_by_default(env_id):
    skip_without_jax(env_id)
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    assert isinstance(obs, np.ndarray)
    obs, reward, terminated, truncated, info = env.step(0)
    assert isinstance(obs, np.ndarray) and isinstance(reward, float) and isinstance(info["distance"], float)
    envs = gym.make_vec(env_id, 3)
    assert envs.metadata.get("jax", False) is False
    obs, info = envs.reset(seed=0)
    out = envs.step(np.zeros(3, dtype=np.int64))
    assert all(type(array) is np.ndarray for array in (obs, *out[:4], out[4]["distance"], out[4]["_distance"]))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_vector_modes_agree_on_dtypes(env_id):
    """Native, sync and async vector envs return the same dtypes (Gymnasium's: float64 rewards)."""
    dtypes = {}
    for mode in ("native", "sync"):
        envs = make_vec(env_id, mode)
        obs, info = envs.reset(seed=0)
        obs, reward, terminated, truncated, info = envs.step(np.zeros(2, dtype=np.int64))
        dtypes[mode] = (obs.dtype, reward.dtype, terminated.dtype, truncated.dtype, info["distance"].dtype)
        envs.close()
    assert dtypes["native"] == dtypes["sync"] == (np.int16, np.float64, np.bool_, np.bool_, np.float64)
