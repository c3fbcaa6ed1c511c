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
from stacks import needs

jax = needs("jax")
import jax.numpy as jnp  # noqa: E402

import doors_gym  # noqa: E402, F401  (registers the ids)
from doors_gym import core  # noqa: E402
from doors_gym.core import MOVES, STAY, WALL, DoorsParams, DoorsState  # noqa: E402
from doors_gym.envs.doors import DoorsEnv  # noqa: E402
from doors_gym.jax import functional as F  # noqa: E402
from doors_gym.levels import LEVELS  # noqa: E402
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


def assert_vector_steps_agree(np_step: tuple, jax_step: tuple, restarted: np.ndarray) -> None:
    """One ``step`` of both vector envs gives the same arrays, but for the observations and distances of the envs
    that autoreset in it (``restarted``)."""
    np_obs, np_reward, np_terminated, np_truncated, np_info = np_step
    jax_obs, jax_reward, jax_terminated, jax_truncated, jax_info = jax_step
    for output in (jax_obs, jax_reward, jax_terminated, jax_truncated, jax_info["distance"]):
        assert isinstance(output, np.ndarray)
    assert jax_obs.dtype == np_obs.dtype == np.int16
    # float64 arrays, as SyncVectorEnv returns rewards, holding the rules' float32 values exactly.
    assert jax_reward.dtype == np_reward.dtype == np.float64
    np.testing.assert_array_equal(np_reward.astype(np.float32), np_reward)

    kept = ~restarted
    # The starts of autoreset envs differ (different generators) until copied over.
    np.testing.assert_array_equal(jax_obs[kept], np_obs[kept])
    np.testing.assert_array_equal(jax_info["distance"][kept], np_info["distance"][kept])
    np.testing.assert_array_equal(jax_reward, np_reward)
    np.testing.assert_array_equal(jax_terminated, np_terminated)
    np.testing.assert_array_equal(jax_truncated, np_truncated)
    assert not np_reward[restarted].any() and not np_terminated[restarted].any()
    assert not np_truncated[restarted].any()


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

    np_obs, _ = np_env.reset(seed=5)
    jax_env.reset(seed=5)
    jax_obs = jax_env.unwrapped.set_state(np_env.unwrapped.state)
    assert isinstance(jax_obs, np.ndarray)
    np.testing.assert_array_equal(jax_obs, np_obs)

    restart_steps: list[list[int]] = [[] for _ in range(num_envs)]
    ended = np.zeros(num_envs, dtype=bool)
    num_terminated = num_truncated = 0
    for t in range(150):
        actions = np.where(rng.random(num_envs) < noise, rng.integers(0, 5, num_envs), oracle(np_obs))
        np_step = np_env.step(actions)
        jax_step = jax_env.step(actions)
        # The envs that ended on the previous step autoreset on this one.
        restarted = ended
        assert_vector_steps_agree(np_step, jax_step, restarted)
        np_obs, _, np_terminated, np_truncated, _ = np_step

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
    stats = needs("scipy.stats")
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


@pytest.mark.parametrize("obs_mode", ["onehot", "rgb", "coords", "flat"])
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


# ---------------------------------------------------------------------------------------------------------------
# The levels of the Doors suite: more walls, doors drawn per episode, larger grids (SPEC.md, "Levels").

LEVEL_TRANSITIONS = 100_000
LEVEL_ENVS, LEVEL_STEPS = 500, 200
"""500 native vector envs for 200 steps: 100,000 transitions per level."""


def level_test_limit(params: DoorsParams) -> int:
    """A time limit shorter than the level's (40 steps on 15 x 15, 157 on 63 x 63), so that envs end episodes both
    ways and autoreset within the run; the rules compared do not depend on it."""
    return 2 * params.height + params.width // 2 + 3


def guided_actions(params: DoorsParams, state: DoorsState, rng: np.random.Generator) -> np.ndarray:
    """Actions toward the goal through the nearest door of the next wall up (70 %) or uniform (30 %), per env.

    The goal is always on row 0, so the guide never goes down; enough episodes reach it to compare terminations.
    """
    agent_row, agent_col = np.asarray(state.agent_row), np.asarray(state.agent_col)
    doors = np.asarray(core.episode_doors(params, state))
    rows = np.asarray(params.wall_rows)
    above = rows[None, :] < agent_row[:, None]
    wall = np.where(above.any(axis=1), above.shape[1] - 1 - np.argmax(above[:, ::-1], axis=1), 0)
    wall_doors = doors[np.arange(len(wall)), wall]
    nearest = wall_doors[np.arange(len(wall)), np.argmin(np.abs(wall_doors - agent_col[:, None]), axis=1)]
    target = np.where(above.any(axis=1), nearest, np.asarray(state.goal_col))
    guided = np.where(agent_col < target, core.RIGHT, np.where(agent_col > target, core.LEFT, core.UP))
    return np.where(rng.random(len(wall)) < 0.7, guided, rng.integers(0, 5, len(wall)))


def to_jax_state_with_doors(state: DoorsState) -> DoorsState:
    return core.map_state(lambda field: jnp.asarray(np.asarray(field), dtype=jnp.int32), state)


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.name)
def test_level_transitions_identical_with_autoresets(level):
    """>= 100k transitions per level: the native vector env's every step (autoresets included) against JAX's
    ``env_step`` from the same states, doors included; reset observations against JAX's ``observation``."""
    assert LEVEL_ENVS * LEVEL_STEPS >= LEVEL_TRANSITIONS
    limit = level_test_limit(level.params())
    envs = gym.make_vec(level.env_id, LEVEL_ENVS, max_episode_steps=limit)
    params = envs.unwrapped.params
    assert params == level.params(max_episode_steps=limit)
    step, observe = batched_env_step(), jax.jit(F.observation, static_argnums=1)
    rng = np.random.default_rng(31)
    obs, _ = envs.reset(seed=3)
    counts = {"compared": 0, "autoreset": 0, "terminated": 0, "truncated": 0, "stayed": 0}
    for _ in range(LEVEL_STEPS):
        before = envs.unwrapped.state
        actions = guided_actions(params, before, rng)
        resetting = np.asarray(envs.unwrapped._needs_reset).copy()
        obs, reward, terminated, truncated, info = envs.step(actions)
        after = envs.unwrapped.state
        jax_obs, jax_next, jax_reward, jax_terminated, jax_truncated, jax_info = step(
            to_jax_state_with_doors(before), jnp.asarray(actions, jnp.int32), params
        )
        kept = ~resetting
        np.testing.assert_array_equal(np.asarray(jax_obs)[kept], obs[kept])
        np.testing.assert_array_equal(np.asarray(jax_reward)[kept], reward[kept].astype(np.float32))
        np.testing.assert_array_equal(np.asarray(jax_terminated)[kept], terminated[kept])
        np.testing.assert_array_equal(np.asarray(jax_truncated)[kept], truncated[kept])
        np.testing.assert_array_equal(np.asarray(jax_info["distance"])[kept], info["distance"][kept])
        for jax_field, np_field in zip(jax_next, after):
            if np_field is None:
                assert jax_field is None
            else:
                np.testing.assert_array_equal(np.asarray(jax_field)[kept], np_field[kept])
        # Autoreset envs: their new episode (doors included) is drawn as JAX's observation draws it.
        reset_obs = np.asarray(observe(to_jax_state_with_doors(after), params))
        np.testing.assert_array_equal(reset_obs[resetting], obs[resetting])
        moved = (np.asarray(before.agent_row) != after.agent_row) | (np.asarray(before.agent_col) != after.agent_col)
        counts["stayed"] += int((kept & ~moved & (actions != STAY)).sum())
        counts["compared"] += int(kept.sum())
        counts["autoreset"] += int(resetting.sum())
        counts["terminated"] += int(terminated.sum())
        counts["truncated"] += int(truncated.sum())
    assert counts["compared"] + counts["autoreset"] == LEVEL_ENVS * LEVEL_STEPS
    assert all(count > 0 for count in counts.values()), counts
    print(f"parity {level.name}: {counts} (0 mismatches)")  # shown with pytest -s


@pytest.mark.parametrize("level", LEVELS[1:3], ids=lambda level: level.name)
def test_level_episodes_in_lockstep_single_env(level):
    """The single NumPy env (its per-episode tables) and JAX's ``env_step``, whole episodes from the same reset."""
    env = gym.make(level.env_id).unwrapped
    params = env.params
    step = single_env_step()
    rng = np.random.default_rng(5)
    layouts = set()
    for episode in range(6):
        obs, info = env.reset(seed=200 + episode)
        state = to_jax_state_with_doors(env.state)
        layouts.add(np.asarray(state.doors).tobytes())
        np.testing.assert_array_equal(np.asarray(F.observation(state, params)), obs)
        for _ in range(level.max_episode_steps):
            action = int(rng.integers(0, 5))
            obs, reward, terminated, truncated, info = env.step(action)
            jax_obs, state, jax_reward, jax_terminated, jax_truncated, jax_info = step(state, action, params)
            np.testing.assert_array_equal(np.asarray(jax_obs), obs)
            assert (np.float32(reward), terminated) == (jax_reward, bool(jax_terminated))
            np.testing.assert_array_equal(np.asarray(state.doors), env.state.doors)
            if terminated:
                break
    assert len(layouts) > 1, "every episode had the same doors"


def test_jax_vector_env_autoresets_draw_new_doors_and_match_numpy():
    """``DoorsJax-Random-v0``'s vector env against the native one: states copied over after each autoreset."""
    num_envs = 16
    np_env = gym.make_vec("Doors-Random-v0", num_envs, max_episode_steps=12)
    jax_env = gym.make_vec("DoorsJax-Random-v0", num_envs, max_episode_steps=12)
    np_obs, _ = np_env.reset(seed=1)
    jax_env.reset(seed=1)
    np.testing.assert_array_equal(jax_env.unwrapped.set_state(np_env.unwrapped.state), np_obs)
    rng = np.random.default_rng(2)
    ended = np.zeros(num_envs, dtype=bool)
    new_doors = 0
    for actions in rng.integers(0, 5, size=(60, num_envs)):
        doors_before = np.asarray(jax_env.unwrapped.state.doors).copy()
        np_obs, np_reward, np_terminated, np_truncated, _ = np_env.step(actions)
        jax_obs, jax_reward, jax_terminated, jax_truncated, _ = jax_env.step(actions)
        kept = ~ended
        np.testing.assert_array_equal(jax_obs[kept], np_obs[kept])
        np.testing.assert_array_equal(jax_reward, np_reward)
        np.testing.assert_array_equal(jax_terminated, np_terminated)
        np.testing.assert_array_equal(jax_truncated, np_truncated)
        doors_after = np.asarray(jax_env.unwrapped.state.doors)
        np.testing.assert_array_equal(doors_after[kept], doors_before[kept])  # a step never changes the doors
        new_doors += int((doors_after[ended] != doors_before[ended]).any(axis=(1, 2)).sum())
        if ended.any():
            jax_env.unwrapped.set_state(np_env.unwrapped.state, ended)
        ended = np_terminated | np_truncated
    assert new_doors > 0, "no autoreset drew new doors"


START_SAMPLES = 20_000
FALSE_ALARM = 1e-4
"""Each chi-square check fails a correct implementation with probability ``FALSE_ALARM``; a level runs at most 4 + 4
* n_walls checks of each kind (two-sample and uniformity), so a correct level fails less than 0.5 % of fixed seeds."""


def door_set_index(doors: np.ndarray, width: int) -> np.ndarray:
    """``(..., n_doors)`` ascending columns to an index of the set, ``sum(2**col)`` (exact up to 62 columns) or, on
    wider grids, the smallest column times ``W`` plus the largest (a coarser statistic of the set)."""
    if width <= 20:
        return (np.left_shift(1, doors.astype(np.int64))).sum(axis=-1)
    return doors[..., 0].astype(np.int64) * width + doors[..., -1]


def start_statistics(starts: DoorsState, params: DoorsParams) -> dict[str, np.ndarray]:
    """The values SPEC.md's start distribution covers: agent column, goal column and each wall's door set."""
    values = {"agent column": np.asarray(starts.agent_col), "goal column": np.asarray(starts.goal_col)}
    if params.random_doors:
        doors = np.asarray(starts.doors)
        for wall in range(params.n_walls):
            values[f"wall {wall} door set"] = door_set_index(doors[:, wall], params.width)
            values[f"wall {wall} door columns"] = doors[:, wall].reshape(-1)
    return values


def chi_square_same(first: np.ndarray, second: np.ndarray) -> float:
    """p-value of a chi-square test that two samples of integers come from one distribution."""
    stats = needs("scipy.stats")
    values, codes = np.unique(np.concatenate([first, second]), return_inverse=True)
    counts = [np.bincount(part, minlength=len(values)) for part in (codes[: len(first)], codes[len(first) :])]
    table = np.stack(counts)
    return float(stats.chi2_contingency(table).pvalue)


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.name)
def test_level_start_distributions_agree(level):
    """Starts of the native vector env (NumPy generators) and of JAX's ``batch_reset`` and ``reset``: agent column,
    goal column and each wall's door set follow one distribution (chi-square at ``FALSE_ALARM``)."""
    stats = needs("scipy.stats")
    envs = gym.make_vec(level.env_id, START_SAMPLES)
    params = envs.unwrapped.params
    envs.reset(seed=77)
    np_starts = envs.unwrapped.state
    half = START_SAMPLES // 2
    _, batch_starts = jax.jit(F.batch_reset, static_argnums=(1, 2))(jax.random.key(78), half, params)
    keys = jax.random.split(jax.random.key(79), START_SAMPLES - half)
    _, single_starts = jax.jit(jax.vmap(F.reset, in_axes=(0, None)), static_argnums=1)(keys, params)
    jax_starts = jax.tree.map(lambda a, b: np.concatenate([np.asarray(a), np.asarray(b)]), batch_starts, single_starts)
    for starts in (np_starts, jax_starts):
        assert (np.asarray(starts.agent_row) == params.height - 1).all() and (np.asarray(starts.goal_row) == 0).all()
    np_values, jax_values = start_statistics(np_starts, params), start_statistics(jax_starts, params)
    for name, np_sample in np_values.items():
        p_value = chi_square_same(np_sample, jax_values[name])
        assert p_value > FALSE_ALARM, f"{level.name}, {name}: NumPy and JAX differ (p = {p_value:.2g})"
    for values in (np_values, jax_values):
        uniform = [name for name in values if name.endswith("column") or name.endswith("door columns")]
        for name in uniform:
            counts = np.bincount(values[name], minlength=params.width)
            assert stats.chisquare(counts).pvalue > FALSE_ALARM, f"{level.name}, {name}: not uniform"
    if params.random_doors:  # the test has power: door sets that never hold column 0 are told apart
        first_wall = np.asarray(np_starts.doors)[:, 0]
        biased = first_wall[~(first_wall == 0).any(axis=-1)].reshape(-1)
        assert chi_square_same(biased, jax_values["wall 0 door columns"]) < FALSE_ALARM


@pytest.mark.parametrize("obs_mode", ["flat", "onehot", "rgb"])
@pytest.mark.parametrize("level", LEVELS[1:], ids=lambda level: level.name)
def test_level_observation_variants_identical(level, obs_mode):
    """Every observation mode at every random level: the native vector env's steps against JAX's ``env_step``."""
    num_envs = 16
    envs = gym.make_vec(level.env_id, num_envs, obs_mode=obs_mode, cell_pixels=2, max_episode_steps=10)
    params = envs.unwrapped.params
    rng = np.random.default_rng(8)
    envs.reset(seed=4)
    for _ in range(12):
        before = envs.unwrapped.state
        kept = ~np.asarray(envs.unwrapped._needs_reset)
        actions = guided_actions(params, before, rng)
        obs = envs.step(actions)[0]
        jax_obs = batched_env_step()(to_jax_state_with_doors(before), jnp.asarray(actions, jnp.int32), params)[0]
        assert np.asarray(jax_obs).dtype == obs.dtype and obs in envs.observation_space
        np.testing.assert_array_equal(np.asarray(jax_obs)[kept], obs[kept])
