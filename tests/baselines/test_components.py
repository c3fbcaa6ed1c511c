"""The framework-free pieces every arm shares: replay buffer, episode tracker, encoding, greedy evaluation."""

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

from doors_gym import core
from doors_gym.core import AGENT, GOAL, DoorsParams
from doors_gym.oracle import OraclePolicy, evaluate_oracle
from doors_gym_baselines.harness import evaluation as common
from doors_gym_baselines.harness.evaluation import EpisodeTracker
from doors_gym_baselines.learners.cells import CELLS_DTYPE, HIDDEN, encode, planes
from doors_gym_baselines.harness.replay import ReplayBuffer


def transitions(first: int, count: int):
    """``count`` distinguishable transitions numbered from ``first`` (the number is in every field)."""
    numbers = np.arange(first, first + count)
    cells = np.stack([numbers, numbers % 7], axis=1).astype(CELLS_DTYPE)
    return cells, numbers.astype(np.int64), numbers.astype(np.float32), -cells, (numbers % 2).astype(np.float32)


def test_replay_buffer_sample_shapes_and_dtypes():
    buffer = ReplayBuffer(capacity=16, seed=0)
    buffer.add(*transitions(1, 5))
    assert buffer.size == 5
    cells, actions, rewards, next_cells, terminated = buffer.sample(32)
    assert cells.shape == next_cells.shape == (32, 2)
    assert cells.dtype == next_cells.dtype == CELLS_DTYPE == np.int16
    assert actions.shape == rewards.shape == terminated.shape == (32,)
    assert actions.dtype == np.int64
    assert rewards.dtype == np.float32 and terminated.dtype == np.float32
    # Only stored transitions come back, each one intact.
    assert set(actions.tolist()) <= {1, 2, 3, 4, 5}
    np.testing.assert_array_equal(cells, np.stack([actions, actions % 7], axis=1))
    np.testing.assert_array_equal(next_cells, -cells)
    np.testing.assert_array_equal(rewards, actions.astype(np.float32))
    np.testing.assert_array_equal(terminated, (actions % 2).astype(np.float32))


def test_replay_buffer_wraps_around_and_caps_its_size():
    buffer = ReplayBuffer(capacity=8, seed=0)
    buffer.add(*transitions(1, 6))
    assert buffer.size == 6
    buffer.add(*transitions(7, 5))  # 11 transitions into 8 slots: 1, 2, 3 are overwritten
    assert buffer.size == 8
    assert sorted(buffer.actions.tolist()) == list(range(4, 12))
    # The overwrite starts at the oldest slot: 9, 10, 11 sit where 1, 2, 3 were.
    assert buffer.actions[:3].tolist() == [9, 10, 11]
    buffer.add(*transitions(100, 20))  # more than the capacity in one call
    assert buffer.size == 8
    assert sorted(buffer.actions.tolist()) == list(range(112, 120))
    sampled = buffer.sample(200)[1]
    assert set(sampled.tolist()) <= set(range(112, 120))
    assert len(set(sampled.tolist())) > 4


@pytest.mark.parametrize("capacity", [8, 6])  # a multiple of the batch (one slice per write), and not
def test_device_replay_buffer_is_a_ring_of_env_states_sampled_as_cells(capacity):
    jax = needs("jax")
    from doors_gym.jax import functional as F
    from doors_gym_baselines.harness import device_replay

    params = DoorsParams()
    obs, states = F.batch_reset(jax.random.key(0), 4, params)
    buffer = device_replay.empty_buffer(states, capacity)
    for step in range(3):  # 12 transitions, 4 at a time, into the ring from slot 4 * step % capacity
        actions = jax.numpy.arange(4 * step, 4 * step + 4)
        done = actions % 2 == 1
        buffer = device_replay.add(buffer, states, actions, actions * 1.0, states, done, (4 * step) % capacity)
    assert int(buffer.size) == capacity
    written = [4 * step + offset for step in range(3) for offset in range(4)]
    ring = np.zeros(capacity, dtype=np.int64)
    for slot, action in zip(np.arange(12) % capacity, written):
        ring[slot] = action
    np.testing.assert_array_equal(np.asarray(buffer.action), ring)
    assert buffer.action.dtype == np.int32 and buffer.terminated.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(buffer.terminated), ring % 2)
    cells, actions, rewards, next_cells, terminated = device_replay.sample(buffer, jax.random.key(1), 64, params.width)
    assert cells.shape == next_cells.shape == (64, 2) and actions.shape == rewards.shape == terminated.shape == (64,)
    assert set(np.asarray(actions).tolist()) <= set(ring.tolist())
    expected = encode(np.asarray(obs))  # the grids' cells, found by search; env i's transitions hold action % 4 == i
    np.testing.assert_array_equal(np.asarray(cells), expected[np.asarray(actions) % 4])


def test_replay_buffer_sampling_is_seeded():
    first, second, other = (ReplayBuffer(capacity=64, seed=seed) for seed in (3, 3, 4))
    for buffer in (first, second, other):
        buffer.add(*transitions(0, 64))
    np.testing.assert_array_equal(first.sample(16)[1], second.sample(16)[1])
    assert not np.array_equal(first.sample(16)[1], other.sample(16)[1])


def test_episode_tracker_with_next_step_autoreset():
    tracker = EpisodeTracker(num_envs=2, rolling_episodes=10)
    tracker.start(np.array([True, True]), np.array([4.0, 5.0]))
    none = np.array([False, False])
    both = np.array([True, True])
    # Step 1: both envs run.
    assert tracker.record(np.array([1.0, 0.5]), none, none, both) == []
    # Step 2: env 0 reaches the goal (return 3 in 2 steps).
    assert tracker.record(np.array([2.0, 0.5]), np.array([True, False]), none, both) == [3.0]
    # Step 3: env 0's step is its autoreset (not counted); env 1 is truncated (return 2 in 3 steps).
    finished = tracker.record(np.array([99.0, 1.0]), none, np.array([False, True]), np.array([False, True]))
    assert finished == [2.0]
    tracker.start(np.array([True, False]), np.array([6.0, 123.0]))
    # Step 4: env 0 reaches the goal again (return 0.5 in 1 step); env 1's step is its autoreset.
    finished = tracker.record(np.array([0.5, 99.0]), np.array([True, False]), none, np.array([True, False]))
    assert finished == [0.5]
    assert tracker.episodes == 3
    assert [episode[:3] for episode in tracker.window] == [(3.0, 2, True), (2.0, 3, False), (0.5, 1, True)]
    summary = tracker.summary()
    assert summary.rolling_reward == pytest.approx((3.0 + 2.0 + 0.5) / (2 + 3 + 1))
    assert summary.train_success_rate == pytest.approx(2 / 3)
    assert summary.train_normalised_return == pytest.approx((3.0 / 4.0 + 2.0 / 5.0 + 0.5 / 6.0) / 3)


def test_episode_tracker_window_keeps_the_latest_episodes():
    tracker = EpisodeTracker(num_envs=1, rolling_episodes=2)
    one = np.array([True])
    done = np.array([True])
    for reward in (1.0, 2.0, 4.0):
        tracker.start(one, np.array([1.0]))
        tracker.record(np.array([reward]), done, np.array([False]), one)
    assert tracker.episodes == 3
    assert tracker.summary().rolling_reward == pytest.approx((2.0 + 4.0) / 2)


def test_episode_tracker_summary_is_nan_before_the_first_episode():
    tracker = EpisodeTracker(num_envs=3, rolling_episodes=5)
    tracker.start(np.ones(3, dtype=bool), np.ones(3))
    tracker.record(np.ones(3), np.zeros(3, dtype=bool), np.zeros(3, dtype=bool), np.ones(3, dtype=bool))
    summary = dataclasses.astuple(tracker.summary())
    assert summary and all(math.isnan(value) for value in summary)


def test_encode_finds_the_agent_and_goal_cells_once_for_every_observation():
    envs = gym.make_vec("Doors-v0", 8)
    obs, _ = envs.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(200):
        cells = encode(obs)
        assert cells.shape == (8, 2) and cells.dtype == CELLS_DTYPE
        for row, (agent, goal) in zip(obs, cells):
            assert row[agent] == AGENT
            assert (goal == HIDDEN) == (GOAL not in row)
            if goal != HIDDEN:
                assert row[goal] == GOAL
            # The planes the first layer is defined over: one agent cell, the goal's unless hidden.
            features = planes(np.array([agent, goal]), row.size)
            np.testing.assert_array_equal(np.flatnonzero(features[: row.size]), np.flatnonzero(row == AGENT))
            np.testing.assert_array_equal(np.flatnonzero(features[row.size :]), np.flatnonzero(row == GOAL))
        obs, *_ = envs.step(rng.integers(0, 5, 8))
    envs.close()
    assert encode(obs[0]).shape == (2,) and planes(encode(obs), obs.shape[1]).shape == (8, 2 * obs.shape[1])
    terminal = np.zeros((1, 225), dtype=np.int16)
    terminal[0, 7] = AGENT  # the agent on the goal: no goal code left
    assert encode(terminal).tolist() == [[7, HIDDEN]]


def test_all_start_states_covers_every_pair():
    params = DoorsParams()
    states = common.all_start_states(params)
    width = params.width
    assert len(states.agent_col) == width * width
    pairs = set(zip(np.asarray(states.agent_col).tolist(), np.asarray(states.goal_col).tolist()))
    assert pairs == {(a, g) for a in range(width) for g in range(width)}
    assert np.all(np.asarray(states.agent_row) == params.height - 1)
    assert np.all(np.asarray(states.goal_row) == 0)
    assert np.all(np.asarray(states.time) == 0)


def random_act(seed: int):
    rng = np.random.default_rng(seed)
    return lambda obs: rng.integers(0, 5, len(obs))


def test_evaluate_greedy_with_the_oracle():
    params = DoorsParams()
    evaluation = common.evaluate_greedy(OraclePolicy(params), params)
    assert evaluation.episodes == params.width * params.width
    assert evaluation.success_rate == 1.0
    assert evaluation.solved
    assert abs(evaluation.mean_step_reward - 0.776) < 5e-4
    # The same figure as the oracle's own single-env evaluation.
    assert evaluation.mean_step_reward == pytest.approx(evaluate_oracle(params).mean_step_reward, abs=1e-9)
    assert evaluation.normalised_return > 0.9


def test_evaluate_greedy_matches_the_oracle_on_another_layout():
    params = DoorsParams(grid_size=(5, 7), n_doors=2, max_episode_steps=30)
    evaluation = common.evaluate_greedy(OraclePolicy(params), params)
    oracle = evaluate_oracle(params)
    assert evaluation.episodes == 49
    assert evaluation.success_rate == oracle.success_rate == 1.0
    assert evaluation.mean_step_reward == pytest.approx(oracle.mean_step_reward, abs=1e-9)
    assert evaluation.mean_return == pytest.approx(oracle.returns.mean(), abs=1e-9)


def test_evaluate_greedy_with_a_random_policy_is_clearly_worse():
    params = DoorsParams()
    oracle = common.evaluate_greedy(OraclePolicy(params), params)
    random = common.evaluate_greedy(random_act(0), params)
    assert random.episodes == oracle.episodes
    assert random.success_rate < 0.5
    assert random.mean_step_reward < oracle.mean_step_reward - 0.4
    assert not random.solved


def test_evaluate_greedy_of_a_policy_that_stays():
    params = DoorsParams()
    evaluation = common.evaluate_greedy(lambda obs: np.full(len(obs), core.STAY), params)
    assert evaluation.success_rate == 0.0
    assert evaluation.mean_step_reward == 0.0
    assert evaluation.mean_return == 0.0


@pytest.mark.parametrize("params", [DoorsParams(), DoorsParams(n_walls=3, doors="random")], ids=["Doors-v0", "3Walls"])
def test_policies_evaluated_together_score_as_each_alone(params: DoorsParams):
    """:func:`evaluate_policies` plays every policy's episodes in one vector env: each policy's figures are
    exactly those :func:`evaluate_greedy` gives it alone (the random-door starts included)."""

    def hashed(obs: np.ndarray) -> np.ndarray:  # a deterministic policy that is neither good nor constant
        cells = np.asarray(obs, dtype=np.int64)
        return (cells * np.arange(1, cells.shape[1] + 1)).sum(axis=1) % 5

    policies = [OraclePolicy(params), lambda obs: np.full(len(obs), core.STAY), hashed]

    def together(obs: np.ndarray) -> np.ndarray:
        return np.concatenate([act(block) for act, block in zip(policies, np.split(obs, len(policies)))])

    alone = [common.evaluate_greedy(act, params) for act in policies]
    assert common.evaluate_policies(together, params, len(policies)) == alone
    assert len({evaluation.mean_step_reward for evaluation in alone}) == 3


@pytest.mark.parametrize(("stdout_tty", "stderr_tty", "quiet", "shown"), [
    (True, True, False, True),
    (False, True, False, False),  # make main > log
    (True, False, False, False),  # 2> log
    (True, True, True, False),
])  # fmt: skip
def test_progress_bars_only_in_a_terminal(monkeypatch, stdout_tty, stderr_tty, quiet, shown):
    import io

    from doors_gym_baselines.harness import progress as bars

    class Stream(io.StringIO):
        def __init__(self, tty):
            super().__init__()
            self.tty = tty

        def isatty(self):
            return self.tty

    monkeypatch.setattr(bars.sys, "stdout", Stream(stdout_tty))
    monkeypatch.setattr(bars.sys, "stderr", Stream(stderr_tty))
    progress = bars.Progress(100, "arm", quiet)
    progress.update(50, ret=0.5, eps=0.1)
    progress.close()
    assert (progress._bar is not None) == shown
    assert ("50%|" in bars.sys.stderr.getvalue()) == shown  # the bar
    # In a log (not a terminal, not quiet): a plain line on stderr each tenth of the run, never a bar's redraws.
    logged = not quiet and not (stdout_tty and stderr_tty)
    assert ("arm: 50 of 100 env steps (50%)" in bars.sys.stderr.getvalue()) == logged
    assert ("ret 0.5, eps 0.1" in bars.sys.stderr.getvalue()) == logged


def test_a_log_gets_a_line_per_tenth_of_the_run(monkeypatch, capsys):
    from doors_gym_baselines.harness import progress as bars

    monkeypatch.setattr(bars, "in_a_terminal", lambda: False)
    progress = bars.Progress(1000, "flax-scan x 3 seeds", quiet=False)
    for _ in range(143):
        progress.update(7, rolling=float("nan"), eps=0.5)  # crosses each tenth once, ends past the total
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == bars.LOG_LINES
    assert lines[0].startswith("flax-scan x 3 seeds: 105 of 1,000 env steps (10%), ")
    assert lines[-1].startswith("flax-scan x 3 seeds: 1,001 of 1,000 env steps (100%), ")
    assert all("rolling" not in line and line.endswith("eps 0.5") for line in lines)  # a NaN figure is left out


def evaluation_row(step: int, success: float, rolling: float):
    """A one-seed HistoryRow at ``step`` with the greedy success and rolling reward given (the bar 0.632)."""
    from doors_gym_baselines.harness.metrics import HistoryRow, SeedFigures

    seed = SeedFigures(1, success, 0.6, 0.9, rolling, solved_reward=0.632)
    nan = float("nan")
    return HistoryRow(step, 1.0, 1.0, 0.1, nan, success, 0.6, 0.9, rolling, nan, nan, nan, nan, (seed,))


def test_each_evaluation_is_a_line_against_the_bar_and_a_log_line_says_the_time_left(monkeypatch, capsys):
    """A long run shows its learning as it happens: every evaluation's greedy success and rolling reward against the
    level's bar and whether it is solved (and held), in a log's lines and beside a terminal's bar."""
    from doors_gym_baselines.harness import progress as bars

    monkeypatch.setattr(bars, "in_a_terminal", lambda: False)
    progress = bars.Progress(1000, "flax-scan x 1 seed", quiet=False)
    progress.update(100, eps=0.5)
    progress.evaluated(evaluation_row(100, 0.5, 0.3), held=False)
    progress.evaluated(evaluation_row(200, 0.995, 0.64), held=False)
    progress.evaluated(evaluation_row(300, 0.995, 0.64), held=True)
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    assert " left, eps 0.5" in lines[0]
    assert lines[1:] == [
        "flax-scan x 1 seed: evaluation at 100 env steps: greedy success 0.500, rolling reward 0.3000 (bar 0.6320), "
        "not solved",
        "flax-scan x 1 seed: evaluation at 200 env steps: greedy success 0.995, rolling reward 0.6400 (bar 0.6320), "
        "solved",
        "flax-scan x 1 seed: evaluation at 300 env steps: greedy success 0.995, rolling reward 0.6400 (bar 0.6320), "
        "solved and held",
    ]
    quiet = bars.Progress(1000, "arm", quiet=True)
    quiet.evaluated(evaluation_row(100, 0.5, 0.3), held=False)
    assert capsys.readouterr().err == ""


def test_a_logs_evaluation_lines_read_back_as_they_were_written(monkeypatch, capsys):
    """read_evaluations reads what Progress.evaluated writes (and nothing else of the log)."""
    from doors_gym_baselines.harness import progress as bars

    monkeypatch.setattr(bars, "in_a_terminal", lambda: False)
    progress = bars.Progress(3_000_000, "torch-numpy x 1 seed", quiet=False)
    progress.update(1_000_000, eps=0.5)
    written = [(1_000_000, 0.25, float("nan")), (2_000_000, 0.985, 0.64), (3_000_000, 0.995, 0.64)]
    for step, success, rolling in written:
        progress.evaluated(evaluation_row(step, success, rolling), held=step == 3_000_000)
    progress.close()
    read = bars.read_evaluations(capsys.readouterr().err.splitlines())
    assert [(e.step, e.greedy_success_rate, e.solved) for e in read] == [
        (1_000_000, 0.25, False), (2_000_000, 0.985, False), (3_000_000, 0.995, True)
    ]  # fmt: skip
    assert read[0].description == "torch-numpy x 1 seed" and read[0].rolling_reward != read[0].rolling_reward
    assert read[1].rolling_reward == 0.64 and read[1].solved_reward == 0.632


def test_the_time_left_reads_in_the_unit_of_its_size():
    from doors_gym_baselines.harness.progress import describe_seconds

    assert [describe_seconds(s) for s in (42.2, 719, 9000, float("nan"))] == ["42 s", "12 min", "2.5 h", "? s"]
