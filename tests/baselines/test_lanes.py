"""Trials trained together as lanes of one program: a lane computes what its trial computes alone."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from stacks import needs

from doors_gym_baselines.config import DQNConfig

SMALL = dict(
    total_steps=1_600, num_envs=8, batch_size=16, buffer_size=800, hidden_sizes=(16,), eval_every=0, quiet=True,
)  # fmt: skip
LANES = [
    dict(learning_starts=400, gamma=0.9, learning_rate=1e-3, double_dqn=False, tau=1.0, target_update=50),
    dict(learning_starts=560, gamma=0.99, learning_rate=3e-4, double_dqn=True, tau=0.1, target_update=7,
         max_grad_norm=0.5, lr_end_fraction=0.2, exploration_fraction=0.3),
]  # fmt: skip


EXPLORING = [
    dict(restart_prob=0.3, restart_fraction=0.5, n_step=3, relative_inputs=True, advantage_learning=0.5),
    dict(restart_prob=0.8, restart_fraction=1.0, n_step=3, relative_inputs=True),
]
"""Exploration settings per lane (restarts, advantage learning's share: the second lane has none in a program that
traces it) and per program (multi-step returns, relative inputs). A lane whose ``restart_prob`` is 0 in a program
that draws restarts trains with other random draws than alone (the same algorithm): each lane here draws them."""


@pytest.mark.slow
@pytest.mark.parametrize("exploring", [False, True], ids=["plain", "exploring"])
def test_each_lane_trains_as_its_trial_alone(exploring):
    needs("jax")
    from doors_gym_baselines.learners.dqn_flax_scan import make_train

    configs = [DQNConfig.of(**SMALL, **lane, **(EXPLORING[i] if exploring else {})) for i, lane in enumerate(LANES)]
    assert_each_lane_trains_as_alone(make_train, configs)


def assert_each_lane_trains_as_alone(make_train, configs, seeds=(5, 6)) -> None:
    """Trains ``configs`` as the lanes of one program of ``make_train`` (seeds ``seeds``), chunk by chunk, and holds
    each lane to its config's run alone: the same updates, parameters to float tolerance."""
    jax = needs("jax")
    from doors_gym_baselines.learners.scan_lanes import lane_values, program_config

    program = make_train(program_config(configs).replace(num_seeds=len(configs)), lanes=True)
    keys = jax.vmap(jax.random.key)(np.array(seeds))
    values = jax.tree.map(np.asarray, lane_values(configs))

    runner = jax.jit(jax.vmap(lambda key, lane: program.init(key)._replace(lane=lane)))(keys, values)
    chunk = jax.jit(jax.vmap(program.run_chunk, in_axes=(0, None)))  # one compile, run chunk by chunk
    for first in range(0, configs[0].num_iterations, program.iterations_per_chunk):
        runner, _ = chunk(runner, np.int32(first))

    for index, (config, seed) in enumerate(zip(configs, seeds)):
        alone, _ = jax.jit(make_train(config).train)(jax.random.key(seed))
        assert int(runner.learner.updates[index]) == int(alone.learner.updates) == config.num_updates
        for mine, shared in zip(jax.tree.leaves(alone.learner.params), jax.tree.leaves(runner.learner.params)):
            np.testing.assert_allclose(np.asarray(shared)[index], np.asarray(mine), rtol=2e-3, atol=2e-4)


def test_lanes_of_one_program_must_share_its_shapes():
    needs("jax")
    from doors_gym_baselines.learners.scan_lanes import lane_values

    configs = [DQNConfig.of(**SMALL), DQNConfig.of(**{**SMALL, "batch_size": 32})]
    with pytest.raises(ValueError, match=r"configs differ in \['batch_size'\]"):
        lane_values(configs)


def tune_lanes(tmp_path: pathlib.Path, n_trials: int, trials_per_program: int, total_steps: int):
    """``(study, options)``: a flax-scan study of programs of lanes in ``tmp_path`` (evaluations every 1k steps)."""
    from doors_gym_baselines import tuning
    from doors_gym_baselines.config import RunSettings

    options = tuning.TuneOptions(
        arm="flax-scan", n_trials=n_trials, trials_per_program=trials_per_program, models=False, verbose=False,
        storage=f"sqlite:///{tmp_path / 'optuna.db'}", tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", start_from="",
    )  # fmt: skip
    run = RunSettings(seed=0, total_steps=total_steps, eval_every=1_000, hold_out_steps=1_000)
    return tuning.tune(options, run), options


@pytest.mark.slow
def test_a_study_of_programs_asks_distinct_trials_that_share_the_program_coordinates(tmp_path: pathlib.Path):
    optuna = needs("optuna")
    needs("mlflow")
    from doors_gym_baselines.tuning.lanes import program_coordinates
    from doors_gym_baselines.tuning.space import SPACE

    study, _ = tune_lanes(tmp_path, n_trials=6, trials_per_program=3, total_steps=2_000)
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == 6 and all(trial.state.is_finished() for trial in trials)
    assert len({tuple(sorted(trial.params.items())) for trial in trials}) == 6
    shared = program_coordinates(SPACE)
    for program in (trials[:3], trials[3:]):
        assert len({tuple(trial.params[name] for name in shared) for trial in program}) == 1
    complete = [trial for trial in trials if trial.state == optuna.trial.TrialState.COMPLETE]
    assert complete and all(trial.user_attrs["seed"] == trial.number % 10 for trial in complete)


def test_lanes_need_an_arm_that_trains_seeds_together():
    needs("optuna")
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.tuning.lanes import check_lanes_arm

    with pytest.raises(ValueError, match="trials_per_program=4 needs an arm"):
        check_lanes_arm(get_arm("flax-numpy"), 4)
    check_lanes_arm(get_arm("flax-numpy"), 1)


def test_lanes_of_one_seed_keep_their_own_hyperparameters():
    """Trials share seeds (trial n trains tuning seed n % 10): lanes are placed by index, not by seed."""
    needs("jax")
    from doors_gym_baselines.learners.dqn_flax_scan import make_train
    from doors_gym_baselines.learners.scan_driver import compile_run, seed_layout
    from doors_gym_baselines.learners.scan_lanes import lane_values, program_config

    configs = [DQNConfig.of(**SMALL, **LANES[0], seed=3), DQNConfig.of(**SMALL, **LANES[1], seed=3)]
    layout = seed_layout(1, [3, 3])
    assert layout.slot_indices == [0, 1]
    parts = make_train(program_config(configs).replace(num_seeds=2), lanes=True)
    runner, _ = compile_run(parts, layout, lane_values(configs))
    np.testing.assert_allclose(np.asarray(runner.lane.gamma), [0.9, 0.99], rtol=1e-6)
    assert np.asarray(runner.lane.double_dqn).tolist() == [False, True]


class FreezeAtFirstEvaluation:
    """A reporter of lanes (:class:`~doors_gym_baselines.tuning.lanes.LaneTrials`'s interface) that stops the lanes
    ``stopping`` at the first evaluation and keeps every row it is shown."""

    def __init__(self, configs: list, stopping: set[int], gather: bool) -> None:
        self.lane_configs, self.stopping, self.gather_lanes = configs, stopping, gather
        self.stopped_lanes: set[int] = set()
        self.rows: list = []

    def observe(self, row):
        self.rows.append(row)
        self.stopped_lanes |= self.stopping
        return 0.0

    def report(self, value: float, step: int) -> None:
        pass

    def should_prune(self) -> bool:
        return False

    def lanes_failed(self, indices: list[int]) -> None:
        assert not indices


@pytest.mark.slow
def test_live_lanes_gathered_into_a_smaller_program_train_on_as_before(monkeypatch):
    """Three of four lanes stop at the first evaluation and the live one moves into a program of its own: it ends
    where it ends in the program that kept all four, and the stopped lanes keep their networks and figures."""
    jax = needs("jax")
    from doors_gym_baselines.learners import scan_driver
    from doors_gym_baselines.arms import get_arm

    gather = scan_driver.CompiledSeeds.gather
    monkeypatch.setattr(scan_driver.CompiledSeeds, "gather", lambda self, chunks_left: gather(self, 10**9))
    settings = dict(SMALL, eval_every=400, stop_when_solved=False)
    configs = [DQNConfig.of(**settings, **LANES[index % 2], seed=index) for index in range(4)]
    arm = get_arm("flax-scan")
    runs = {}
    for gathered in (False, True):
        reporter = FreezeAtFirstEvaluation(configs, {1, 2, 3}, gathered)
        runs[gathered] = (arm.train(configs[0], reporter), reporter)
    (kept, _), (moved, reporter) = runs[False], runs[True]
    assert "gathers" not in kept.facts and moved.facts["gathers"][0]["to_slots"] < moved.facts["gathers"][0]["from_slots"]
    for mine, theirs in zip(jax.tree.leaves(kept.model.params), jax.tree.leaves(moved.model.params)):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=2e-3, atol=2e-4)
    # Up to the gather both ran one program; then the stopped lanes' figures are kept as they were, and the live
    # lane's come from a program of another batch shape: equal to float tolerance, its greedy actions may differ
    # where two Q-values all but tie.
    def greedy(row):
        return [(seed.greedy_success_rate, seed.greedy_step_reward, seed.greedy_normalised_return) for seed in row.per_seed]

    assert len(kept.history) == len(moved.history) >= 3 and greedy(kept.history[0]) == greedy(moved.history[0])
    for before, after in zip(kept.history, moved.history):
        assert greedy(before)[1:] == greedy(after)[1:]
        assert after.per_seed[0].greedy_success_rate == pytest.approx(before.per_seed[0].greedy_success_rate, abs=0.05)
    clocks = [[seed.seconds for seed in row.per_seed] for row in reporter.rows]
    assert all(np.isfinite(clocks).ravel()) and clocks[-1][0] > clocks[-1][1] == clocks[0][1]


def test_each_lanes_curve_reaches_its_trials_run_on_its_own_clock(tmp_path: pathlib.Path):
    """A program's trials each log their curve to their nested MLflow run (written when the lane stops), its
    seconds the lane's own clock, which only moves on."""
    optuna = needs("optuna")
    needs("mlflow")
    study, options = tune_lanes(tmp_path, n_trials=4, trials_per_program=4, total_steps=4_000)
    trials = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    assert trials
    import mlflow

    client = mlflow.MlflowClient(options.tracking_uri)
    curves = {trial.number: client.get_metric_history(trial.user_attrs["mlflow_run_id"], "seconds") for trial in trials}
    for trial in trials:  # the clock only moves on, and the lane's curve reached MLflow
        seconds = [metric.value for metric in sorted(curves[trial.number], key=lambda metric: metric.step)]
        assert seconds == sorted(seconds) and len(seconds) >= 2
