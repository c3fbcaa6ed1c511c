"""Tabular Q-learning: config checks, the TD update by hand, whole runs traced step by step, agents under vmap,
and the greedy evaluation against the oracle."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from doors_gym import oracle
from doors_gym.core import NUM_ACTIONS, DoorsParams
from doors_gym_qtable import QConfig, greedy_evaluation, make_parts, make_train, td_update

COLUMN = DoorsParams(grid_size=(3, 1), n_doors=1, max_episode_steps=20)
"""Three cells in a column, the door in the middle: the agent starts at the bottom, the goal is at the top, two
``up`` moves apart. The table's rows are the cells (one goal column): row 2 is the start, row 0 the goal."""

HAND_CONFIG = QConfig(learning_rate=1.0, gamma=0.5, initial_value=1.0, total_steps=11, eval_every=0)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("learning_rate", 0.0, r"learning_rate=0.0 is out of range: expected a number in \(0, 1\]"),
        ("learning_rate", 1.5, r"learning_rate=1.5 is out of range"),
        ("gamma", 1.0, r"gamma=1.0 is out of range: expected a number in \[0, 1\)"),
        ("gamma", -0.1, r"gamma=-0.1 is out of range"),
        ("start_epsilon", 1.1, r"start_epsilon=1.1 is out of range: expected a number in \[0, 1\]"),
        ("end_epsilon", "0.1", r"end_epsilon='0.1' is out of range"),
        ("exploration_fraction", True, r"exploration_fraction=True is out of range"),
        ("initial_value", float("nan"), r"initial_value=nan is out of range: expected a finite number"),
        ("num_envs", 0, r"num_envs=0 is out of range: expected an integer >= 1"),
        ("total_steps", 2.5, r"total_steps=2.5 is out of range: expected an integer >= 1"),
        ("eval_every", -1, r"eval_every=-1 is out of range: expected an integer >= 0"),
        ("eval_every", 3_000, r"eval_every=3000 is invalid: expected 0 or a multiple of num_envs=1 that divides"),
    ],
)
def test_config_names_the_bad_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        QConfig(**{field: value})


def test_config_needs_total_steps_a_multiple_of_num_envs():
    with pytest.raises(ValueError, match=r"total_steps=1000 is invalid: expected a multiple of num_envs=3"):
        QConfig(num_envs=3, total_steps=1000, eval_every=0)


def test_config_derived_values():
    config = QConfig(num_envs=4, total_steps=8_000, eval_every=2_000, start_epsilon=1.0, end_epsilon=0.1)
    assert (config.num_iterations, config.num_evaluations) == (2_000, 4)
    assert config.evaluation_steps.tolist() == [2_000, 4_000, 6_000, 8_000]
    epsilons = [config.epsilon(step) for step in (0, 2_000, 4_000, 8_000)]
    assert epsilons == pytest.approx([1.0, 0.55, 0.1, 0.1])


def test_td_update_bootstraps_on_truncation_not_on_termination():
    q_rows = jnp.asarray(np.arange(20, dtype=np.float32).reshape(4, NUM_ACTIONS) / 10)
    rows, actions = jnp.array([0, 1]), jnp.array([2, 4])
    rewards, final_rows = jnp.array([0.5, -0.25], jnp.float32), jnp.array([3, 3])
    terminated = jnp.array([True, False])  # the second transition is truncated (or not ended): it bootstraps
    updated = np.asarray(td_update(q_rows, rows, actions, rewards, final_rows, terminated, 0.5, 0.9))

    expected = np.asarray(q_rows).copy()
    expected[0, 2] = 0.2 + 0.5 * (0.5 - 0.2)  # terminated: the target is the reward alone
    expected[1, 4] = 0.9 + 0.5 * (-0.25 + 0.9 * 1.9 - 0.9)  # max over row 3 is 1.9
    np.testing.assert_allclose(updated, expected, rtol=1e-6)
    assert np.count_nonzero(updated != np.asarray(q_rows)) == 2


def test_td_update_moves_an_entry_shared_by_several_transitions_once():
    q_rows = jnp.zeros((3, NUM_ACTIONS), jnp.float32).at[2].set(1.0)
    args = dict(rewards=jnp.array([1.0, 1.0]), final_rows=jnp.array([2, 2]), terminated=jnp.array([False, False]))
    twice = td_update(q_rows, jnp.array([0, 0]), jnp.array([3, 3]), learning_rate=1.0, gamma=0.5, **args)
    once = td_update(
        q_rows, jnp.array([0]), jnp.array([3]), jnp.array([1.0]), jnp.array([2]), jnp.array([False]), 1.0, 0.5
    )
    np.testing.assert_array_equal(np.asarray(twice), np.asarray(once))
    assert float(once[0, 3]) == 1.5


def test_a_run_follows_the_hand_computed_updates():
    # Learning rate 1, gamma 0.5, every value 1 at first, ties to the lowest action. From the start the agent
    # tries stay, right, down, left (no move: 0 + 0.5 * 1), then up (reward 1, to row 1: 1 + 0.5 * 1); in row 1
    # stay and right (0.5), down back to the start (-1 + 0.5 * 1.5), up again (1.5), left (0.5), and up onto
    # the goal: terminated, so 1 + 0 (bootstrapping there would give 1.5).
    output = jax.jit(make_train(HAND_CONFIG, COLUMN))(jax.random.key(0))
    q_rows = np.asarray(output.q_table).reshape(3, NUM_ACTIONS)
    np.testing.assert_array_equal(q_rows[0], [1.0] * 5)
    np.testing.assert_array_equal(q_rows[1], [0.5, 0.5, -0.25, 0.5, 1.0])
    np.testing.assert_array_equal(q_rows[2], [0.5, 0.5, 0.5, 0.5, 1.5])
    np.testing.assert_array_equal(output.metrics.reward_per_step, [0, 0, 0, 0, 1, 0, 0, -1, 1, 0, 1])
    np.testing.assert_array_equal(output.metrics.episodes, [0] * 10 + [1])
    np.testing.assert_array_equal(output.metrics.successes, [0] * 10 + [1])


def test_truncation_bootstraps_from_the_final_state_not_the_next_start():
    # The same run cut at 6 steps: the 6th (stay in row 1) is truncated. Its target bootstraps from row 1, where
    # it ended (0 + 0.5 * 1); the next episode's start (row 2, max 1.5) would give 0.75, termination 0.
    params = dataclasses.replace(COLUMN, max_episode_steps=6)
    output = make_train(dataclasses.replace(HAND_CONFIG, total_steps=6), params)(jax.random.key(0))
    assert float(output.q_table[1, 0, 0]) == 0.5
    assert output.metrics.episodes.tolist() == [0] * 5 + [1] and int(output.metrics.successes.sum()) == 0


@pytest.fixture(scope="module")
def three_agents():
    """Agents 0 and 2 share a key, agent 1 has its own: a short exploring run on the default layout."""
    config = QConfig(total_steps=6_000, eval_every=2_000, start_epsilon=0.2, end_epsilon=0.0)
    first, second = jax.random.split(jax.random.key(7))
    return jax.jit(jax.vmap(make_train(config)))(jnp.stack([first, second, first]))


def test_vmapped_agents_with_the_same_key_are_equal_and_with_others_differ(three_agents):
    for leaf in jax.tree.leaves(three_agents):
        leaf = np.asarray(leaf)
        np.testing.assert_array_equal(leaf[0], leaf[2])
    assert not np.array_equal(three_agents.q_table[0], three_agents.q_table[1])
    assert not np.array_equal(three_agents.metrics.reward_per_step[0], three_agents.metrics.reward_per_step[1])


def test_output_shapes_and_dtypes(three_agents):
    assert three_agents.q_table.shape == (3, 225, 15, NUM_ACTIONS) and three_agents.q_table.dtype == jnp.float32
    assert [leaf.shape for leaf in three_agents.metrics] == [(3, 6_000)] * 3
    assert [leaf.dtype for leaf in three_agents.metrics] == [jnp.float32, jnp.int32, jnp.int32]
    assert [leaf.shape for leaf in three_agents.evaluation] == [(3, 3)] * 3
    assert np.all(three_agents.metrics.successes <= three_agents.metrics.episodes)


def test_the_parts_replay_the_whole_run():
    config = QConfig(total_steps=3_000, eval_every=1_500)
    whole = jax.jit(make_train(config))(jax.random.key(3))
    parts = make_parts(config)
    runner = parts.init(jax.random.key(3))
    segment = jax.jit(parts.run_segment)
    for index in range(parts.num_segments):
        runner, (metrics, evaluation) = segment(runner, jnp.int32(index))
        assert float(evaluation.success_rate) == float(whole.evaluation.success_rate[index])
    # Two programs (the whole scan, the segments apart): XLA promises the same values to float tolerance only.
    np.testing.assert_allclose(runner.q_table.reshape(whole.q_table.shape), whole.q_table, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(metrics.reward_per_step, whole.metrics.reward_per_step[1_500:], rtol=1e-5, atol=1e-6)


def test_a_segment_longer_than_a_draw_block_keeps_every_step():
    output = jax.jit(make_train(QConfig(total_steps=2_500, eval_every=0)))(jax.random.key(1))
    assert output.metrics.episodes.shape == (2_500,)
    assert int(output.metrics.episodes.sum()) >= 2_500 // 60  # an episode ends at least every 60 steps


def test_a_short_training_beats_the_untrained_table():
    params = DoorsParams()
    untrained = greedy_evaluation(jnp.full((params.num_cells, params.width, NUM_ACTIONS), 2.0), params)
    assert float(untrained.success_rate) == 0.0  # every tie goes to "stay"
    trained = jax.jit(make_train(QConfig(total_steps=30_000, eval_every=0)))(jax.random.key(0))
    assert float(trained.evaluation.success_rate[-1]) > 0.9
    assert float(trained.evaluation.mean_step_reward[-1]) > float(untrained.mean_step_reward)


def oracle_table(params: DoorsParams) -> np.ndarray:
    """A table whose greedy action is the oracle's in every cell, for every goal column."""
    q_table = np.zeros((params.num_cells, params.width, NUM_ACTIONS), np.float32)
    for goal_col in range(params.width):
        actions = oracle.greedy_actions(params, goal_col)  # the goal's cell index is its column (row 0)
        q_table[np.arange(params.num_cells), goal_col, actions] = 1.0
    return q_table


@pytest.mark.parametrize("params", [DoorsParams(), DoorsParams(grid_size=(5, 4), n_doors=1)], ids=["default", "5x4"])
def test_greedy_evaluation_of_the_oracle_matches_the_oracle(params):
    figures = oracle.evaluate_oracle(params)
    evaluation = jax.jit(greedy_evaluation, static_argnums=1)(jnp.asarray(oracle_table(params)), params)
    assert float(evaluation.success_rate) == 1.0
    assert float(evaluation.normalised_return) == pytest.approx(1.0, abs=1e-6)
    assert float(evaluation.mean_step_reward) == pytest.approx(figures.mean_step_reward, rel=1e-5)
    if params == DoorsParams():
        assert round(float(evaluation.mean_step_reward), 3) == 0.776
