"""The core promise: ``Doors-v0`` (NumPy) and ``DoorsJax-v0`` (JAX) make identical transitions.

From the same state and the same actions both backends must give identical
observations, float32 rewards, ``terminated`` and ``truncated`` (SPEC.md). The
starts are drawn by different generators, so only their distributions are
compared.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import doors_gym  # noqa: E402, F401  (registers the ids)
from doors_gym import core  # noqa: E402
from doors_gym.core import MOVES, STAY, WALL, DoorsParams, DoorsState  # noqa: E402
from doors_gym.envs.doors import DoorsEnv  # noqa: E402
from doors_gym.jax import functional as F  # noqa: E402
from doors_gym.oracle import OraclePolicy  # noqa: E402

LAYOUTS = [
    {"max_episode_steps": 60},
    {"grid_size": (9, 21), "n_doors": 4, "max_episode_steps": 25},
    {"grid_size": (4, 7), "door_cols": (6, 2), "max_episode_steps": 9},
    {"grid_size": (3, 1), "n_doors": 1, "max_episode_steps": 3},
    {"grid_size": (6, 5), "n_doors": 5, "max_episode_steps": 12},
    {"grid_size": (12, 3), "door_cols": (1,), "max_episode_steps": 40},
]
TRANSITIONS_PER_LAYOUT = 2000

_JITTED: dict[str, object] = {}


def batched_env_step():
    """``env_step`` vmapped over states and actions, jitted once for the module."""
    if "batched" not in _JITTED:
        _JITTED["batched"] = jax.jit(jax.vmap(F.env_step, in_axes=(0, 0, None)), static_argnums=2)
    return _JITTED["batched"]


def single_env_step():
    if "single" not in _JITTED:
        _JITTED["single"] = jax.jit(F.env_step, static_argnums=2)
    return _JITTED["single"]


def to_jax_state(state: DoorsState) -> DoorsState:
    return DoorsState(*(jnp.asarray(np.asarray(v), dtype=jnp.int32) for v in state[:5]))


def layout_id(layout: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in layout.items())


def sample_states(params: DoorsParams, rng: np.random.Generator, count: int) -> np.ndarray:
    """``(count, 5)`` rows ``agent_row, agent_col, goal_row, goal_col, time`` of valid states.

    A quarter of the goals sit next to the agent so that goals are reached
    often; times cluster near the limit so that truncation is exercised.
    """
    free = np.flatnonzero(params.layout.reshape(-1) != WALL)
    limit = params.max_episode_steps
    rows = np.empty((count, 5), dtype=np.int64)
    for index in range(count):
        agent = int(rng.choice(free))
        goal = agent
        if rng.random() < 0.25:
            d_row, d_col = MOVES[int(rng.integers(1, 5))]
            row, col = divmod(agent, params.width)
            row, col = row + d_row, col + d_col
            if 0 <= row < params.height and 0 <= col < params.width and params.layout[row, col] != WALL:
                goal = row * params.width + col
        while goal == agent:
            goal = int(rng.choice(free))
        time = limit - 1 if rng.random() < 0.2 else int(rng.integers(0, limit))
        rows[index] = (*divmod(agent, params.width), *divmod(goal, params.width), time)
    return rows


def expected_move(params: DoorsParams, row: int, col: int, action: int) -> tuple[int, int, str]:
    """The SPEC's move, written out independently of ``doors_gym.core``; also names the case."""
    d_row, d_col = MOVES[action]
    target_row, target_col = row + d_row, col + d_col
    if action == STAY:
        return row, col, "stay"
    if not (0 <= target_row < params.height and 0 <= target_col < params.width):
        return row, col, "edge"
    if target_row == params.height // 2 and target_col not in params.door_cols:
        return row, col, "wall"
    return target_row, target_col, "move"


def test_random_transitions_identical():
    """>= 10,000 random (state, action) pairs over several layouts: every output identical."""
    rng = np.random.default_rng(2024)
    step = batched_env_step()
    counts = {"stay": 0, "edge": 0, "wall": 0, "move": 0, "goal": 0, "truncated": 0}
    total = 0
    for layout in LAYOUTS:
        env = DoorsEnv(**layout)
        params = env.params
        assert params == DoorsParams(**layout)
        states = sample_states(params, rng, TRANSITIONS_PER_LAYOUT)
        actions = rng.integers(0, 5, size=len(states))

        np_obs, np_reward, np_terminated, np_truncated, np_distance, np_next = [], [], [], [], [], []
        for row, action in zip(states, actions):
            env.set_state(DoorsState(*(np.int32(v) for v in row)))
            obs, reward, terminated, truncated, info = env.step(int(action))
            np_obs.append(obs)
            np_reward.append(reward)
            np_terminated.append(terminated)
            np_truncated.append(truncated)
            np_distance.append(info["distance"])
            np_next.append(tuple(int(v) for v in env.state[:5]))

            agent_row, agent_col, goal_row, goal_col, time = (int(v) for v in row)
            new_row, new_col, case = expected_move(params, agent_row, agent_col, int(action))
            assert np_next[-1] == (new_row, new_col, goal_row, goal_col, time + 1)
            assert terminated == ((new_row, new_col) == (goal_row, goal_col))
            assert truncated == (time + 1 >= params.max_episode_steps)
            expected_reward = math.hypot(goal_row - agent_row, goal_col - agent_col) - math.hypot(
                goal_row - new_row, goal_col - new_col
            )
            assert reward == pytest.approx(expected_reward, abs=1e-5)
            counts[case] += 1
            counts["goal"] += terminated
            counts["truncated"] += truncated

        batch = DoorsState(*(jnp.asarray(states[:, i], dtype=jnp.int32) for i in range(5)))
        obs, next_state, reward, terminated, truncated, info = step(batch, jnp.asarray(actions, jnp.int32), params)
        assert obs.dtype == np.int16 and np.stack(np_obs).dtype == np.int16
        np.testing.assert_array_equal(np.asarray(obs), np.stack(np_obs))
        assert reward.dtype == jnp.float32
        np_reward = np.asarray(np_reward, dtype=np.float32)
        np.testing.assert_array_equal(np.asarray(reward), np_reward)
        np.testing.assert_allclose(np.asarray(reward), np_reward, rtol=0, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(terminated), np.asarray(np_terminated))
        np.testing.assert_array_equal(np.asarray(truncated), np.asarray(np_truncated))
        np.testing.assert_array_equal(np.asarray(info["distance"]), np.asarray(np_distance, dtype=np.float32))
        np.testing.assert_array_equal(np.stack([np.asarray(v) for v in next_state[:5]], axis=1), np.asarray(np_next))
        total += len(states)

    assert total >= 10_000
    for case, count in counts.items():
        assert count > 0, f"no {case} transitions in the sample: {counts}"


@pytest.mark.parametrize("policy_name", ["random", "oracle"])
@pytest.mark.parametrize("layout", LAYOUTS[:3], ids=layout_id)
def test_episodes_in_lockstep(layout, policy_name):
    """Whole episodes from the NumPy env's reset state stay identical step by step."""
    rng = np.random.default_rng(7)
    env = DoorsEnv(**layout)
    params = env.params
    oracle = OraclePolicy(params)
    step = single_env_step()
    endings = {"terminated": 0, "truncated": 0}
    for episode in range(12):
        obs, info = env.reset(seed=100 + episode)
        state = to_jax_state(env.state)
        np.testing.assert_array_equal(np.asarray(F.observation(state, params)), obs)
        start_distance = info["distance"]
        episode_return = np.float64(0.0)
        for _ in range(params.max_episode_steps):
            action = oracle(obs) if policy_name == "oracle" else int(rng.integers(0, 5))
            obs, reward, terminated, truncated, info = env.step(action)
            jax_obs, state, jax_reward, jax_terminated, jax_truncated, jax_info = step(state, action, params)
            np.testing.assert_array_equal(np.asarray(jax_obs), obs)
            assert np.float32(reward) == jax_reward
            assert bool(jax_terminated) == terminated
            assert bool(jax_truncated) == truncated
            assert np.float32(info["distance"]) == jax_info["distance"]
            assert tuple(int(v) for v in state[:5]) == tuple(int(v) for v in env.state[:5])
            episode_return += reward
            if terminated or truncated:
                break
        assert terminated or truncated, "the episode outlived max_episode_steps"
        endings["terminated" if terminated else "truncated"] += 1
        assert episode_return == pytest.approx(start_distance - info["distance"], abs=1e-4)
    if policy_name == "oracle":
        assert endings == {"terminated": 12, "truncated": 0}
    else:
        assert endings["truncated"] > 0


def test_make_vec_parity_with_autoresets():
    """Native ``Doors-v0`` vector env and ``DoorsJax-v0`` vector env, fed the same starts and actions."""
    num_envs, limit = 8, 30
    np_env = gym.make_vec("Doors-v0", num_envs, max_episode_steps=limit)
    jax_env = gym.make_vec("DoorsJax-v0", num_envs, max_episode_steps=limit, array_type="numpy")
    params = np_env.unwrapped.params
    assert jax_env.unwrapped.params == params
    oracle = OraclePolicy(params)
    rng = np.random.default_rng(11)
    # Envs from pure oracle to pure random: episodes end at different steps.
    noise = np.linspace(0.0, 1.0, num_envs)

    np_obs, np_info = np_env.reset(seed=5)
    jax_env.reset(seed=5)
    jax_obs = jax_env.unwrapped.set_state(np_env.unwrapped.state)
    assert isinstance(jax_obs, np.ndarray)
    np.testing.assert_array_equal(jax_obs, np_obs)

    restart_steps: list[list[int]] = [[] for _ in range(num_envs)]
    ended = np.zeros(num_envs, dtype=bool)
    num_terminated = num_truncated = 0
    for t in range(150):
        actions = np.where(rng.random(num_envs) < noise, rng.integers(0, 5, num_envs), oracle(np_obs))
        np_obs, np_reward, np_terminated, np_truncated, np_info = np_env.step(actions)
        jax_obs, jax_reward, jax_terminated, jax_truncated, jax_info = jax_env.step(actions)
        for output in (jax_obs, jax_reward, jax_terminated, jax_truncated, jax_info["distance"]):
            assert isinstance(output, np.ndarray)
        assert jax_obs.dtype == np_obs.dtype == np.int16
        # float64 arrays, as SyncVectorEnv returns rewards, holding the rules' float32 values exactly.
        assert jax_reward.dtype == np_reward.dtype == np.float64
        np.testing.assert_array_equal(np_reward.astype(np.float32), np_reward)

        restarted = ended
        kept = ~restarted
        # The starts of autoreset envs differ (different generators) until copied over.
        np.testing.assert_array_equal(jax_obs[kept], np_obs[kept])
        np.testing.assert_array_equal(jax_info["distance"][kept], np_info["distance"][kept])
        np.testing.assert_array_equal(jax_reward, np_reward)
        np.testing.assert_array_equal(jax_terminated, np_terminated)
        np.testing.assert_array_equal(jax_truncated, np_truncated)
        assert not np_reward[restarted].any() and not np_terminated[restarted].any()
        assert not np_truncated[restarted].any()

        if restarted.any():
            assert (np.asarray(jax_env.unwrapped.state.time)[restarted] == 0).all()
            jax_obs = jax_env.unwrapped.set_state(np_env.unwrapped.state, restarted)
            np.testing.assert_array_equal(jax_obs, np_obs)
            for index in np.flatnonzero(restarted):
                restart_steps[index].append(t)
        np_state = np.stack([np.asarray(v) for v in np_env.unwrapped.state[:5]])
        jax_state = np.stack([np.asarray(v) for v in jax_env.unwrapped.state[:5]])
        np.testing.assert_array_equal(jax_state, np_state)

        ended = np_terminated | np_truncated
        num_terminated += int(np_terminated.sum())
        num_truncated += int(np_truncated.sum())

    assert num_terminated > 0 and num_truncated > 0
    assert all(restart_steps), f"some env never autoreset: {restart_steps}"
    assert len({tuple(steps) for steps in restart_steps}) > 1, "every env autoreset at the same steps"
    np_env.close()
    jax_env.close()


@pytest.mark.parametrize("layout", [{}, {"grid_size": (9, 21), "n_doors": 4}], ids=layout_id)
def test_start_distributions_agree(layout):
    """Agent and goal columns of many starts: same distribution in both backends."""
    stats = pytest.importorskip("scipy.stats")
    num_starts = 20_000
    env = DoorsEnv(**layout)
    params = env.params
    np_starts = np.empty((num_starts, 5), dtype=np.int64)
    env.reset(seed=123)
    for index in range(num_starts):
        if index:
            env.reset()
        np_starts[index] = [int(v) for v in env.state[:5]]

    keys = jax.random.split(jax.random.key(321), num_starts)
    jax_obs, jax_state = jax.jit(jax.vmap(F.reset, in_axes=(0, None)), static_argnums=1)(keys, params)
    jax_starts = np.stack([np.asarray(v) for v in jax_state[:5]], axis=1)
    np.testing.assert_array_equal(np.asarray(jax_obs[:50]), np.asarray(F.observation(jax_state, params))[:50])

    height, width = params.grid_size
    for starts in (np_starts, jax_starts):
        assert (starts[:, 0] == height - 1).all()
        assert (starts[:, 2] == 0).all()
        assert (starts[:, 4] == 0).all()
        assert starts[:, [1, 3]].min() >= 0 and starts[:, [1, 3]].max() < width

    columns = {
        "agent column": (np_starts[:, 1], jax_starts[:, 1], width),
        "goal column": (np_starts[:, 3], jax_starts[:, 3], width),
        "(agent, goal) pair": (
            np_starts[:, 1] * width + np_starts[:, 3],
            jax_starts[:, 1] * width + jax_starts[:, 3],
            width * width,
        ),
    }
    for name, (np_values, jax_values, bins) in columns.items():
        table = np.stack([np.bincount(np_values, minlength=bins), np.bincount(jax_values, minlength=bins)])
        assert (table > 0).all(), f"{name}: some value never drawn"
        p_value = stats.chi2_contingency(table).pvalue
        assert p_value > 1e-3, f"{name}: start distributions differ (p = {p_value:.2g})"
        for counts in table:
            assert stats.chisquare(counts).pvalue > 1e-3, f"{name}: not uniform"


@pytest.mark.parametrize("layout", [{}, {"grid_size": (9, 21), "n_doors": 4}], ids=layout_id)
def test_spaces_identical(layout):
    """Both envs (single and vector) declare the same observation and action spaces; obs are int16."""
    np_env = gym.make("Doors-v0", **layout)
    jax_env = gym.make("DoorsJax-v0", **layout)
    height, width = np_env.unwrapped.params.grid_size
    for space in (np_env.observation_space, jax_env.observation_space):
        assert isinstance(space, gym.spaces.MultiDiscrete)
        assert space.shape == (height * width,)
        assert space.dtype == np.int16
        np.testing.assert_array_equal(space.nvec, np.full(height * width, 4))
    assert np_env.observation_space == jax_env.observation_space
    assert np_env.observation_space.nvec.dtype == jax_env.observation_space.nvec.dtype
    assert np_env.action_space == jax_env.action_space == gym.spaces.Discrete(5)
    np_obs, _ = np_env.reset(seed=0)
    jax_obs, _ = jax_env.reset(seed=0)
    assert np_obs.dtype == jax_obs.dtype == np.int16
    assert np_obs in np_env.observation_space and jax_obs in jax_env.observation_space

    np_vec = gym.make_vec("Doors-v0", 3, **layout)
    jax_vec = gym.make_vec("DoorsJax-v0", 3, **layout)
    assert np_vec.single_observation_space == jax_vec.single_observation_space == np_env.observation_space
    assert np_vec.observation_space == jax_vec.observation_space
    assert np_vec.observation_space.dtype == jax_vec.observation_space.dtype == np.int16
    np_batch, _ = np_vec.reset(seed=0)
    jax_batch, _ = jax_vec.reset(seed=0)
    assert np_batch.dtype == jax_batch.dtype == np.int16
    assert np_batch.shape == jax_batch.shape == (3, height * width)


OBS_MODE_LAYOUTS = [
    {"max_episode_steps": 60},
    {"grid_size": (4, 7), "door_cols": (6, 2), "max_episode_steps": 9, "cell_pixels": 5},
]


@pytest.mark.parametrize("obs_mode", ["onehot", "rgb", "coords"])
@pytest.mark.parametrize("layout", OBS_MODE_LAYOUTS, ids=layout_id)
def test_observation_variants_identical(obs_mode, layout):
    """Every obs_mode: the same observation from both backends, single and vector, for random transitions."""
    rng = np.random.default_rng(7)
    keywords = {**layout, "obs_mode": obs_mode, "cell_pixels": layout.get("cell_pixels", 4)}
    env = DoorsEnv(**keywords)
    params = env.params
    assert params.obs_mode == obs_mode
    states = sample_states(params, rng, 300)
    actions = rng.integers(0, 5, size=len(states))
    np_obs = []
    for row, action in zip(states, actions):
        env.set_state(DoorsState(*(np.int32(v) for v in row)))
        obs, *_ = env.step(int(action))
        assert env.observation_space.contains(obs)
        np_obs.append(obs)
    batch = DoorsState(*(jnp.asarray(states[:, i], dtype=jnp.int32) for i in range(5)))
    obs, *_ = batched_env_step()(batch, jnp.asarray(actions, jnp.int32), params)
    assert obs.dtype == np_obs[0].dtype
    np.testing.assert_array_equal(np.asarray(obs), np.stack(np_obs))
    # The grid mode of the same transitions, re-encoded, gives the same thing: one encoding per mode.
    grid_params = DoorsParams(**{**keywords, "obs_mode": "grid"})
    grids, *_ = batched_env_step()(batch, jnp.asarray(actions, jnp.int32), grid_params)
    if obs_mode != "coords":
        np.testing.assert_array_equal(core.encode_grid(params, np.asarray(grids)), np.stack(np_obs))

    # Vector envs of both backends from the same states.
    num_envs = 16
    np_vec = gym.make_vec("Doors-v0", num_envs, **keywords)
    jax_vec = gym.make_vec("DoorsJax-v0", num_envs, **keywords)
    assert np_vec.single_observation_space == jax_vec.single_observation_space == env.observation_space
    np_vec.reset(seed=0)
    jax_vec.reset(seed=0)
    start = DoorsState(*(states[:num_envs, i].astype(np.int32) for i in range(5)))
    np.testing.assert_array_equal(np_vec.unwrapped.set_state(start), jax_vec.unwrapped.set_state(start))
    restarted = np.zeros(num_envs, dtype=bool)
    for vector_actions in rng.integers(0, 5, size=(20, num_envs)):
        np_out, jax_out = np_vec.step(vector_actions)[0], jax_vec.step(vector_actions)[0]
        # Envs that autoreset on this step drew their starts from different generators: copy them over.
        np.testing.assert_array_equal(np_out[~restarted], jax_out[~restarted])
        if restarted.any():
            np_vec.unwrapped.set_state(jax_vec.unwrapped.state, restarted)
        restarted = np.asarray(np_vec.unwrapped._needs_reset).copy()
