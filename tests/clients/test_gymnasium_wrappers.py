"""Common Gymnasium wrappers on both envs, by id, and the JAX conversion wrappers on ``DoorsJax-v0``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

from doors_gym import core

ENV_IDS = ["Doors-v0", "DoorsJax-v0"]


@pytest.fixture(params=ENV_IDS)
def env_id(request) -> str:
    if request.param == "DoorsJax-v0":
        needs("jax")
    return request.param


def random_episode(env: gym.Env, seed: int) -> tuple[list, list[float], bool]:
    """Observations and rewards of one random episode, and whether it terminated."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    observations, rewards = [obs], []
    terminated = truncated = False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, _ = env.step(int(rng.integers(0, 5)))
        observations.append(obs)
        rewards.append(float(reward))
    return observations, rewards, terminated


def test_flatten_observation_one_hot_encodes_every_variant(env_id):
    for obs_mode, size in (("grid", 900), ("onehot", 900), ("coords", 15 + 15 + 15 + 15)):
        env = gym.wrappers.FlattenObservation(gym.make(env_id, obs_mode=obs_mode))
        assert env.observation_space.shape == (size,)
        observations, _, _ = random_episode(env, seed=1)
        for obs in observations:
            assert obs.shape == (size,) and env.observation_space.contains(obs)
            assert obs.sum() == (225 if obs_mode != "coords" else 4)
    grid_env = gym.make(env_id)
    flat_env = gym.wrappers.FlattenObservation(gym.make(env_id))
    grid_obs, _ = grid_env.reset(seed=4)
    flat_obs, _ = flat_env.reset(seed=4)
    np.testing.assert_array_equal(flat_obs.reshape(225, 4).argmax(axis=1), grid_obs)


def test_record_episode_statistics_sums_the_rewards(env_id):
    env = gym.wrappers.RecordEpisodeStatistics(gym.make(env_id))
    for seed in range(3):
        rng = np.random.default_rng(seed)
        env.reset(seed=seed)
        total, length, done, info = 0.0, 0, False, {}
        while not done:
            _, reward, terminated, truncated, info = env.step(int(rng.integers(0, 5)))
            total += reward
            length += 1
            done = terminated or truncated
        assert info["episode"]["r"] == pytest.approx(total, abs=1e-5)
        assert info["episode"]["l"] == length


def test_normalize_observation_gives_finite_standardised_floats(env_id):
    env = gym.wrappers.NormalizeObservation(gym.make(env_id))
    observations = []
    for seed in range(5):
        observations += random_episode(env, seed)[0]
    batch = np.stack(observations)
    assert np.issubdtype(batch.dtype, np.floating) and np.isfinite(batch).all()
    assert batch.shape[1] == 225 and np.abs(batch).max() < 100


def test_frame_stack_observation_keeps_the_last_frames(env_id):
    env = gym.wrappers.FrameStackObservation(gym.make(env_id), stack_size=4)
    assert env.observation_space.shape == (4, 225)
    obs, _ = env.reset(seed=2)
    assert obs.shape == (4, 225) and obs.dtype == np.int16
    assert (obs == obs[3]).all() and (obs[3] == core.AGENT).sum() == 1  # padded with the reset frame
    previous = obs
    for action in (core.UP, core.LEFT, core.UP):
        obs, *_ = env.step(action)
        np.testing.assert_array_equal(obs[:3], previous[1:])
        previous = obs


def test_record_video_writes_an_mp4_of_an_episode(env_id, tmp_path):
    needs("moviepy")
    env = gym.wrappers.RecordVideo(
        gym.make(env_id, render_mode="rgb_array", cell_pixels=4),
        video_folder=str(tmp_path / "videos"),
        episode_trigger=lambda episode: True,
        disable_logger=True,
    )
    random_episode(env, seed=0)
    env.close()
    videos = list((tmp_path / "videos").glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 0


def test_human_rendering_shows_the_rgb_frames(env_id):
    pygame = needs("pygame")
    env = gym.wrappers.HumanRendering(gym.make(env_id, render_mode="rgb_array", cell_pixels=2))
    assert env.render_mode == "human"
    env.reset(seed=0)
    env.step(core.UP)
    surface = pygame.display.get_surface()
    assert surface is not None and surface.get_size() == (30, 30)
    np.testing.assert_array_equal(
        pygame.surfarray.array3d(surface).transpose(1, 0, 2), env.env.render()  # what the window shows
    )
    env.close()


def test_jax_to_numpy_and_jax_to_torch_on_doors_jax():
    jax = needs("jax")
    torch = needs("torch")
    from gymnasium.wrappers.jax_to_numpy import JaxToNumpy
    from gymnasium.wrappers.jax_to_torch import JaxToTorch

    base = gym.make("DoorsJax-v0", array_type="jax", disable_env_checker=True)
    obs, _ = base.reset(seed=3)
    assert isinstance(obs, jax.Array)

    numpy_env = JaxToNumpy(gym.make("DoorsJax-v0", array_type="jax", disable_env_checker=True))
    numpy_obs, _ = numpy_env.reset(seed=3)
    assert isinstance(numpy_obs, np.ndarray) and numpy_obs.dtype == np.int16
    np.testing.assert_array_equal(numpy_obs, np.asarray(obs))
    numpy_obs, reward, terminated, truncated, info = numpy_env.step(np.int64(core.UP))
    assert isinstance(numpy_obs, np.ndarray) and float(info["distance"]) > 0

    torch_env = JaxToTorch(gym.make("DoorsJax-v0", array_type="jax", disable_env_checker=True))
    torch_obs, _ = torch_env.reset(seed=3)
    assert isinstance(torch_obs, torch.Tensor) and torch_obs.dtype == torch.int16
    np.testing.assert_array_equal(torch_obs.numpy(), np.asarray(obs))
    torch_obs, reward, terminated, truncated, _ = torch_env.step(torch.tensor(core.UP))
    np.testing.assert_array_equal(torch_obs.numpy(), numpy_obs)
