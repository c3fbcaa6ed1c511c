"""The levels in the baselines: the input where the doors are random, the replay bytes, ``compare --level`` and
the ladder's plan and resume, on tiny budgets."""

from __future__ import annotations

import csv
import dataclasses
import math
import pathlib

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs


from doors_gym.core import DoorsParams
from doors_gym.levels import LEVELS, get_level
from doors_gym_baselines.learners import cells as cell_codes
from doors_gym_baselines.harness.replay import ReplayBuffer, min_episode_steps


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.name)
def test_the_input_rebuilds_the_observation_the_env_gives(level) -> None:
    params = level.params()
    envs = gym.make_vec(level.env_id, 32)
    obs, _ = envs.reset(seed=3)
    for _ in range(40):
        cells = cell_codes.encode(obs, params)
        assert cells.shape == (32, cell_codes.input_width(params))
        np.testing.assert_array_equal(cell_codes.decode(cells, params), obs)
        state = envs.unwrapped.state
        if params.random_doors:  # the doors read off the grid are the episode's own, wall by wall
            np.testing.assert_array_equal(cells[:, 2:], state.doors.reshape(32, -1))
        obs, *_ = envs.step(envs.action_space.sample())
    envs.close()


def test_the_first_layer_adds_the_rows_of_the_one_hot_planes() -> None:
    torch = needs("torch")
    from doors_gym_baselines.learners.dqn_torch import QNetwork

    params = get_level("31x31").params()
    offsets = cell_codes.door_offsets(params)
    network = QNetwork(params.num_cells, (16,), door_offsets=offsets, num_inputs=cell_codes.num_inputs(params))
    envs = gym.make_vec(get_level("31x31").env_id, 8)
    cells = cell_codes.encode(envs.reset(seed=0)[0], params)
    cells[0, 1] = cell_codes.HIDDEN  # the agent on its goal: no goal row
    planes = torch.as_tensor(cell_codes.planes(cells, params.num_cells, offsets, cell_codes.num_inputs(params)))
    with torch.no_grad():
        hidden = torch.relu(planes @ network.planes_weight + network.planes_bias)
        np.testing.assert_allclose(network(torch.as_tensor(cells)), network.network[1:](hidden), atol=1e-5)


def _host_buffer(params: DoorsParams, capacity: int = 8, num_envs: int = 4) -> ReplayBuffer:
    doors = cell_codes.door_count(params)
    return ReplayBuffer(capacity, 0, doors, num_envs=num_envs, min_episode_steps=min_episode_steps(params))


def test_replay_bytes_per_transition_are_the_same_at_every_level() -> None:
    small = DoorsParams(grid_size=(15, 15), n_walls=3, n_doors=3, doors="random")
    per_level = {level.name: _host_buffer(level.params()).bytes_per_transition() for level in LEVELS}
    # two cells each side, action, reward, flag, the layout's row: the doors are in the table, once per episode
    assert set(per_level.values()) == {_host_buffer(small).bytes_per_transition()} == {2 * 4 + 8 + 4 + 4 + 4}
    assert _host_buffer(get_level("study").params()).layout_bytes() == 0
    big = _host_buffer(get_level("63x63").params(), capacity=1024, num_envs=16)
    assert big.layout_bytes() == big.layouts.shape[0] * 9 * 2 > 0  # a row of 9 int16 door columns per episode
    buffer = _host_buffer(small, capacity=16, num_envs=16)
    cells = np.arange(16 * 11, dtype=np.int16).reshape(16, 11) % 60
    buffer.add(cells, np.zeros(16, np.int64), np.zeros(16, np.float32), cells, np.zeros(16, np.float32))
    sampled, _, _, next_sampled, _ = buffer.sample(32)
    assert sampled.shape == next_sampled.shape == (32, 11)
    assert {tuple(row) for row in sampled} <= {tuple(row) for row in cells}


def test_the_device_replay_stores_the_same_bytes_at_every_level() -> None:
    needs("jax")
    import jax

    from doors_gym.jax import functional as F
    from doors_gym_baselines.harness import device_replay

    def slot_bytes(params: DoorsParams) -> int:
        _, state = F.batch_reset(jax.random.key(0), 4, params)
        buffer = device_replay.empty_buffer(state, 8, min_episode_steps=min_episode_steps(params))
        table = (buffer.layouts, buffer.layouts_taken, buffer.size)
        assert device_replay.layout_bytes(buffer) == buffer.layouts.nbytes
        every = sum(leaf.nbytes for leaf in jax.tree.leaves(buffer)) - sum(leaf.nbytes for leaf in table)
        assert device_replay.bytes_per_transition(buffer) * 8 == every
        return device_replay.bytes_per_transition(buffer)

    small = DoorsParams(grid_size=(15, 15), n_walls=3, n_doors=3, doors="random")
    assert {slot_bytes(level.params()) for level in LEVELS} == {slot_bytes(small)} == {2 * 4 * 4 + 4 + 4 + 4 + 4}
    big = get_level("63x63").params()
    _, state = F.batch_reset(jax.random.key(1), 4, big)
    obs = np.asarray(jax.vmap(lambda one: F.observation(one, big))(state))
    cells = np.asarray(device_replay.cells_of_states(state, big.width))
    np.testing.assert_array_equal(cells, cell_codes.encode(obs, big))  # read off the state = read off the grid
    np.testing.assert_array_equal(cells[:, 2:], np.asarray(state.doors).reshape(4, -1))


@pytest.fixture(scope="module")
def random_compare(tmp_path_factory: pytest.TempPathFactory):
    needs("mlflow")
    needs("flax")
    needs("torch")
    from doors_gym_baselines.experiments import compare
    from doors_gym_baselines.arms import ARMS
    from doors_gym_baselines.config import RunSettings

    folder = tmp_path_factory.mktemp("random")
    options = compare.CompareOptions(
        arms=tuple(name for name in ARMS if ARMS.is_builtin(name)),  # the DQN arms: the level preset is theirs
        level="Random",
        seeds=1,
        total_steps=1_024,
        eval_every=1_024,
        models=False,
        out=str(folder / "out"),
        tracking_uri=f"sqlite:///{folder / 'mlflow.db'}",
    )
    return options, compare.compare(options, RunSettings(quiet=True, profile=False))


@pytest.mark.slow
def test_compare_at_a_level_runs_every_arm_on_its_backends_id(random_compare) -> None:
    options, outcome = random_compare
    with open(pathlib.Path(options.out) / "compare_seeds.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["arm"] for row in rows) == sorted(options.arms)
    assert {"torch-numpy", "torch-compile", "flax-numpy", "flax-jax", "flax-scan"} <= set(options.arms)
    assert all(int(row["env_steps"]) >= 1_024 for row in rows)
    assert outcome.oracle["greedy_success_rate"] == 1.0  # the oracle's row at the level, on its own evaluation
    table = (pathlib.Path(options.out) / "compare.md").read_text()
    assert "steps/s" in table and "Table 2" not in table  # the study's published table speaks of Doors-v0 only
    with open(pathlib.Path(options.out) / "compare.csv") as handle:
        assert not [row for row in csv.DictReader(handle) if row["arm"].startswith("published:")]  # nor its figures


def test_compare_at_a_level_uses_the_levels_layout_preset_and_bar() -> None:
    from doors_gym_baselines.experiments import compare
    from doors_gym_baselines.harness.metrics import solved_reward
    from doors_gym_baselines.presets import level_preset

    options = compare.CompareOptions(level="63x63", arms=("torch-numpy",))
    config, preset = options.preset_config("torch-numpy")
    assert config.params == get_level("63x63").params()
    assert preset.name == "shared-63x63" and config.run.total_steps == level_preset("63x63").run["total_steps"]
    assert options.run_name.endswith("-63x63")
    from doors_gym.oracle import level_figures

    assert solved_reward(config.params) == level_figures("63x63").solved_rolling_reward
    with pytest.raises(ValueError, match=r"level='Huge'"):
        compare.CompareOptions(level="Huge")


def test_the_ladder_plans_a_comparison_per_level_and_resumes(tmp_path, monkeypatch, capsys) -> None:
    needs("mlflow")
    needs("torch")
    needs("matplotlib")
    from doors_gym_baselines.experiments import ladder
    from doors_gym_baselines.config import RunSettings

    monkeypatch.setattr(ladder, "QUICK_STEPS", 2_048)  # every env ends an episode (time limit 60)
    options = ladder.LadderOptions(
        arms=("torch-numpy",),
        levels=("Random", "study"),
        quick=True,
        out=str(tmp_path / "ladder"),
        tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
    )
    planned = ladder.plan(options)
    assert [each.level for each in planned] == ["study", "Random"]  # SPEC's order
    assert all(each.seeds == 1 and each.total_steps == 2_048 for each in planned)
    first = ladder.ladder(options, RunSettings(quiet=True))
    assert [(row.level, row.key) for row in first.rows] == [("study", "torch-numpy"), ("Random", "torch-numpy")]
    assert all(path.exists() for path in first.paths.values())
    assert "env steps to solved" in first.table
    with open(first.paths["csv"]) as handle:
        written = list(csv.DictReader(handle))
    assert {"steps_to_solved_iqm", "steps_to_solved_low", "steps_to_solved_high"} <= set(written[0])
    assert [float(row["steps_to_solved_iqm"]) for row in written] == [row.steps_to_solved_iqm for row in first.rows]
    capsys.readouterr()
    again = ladder.ladder(options, RunSettings(quiet=True))
    assert capsys.readouterr().out.count("reusing") == 2
    assert [row.wall_seconds_total for row in again.rows] == [row.wall_seconds_total for row in first.rows]
    # --report-only trains nothing: the finished runs make the table, an arm not run is left out and named.
    reported = ladder.ladder(dataclasses.replace(options, arms=("torch-numpy", "flax-numpy"), report_only=True))
    printed = capsys.readouterr().out
    assert printed.count("flax-numpy: not run at this level") == 2 and "training" not in printed
    assert all(row.seeds == 1 for row in reported.rows)
    assert [(row.level, row.key, row.wall_seconds_total) for row in reported.rows] == [
        (row.level, row.key, row.wall_seconds_total) for row in first.rows
    ]


def test_the_ladder_plan_prints_each_run_to_train_with_its_expected_time_and_trains_nothing(tmp_path, capsys):
    """``ladder --plan``: the runs not finished under --out, each with the committed table's seconds per run of its
    row (``?`` where the table has none), and their total; nothing trains, nothing is written."""
    from doors_gym_baselines.experiments import ladder

    expected = ladder.expected_seconds()
    assert expected[("63x63", "flax-scan")] > expected[("31x31", "flax-scan")] > 0  # the larger rung, the longer run
    options = ladder.LadderOptions(
        arms=("flax-scan",), levels=("31x31", "63x63"), seeds=2, out=str(tmp_path / "ladder"), plan=True
    )
    outcome = ladder.ladder(options)
    printed = capsys.readouterr().out.splitlines()
    assert outcome.rows == [] and not (tmp_path / "ladder").exists()
    assert "== level 31x31: 3 runs to train" in printed  # two seeds alone, and the two in one run
    from doors_gym_baselines.harness.progress import describe_seconds

    from doors_gym_baselines.config.seeds import LADDER_FIRST_SEED

    first = f"  flax-scan seed {LADDER_FIRST_SEED} at 31x31: {describe_seconds(expected[('31x31', 'flax-scan')])}"
    assert LADDER_FIRST_SEED == options.first_seed >= 100 and first in printed
    together = [expected.get((level, "flax-scan-together")) for level in ("31x31", "63x63")]  # None: "?" printed
    total = 2 * expected[("31x31", "flax-scan")] + 2 * expected[("63x63", "flax-scan")]
    total += sum(seconds for seconds in together if seconds is not None)
    known = 4 + sum(seconds is not None for seconds in together)
    runs = "all 6 runs" if known == 6 else f"{known} of 6 runs"
    assert printed[-1] == f"expected: {describe_seconds(total)} for {runs}, one after another on the 2-core CPU"
    with pytest.raises(ValueError, match="--plan, --report-only"):
        ladder.LadderOptions(plan=True, report_only=True)


def test_the_torch_model_over_grids_reads_the_doors_as_the_loop_does() -> None:
    torch = needs("torch")
    from doors_gym_baselines.learners.dqn_torch import GridQNetwork, QNetwork

    params = get_level("3Walls").params()
    network = QNetwork(
        params.num_cells, (16,), door_offsets=cell_codes.door_offsets(params), num_inputs=cell_codes.num_inputs(params)
    )
    envs = gym.make_vec(get_level("3Walls").env_id, 8)
    obs, _ = envs.reset(seed=5)
    with torch.no_grad():
        from_grids = GridQNetwork(network, params)(torch.as_tensor(obs))
        from_cells = network(torch.as_tensor(cell_codes.encode(obs, params)))
    np.testing.assert_array_equal(from_grids.numpy(), from_cells.numpy())


def test_the_ladder_table_gives_wall_time_and_env_steps_to_solved() -> None:
    from doors_gym_baselines.experiments import ladder

    solved = ladder.LadderRow(
        level="Random",
        key="flax-scan",
        label="Flax + JAX env, one jitted scan",
        seeds=3,
        solved=3,
        seconds_to_solved_iqm=12.5,
        seconds_to_solved_low=11.0,
        seconds_to_solved_high=14.3,
        steps_to_solved_iqm=350_000.0,
        steps_to_solved_low=300_000.0,
        steps_to_solved_high=math.inf,
        greedy_step_reward=0.7,
        oracle_step_reward=0.75,
        env_steps_per_second=30_000.0,
        ms_per_update=0.5,
        wall_seconds_total=40.0,
    )
    unsolved = dataclasses.replace(
        solved, level="63x63", solved=0, seconds_to_solved_iqm=math.inf, steps_to_solved_iqm=math.inf
    )
    lines = ladder.markdown([solved, unsolved]).splitlines()
    assert lines[2].split(" | ")[3:6] == ["12.5 [11.0, 14.3]", "350k [300k, ∞]", "93%"]
    assert lines[3].split(" | ")[2:5] == ["0/3", "unsolved", "unsolved"]
    partly = dataclasses.replace(
        unsolved, solved=2, seconds_to_solved_low=30.0, seconds_to_solved_high=math.inf, steps_to_solved_low=800_000.0
    )
    assert ladder.markdown([partly]).splitlines()[2].split(" | ")[3:5] == ["∞ [30.0, ∞]", "∞ [800k, ∞]"]
