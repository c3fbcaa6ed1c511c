"""The shortest-path oracle: its figures on the default layout and its paths against an independent search."""

import collections
import itertools
import math

import gymnasium as gym
import numpy as np
import pytest

from doors_gym.core import AGENT, GOAL, STAY, DoorsParams
from doors_gym.envs.doors import DoorsEnv
from doors_gym.levels import LEVEL_NAMES, get_level
from doors_gym.oracle import (
    UNREACHABLE,
    OraclePolicy,
    distance_field,
    enumerated_figures,
    evaluate_oracle,
    greedy_actions,
    level_figures,
    optimal_action,
    optimal_steps,
    optimality_gap,
    oracle_action,
    pair_lengths,
    path_lengths,
)


@pytest.fixture(scope="module")
def default_figures():
    return evaluate_oracle()


def test_default_layout_figures_match_the_spec(default_figures):
    assert default_figures.success_rate == 1.0
    assert abs(default_figures.mean_step_reward - 0.776) < 5e-4
    assert round(default_figures.mean_step_reward, 3) == 0.776
    assert default_figures.longest_path == 28
    assert default_figures.returns.shape == default_figures.lengths.shape == default_figures.success.shape == (15, 15)


def test_default_layout_lengths_are_shortest_paths_and_returns_telescope(default_figures, reference):
    """Every pair takes the fewest steps (independent BFS) and returns its start distance."""
    params = DoorsParams()
    shortest = np.zeros((15, 15), dtype=np.int64)
    for goal_col in range(15):
        lengths = reference.path_lengths(params, (0, goal_col))
        for agent_col in range(15):
            shortest[agent_col, goal_col] = lengths[(14, agent_col)]
            start_distance = math.hypot(14, agent_col - goal_col)
            assert default_figures.returns[agent_col, goal_col] == pytest.approx(start_distance, abs=1e-4)
    np.testing.assert_array_equal(default_figures.lengths, shortest)
    assert default_figures.longest_path == shortest.max()


def test_mean_step_reward_is_total_return_over_total_steps(default_figures):
    expected_returns = np.array([[math.hypot(14, a - g) for g in range(15)] for a in range(15)])
    expected = expected_returns.sum() / default_figures.lengths.sum()
    assert default_figures.mean_step_reward == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    "params",
    [
        DoorsParams(grid_size=(9, 21), n_doors=4),
        DoorsParams(grid_size=(7, 11), door_cols=(10,)),
        DoorsParams(grid_size=(3, 1), n_doors=1),
        DoorsParams(grid_size=(12, 6), door_cols=(2, 3)),
    ],
    ids=["9x21-4-doors", "7x11-last-column", "3x1", "12x6-adjacent-doors"],
)
def test_oracle_always_succeeds_on_other_layouts(params, reference):
    figures = evaluate_oracle(params)
    assert figures.success_rate == 1.0
    assert figures.success.all()
    for goal_col in range(params.width):
        shortest = reference.path_lengths(params, (0, goal_col))
        for agent_col in range(params.width):
            assert figures.lengths[agent_col, goal_col] == shortest[(params.height - 1, agent_col)]
    assert figures.longest_path <= params.max_episode_steps


def test_oracle_fails_when_the_limit_is_shorter_than_the_path():
    figures = evaluate_oracle(DoorsParams(), max_episode_steps=14)
    # From the bottom row the goal is at least 14 rows away: only straight paths up a door column fit.
    expected = np.zeros((15, 15), dtype=bool)
    for door in (0, 5, 10):
        expected[door, door] = True
    np.testing.assert_array_equal(figures.success, expected)
    assert figures.success_rate == pytest.approx(3 / 225)


@pytest.mark.parametrize("params", [DoorsParams(), DoorsParams(grid_size=(9, 21), n_doors=4)], ids=["default", "9x21"])
def test_path_lengths_against_breadth_first_search(params, reference):
    for goal in [(0, 0), (0, params.width - 1), (params.height - 1, 3), (params.wall_row, params.door_cols[-1])]:
        goal_cell = goal[0] * params.width + goal[1]
        lengths = path_lengths(params, goal_cell)
        assert lengths.dtype == np.int32
        assert lengths.shape == (params.num_cells,)
        assert lengths[goal_cell] == 0
        expected = reference.path_lengths(params, goal)
        for row in range(params.height):
            for col in range(params.width):
                cell = row * params.width + col
                if row == params.wall_row and col not in params.door_cols:
                    assert lengths[cell] == UNREACHABLE
                else:
                    assert lengths[cell] == expected[(row, col)]


def test_greedy_actions_shorten_the_path_and_prefer_larger_rewards(reference):
    params = DoorsParams()
    goal = (0, 7)
    goal_cell = goal[1]
    actions = greedy_actions(params, goal_cell)
    lengths = reference.path_lengths(params, goal)
    assert actions[goal_cell] == STAY
    for (row, col), length in lengths.items():
        if (row, col) == goal:
            continue
        action = int(actions[row * params.width + col])
        after = reference.move(params, row, col, action)
        assert lengths[after] == length - 1
        best = max(
            reference.reward((row, col), reference.move(params, row, col, a), goal)
            for a in range(5)
            if lengths.get(reference.move(params, row, col, a)) == length - 1
        )
        assert reference.reward((row, col), after, goal) == best


def test_oracle_policy_on_single_observations_and_batches():
    params = DoorsParams()
    policy = OraclePolicy(params)
    env = DoorsEnv()
    single_observations = []
    single_actions = []
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        action = policy(obs)
        assert isinstance(action, int)
        assert 0 <= action < 5
        single_observations.append(obs)
        single_actions.append(action)
    batch = np.stack(single_observations)
    batch_actions = policy(batch)
    assert isinstance(batch_actions, np.ndarray)
    assert batch_actions.shape == (6,)
    np.testing.assert_array_equal(batch_actions, single_actions)
    nested = policy(batch.reshape(2, 3, -1))
    assert nested.shape == (2, 3)
    np.testing.assert_array_equal(nested.reshape(-1), single_actions)


def test_oracle_policy_reaches_every_goal_in_the_fewest_steps(reference):
    params = DoorsParams()
    policy = OraclePolicy(params)
    env = DoorsEnv(max_episode_steps=60)
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        grid = obs.reshape(15, 15)
        agent = tuple(np.argwhere(grid == AGENT)[0])
        goal = tuple(np.argwhere(grid == GOAL)[0])
        steps = 0
        terminated = truncated = False
        while not (terminated or truncated):
            obs, _, terminated, truncated, _ = env.step(policy(obs))
            steps += 1
        assert terminated
        assert steps == reference.path_lengths(params, goal)[agent]


def test_oracle_policy_stays_when_no_goal_is_visible_and_rejects_wrong_shapes():
    params = DoorsParams()
    policy = OraclePolicy(params)
    env = DoorsEnv()
    env.reset(options={"agent_pos": (1, 3), "goal_pos": (0, 3)})
    obs, _, terminated, _, _ = env.step(4)
    assert terminated
    assert policy(obs) == STAY
    with pytest.raises(ValueError, match="225"):
        policy(np.zeros(100, dtype=np.int8))


# --- the search on any wall mask, NumPy and JAX -----------------------------------------------------------------


def mask_search(walls: np.ndarray, goal: tuple[int, int]) -> np.ndarray:
    """A plain queue BFS over the open cells of ``walls`` (4 neighbours inside the grid): the reference."""
    height, width = walls.shape
    lengths = np.full((height, width), UNREACHABLE, dtype=np.int64)
    if walls[goal]:
        return lengths
    lengths[goal] = 0
    queue = collections.deque([goal])
    while queue:
        row, col = queue.popleft()
        for d_row, d_col in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nxt = (row + d_row, col + d_col)
            if 0 <= nxt[0] < height and 0 <= nxt[1] < width and not walls[nxt] and lengths[nxt] == UNREACHABLE:
                lengths[nxt] = lengths[row, col] + 1
                queue.append(nxt)
    return lengths


def mask_move(walls: np.ndarray, cell: tuple[int, int], action: int) -> tuple[int, int]:
    """SPEC's move rule on a wall mask, in plain Python: clip to the grid, stay if the target is a wall."""
    d_row, d_col = {0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (0, -1), 4: (-1, 0)}[action]
    target = (min(max(cell[0] + d_row, 0), walls.shape[0] - 1), min(max(cell[1] + d_col, 0), walls.shape[1] - 1))
    return cell if walls[target] else target


def random_masks(seed: int, count: int, shape: tuple[int, int], density: float) -> np.ndarray:
    """Scattered walls (closed pockets included), not only wall rows: the search knows nothing of levels."""
    return np.random.default_rng(seed).random((count, *shape)) < density


@pytest.mark.parametrize("shape", [(7, 9), (1, 6), (5, 1), (12, 4)], ids=["7x9", "1x6", "5x1", "12x4"])
def test_distance_field_matches_a_queue_search_on_random_masks(shape):
    masks = random_masks(1, 12, shape, 0.3)
    rng = np.random.default_rng(2)
    goals = [(int(rng.integers(shape[0])), int(rng.integers(shape[1]))) for _ in masks]
    batched = distance_field(masks, np.array([g[0] for g in goals]), np.array([g[1] for g in goals]))
    assert batched.shape == masks.shape
    assert batched.dtype == np.int32
    for walls, goal, field in zip(masks, goals, batched):
        np.testing.assert_array_equal(field, mask_search(walls, goal))
        np.testing.assert_array_equal(distance_field(walls, *goal), field)


def test_distance_field_broadcasts_one_layout_over_many_goals():
    walls = random_masks(3, 1, (6, 8), 0.25)[0]
    cols = np.arange(8)
    fields = distance_field(walls, 0, cols)
    assert fields.shape == (8, 6, 8)
    for col in cols:
        np.testing.assert_array_equal(fields[col], mask_search(walls, (0, int(col))))


def test_optimal_action_walks_a_shortest_path_to_every_goal():
    """Following the oracle from every open cell reaches the goal in exactly the searched distance."""
    for walls in random_masks(4, 6, (6, 7), 0.25):
        goal = tuple(int(v) for v in np.argwhere(~walls)[0])
        field = distance_field(walls, *goal)
        for start in map(tuple, np.argwhere(field < UNREACHABLE)):
            cell, steps = start, 0
            while cell != goal and steps <= walls.size:
                cell = mask_move(walls, cell, int(optimal_action(field, *cell, *goal)))
                steps += 1
            assert cell == goal
            assert steps == field[start]
        cut_off = np.argwhere(field == UNREACHABLE)
        if len(cut_off):
            actions = optimal_action(field, cut_off[:, 0], cut_off[:, 1], goal[0], goal[1])
            assert (actions == STAY).all()


def test_optimality_gap_is_one_minus_success_weighted_by_path_length():
    gap = optimality_gap(np.array([20, 20, 20, 0]), np.array([20, 25, 60, 0]), np.array([True, True, False, True]))
    assert gap.dtype == np.float32
    np.testing.assert_allclose(gap, [0.0, 1 - 20 / 25, 1.0, 0.0])


@pytest.fixture(scope="module")
def jnp():
    pytest.importorskip("jax")
    import jax.numpy

    return jax.numpy


def test_jax_search_and_action_agree_with_numpy_under_jit_and_vmap(jnp):
    import jax

    masks = random_masks(5, 16, (9, 11), 0.3)
    rng = np.random.default_rng(6)
    goal_row, goal_col = rng.integers(0, 9, 16), rng.integers(0, 11, 16)
    agent_row, agent_col = rng.integers(0, 9, 16), rng.integers(0, 11, 16)
    expected = distance_field(masks, goal_row, goal_col)

    search = jax.jit(jax.vmap(lambda w, r, c: distance_field(w, r, c, jnp)))
    fields = search(masks, goal_row, goal_col)
    assert fields.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(fields), expected)
    batched = jax.jit(lambda w, r, c: distance_field(w, r, c, jnp))(masks, goal_row, goal_col)
    np.testing.assert_array_equal(np.asarray(batched), expected)

    act = jax.jit(jax.vmap(lambda *args: optimal_action(*args, xp=jnp)))
    actions = act(fields, agent_row, agent_col, goal_row, goal_col)
    expected_actions = optimal_action(expected, agent_row, agent_col, goal_row, goal_col)
    np.testing.assert_array_equal(np.asarray(actions), expected_actions)
    steps = np.asarray(fields)[np.arange(16), agent_row, agent_col]
    gap = jax.jit(lambda *args: optimality_gap(*args, xp=jnp))(steps, steps + 3, steps < UNREACHABLE)
    np.testing.assert_allclose(np.asarray(gap), optimality_gap(steps, steps + 3, steps < UNREACHABLE))


# --- every level: the policy in the envs, the JAX oracle in a compiled loop, the figures -------------------------


@pytest.mark.parametrize("name", LEVEL_NAMES)
def test_oracle_policy_reaches_the_goal_in_the_fewest_steps_at_every_level(name):
    level = get_level(name)
    env = gym.make(level.env_id)
    policy = OraclePolicy(env.unwrapped.params)
    for seed in range(3 if level.grid_size[0] > 31 else 8):
        obs, _ = env.reset(seed=seed)
        start = env.unwrapped.state
        walls = np.asarray(obs).reshape(level.grid_size) == 2
        shortest = mask_search(walls, (int(start.goal_row), int(start.goal_col)))[start.agent_row, start.agent_col]
        assert optimal_steps(env.unwrapped.params, start) == shortest
        steps, terminated, truncated = 0, False, False
        while not (terminated or truncated):
            obs, _, terminated, truncated, _ = env.step(policy(obs))
            steps += 1
        assert terminated
        assert steps == shortest


def test_oracle_policy_reads_flat_and_onehot_observations_as_the_grid():
    level = get_level("3Walls")
    envs = {mode: gym.make(level.env_id, obs_mode=mode) for mode in ("grid", "flat", "onehot")}
    observations = {mode: np.stack([env.reset(seed=s)[0] for s in range(10)]) for mode, env in envs.items()}
    actions = {mode: OraclePolicy(envs[mode].unwrapped.params)(obs) for mode, obs in observations.items()}
    assert actions["grid"].shape == (10,)
    np.testing.assert_array_equal(actions["flat"], actions["grid"])
    np.testing.assert_array_equal(actions["onehot"], actions["grid"])
    with pytest.raises(ValueError, match="rgb"):
        OraclePolicy(DoorsParams(obs_mode="rgb"))


@pytest.mark.parametrize("name", ["3Walls", "31x31"])
def test_jax_oracle_in_a_compiled_loop_walks_shortest_paths_on_each_envs_doors(jnp, name):
    """``oracle_action`` and ``optimal_steps`` under ``jit`` over a batch of random-door episodes."""
    import jax

    from doors_gym.jax import functional as F

    params = get_level(name).params()
    _, start = F.batch_reset(jax.random.key(3), 32, params)
    assert start.doors.shape == (32, params.n_walls, params.n_doors)
    assert len({np.asarray(d).tobytes() for d in start.doors}) > 1, "every env has its own doors"

    @jax.jit
    def play(state):
        def body(carry, _):
            state, steps, done = carry
            action = oracle_action(params, state, jnp)
            _, state, _, terminated, _, _ = F.env_step(state, action, params)
            return (state, steps + ~done, done | terminated), None

        carry = (state, jnp.zeros(32, jnp.int32), jnp.zeros(32, bool))
        return jax.lax.scan(body, carry, None, length=params.max_episode_steps)[0]

    _, steps, reached = play(start)
    optimal = jax.jit(lambda state: optimal_steps(params, state, jnp))(start)
    assert bool(reached.all())
    np.testing.assert_array_equal(np.asarray(steps), np.asarray(optimal))
    np.testing.assert_array_equal(np.asarray(optimal), optimal_steps(params, jax.tree.map(np.asarray, start)))
    gap = optimality_gap(optimal, steps, reached, jnp)
    assert float(gap.max()) == 0.0


def test_pair_lengths_match_one_search_per_goal_on_wide_masks():
    masks = random_masks(8, 5, (6, 70), 0.2)
    lengths = pair_lengths(masks)
    assert lengths.shape == (5, 70, 70)
    for walls, table in zip(masks, lengths):
        for goal_col in (0, 33, 64, 69):
            np.testing.assert_array_equal(table[:, goal_col], mask_search(walls, (0, goal_col))[-1])


def test_study_level_figures_are_the_played_ones_and_the_spec_solved_bar(default_figures):
    figures = level_figures("study")
    assert figures.exact and figures.layouts == 1
    assert figures.mean_step_reward == pytest.approx(default_figures.mean_step_reward, abs=1e-9)
    assert round(figures.mean_step_reward, 3) == 0.776
    assert figures.longest_path == 28
    assert figures.success_rate == 1.0
    assert figures.solved_rolling_reward == 0.75  # SPEC: "0.75 on Doors-v0"


def walls_of(height: int, width: int, doors: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """SPEC's wall rows ``(k + 1) * H // (n_walls + 1)``, written out here, with each wall's own doors."""
    walls = np.zeros((height, width), dtype=bool)
    for k, cols in enumerate(doors):
        row = (k + 1) * height // (len(doors) + 1)
        walls[row] = True
        walls[row, list(cols)] = False
    return walls


@pytest.mark.parametrize(("grid_size", "n_walls", "n_doors"), [((5, 6), 1, 2), ((7, 4), 2, 1)])
def test_enumerated_figures_count_every_layout_and_pair(grid_size, n_walls, n_doors):
    params = DoorsParams(grid_size=grid_size, n_walls=n_walls, n_doors=n_doors, doors="random")
    height, width = grid_size
    sets = list(itertools.combinations(range(width), n_doors))
    returns = steps = longest = 0
    for doors in itertools.product(sets, repeat=n_walls):
        walls = walls_of(height, width, doors)
        for goal_col in range(width):
            row = mask_search(walls, (0, goal_col))[height - 1]
            steps += row.sum()
            longest = max(longest, row.max())
            returns += sum(math.hypot(height - 1, agent_col - goal_col) for agent_col in range(width))
    figures = enumerated_figures(params)
    assert figures.exact and figures.layouts == math.comb(width, n_doors) ** n_walls
    assert figures.mean_step_reward == pytest.approx(returns / steps, rel=1e-6)
    assert figures.longest_path == longest


def test_sampled_figures_are_reproducible_and_their_interval_holds_the_exact_figure():
    estimate = level_figures("Random", 400, seed=5)
    assert not estimate.exact and estimate.layouts == 400 and estimate.seed == 5
    assert level_figures("Random", 400, seed=5) == estimate
    assert level_figures("Random", 400, seed=6).mean_step_reward != estimate.mean_step_reward
    low, high = estimate.mean_step_reward_ci
    assert low < estimate.mean_step_reward < high
    exact = enumerated_figures("Random")
    assert exact.layouts == math.comb(15, 3)
    assert low <= exact.mean_step_reward <= high
    assert estimate.longest_path <= exact.longest_path <= 14 + 2 * 14  # SPEC's bound (H - 1) + (n_walls + 1)(W - 1)
    assert enumerated_figures("63x63") is None


def test_level_figures_refuse_bad_layout_counts_and_short_limits():
    with pytest.raises(ValueError, match="layouts=1"):
        level_figures("Random", 1)
    with pytest.raises(ValueError, match="max_episode_steps=20"):
        level_figures(DoorsParams(max_episode_steps=20))
    with pytest.raises(ValueError, match="level='Nope'"):
        level_figures("Nope")


def test_oracle_policy_keeps_a_bounded_cache_and_acts_on_batches_larger_than_it():
    level = get_level("Random")
    envs = gym.make_vec(level.env_id, 12)
    policy = OraclePolicy(envs.unwrapped.params)
    policy.CACHE_SIZE = 4
    reference = OraclePolicy(envs.unwrapped.params)
    obs, _ = envs.reset(seed=0)
    for _ in range(30):
        actions = policy(obs)
        np.testing.assert_array_equal(actions, reference(obs))
        assert len(policy._fields) <= 4
        obs, *_ = envs.step(actions)
