"""Optuna tuning tracked in MLflow: the search space, a study end to end, resume after a kill, two workers."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import time
import types

import numpy as np
import pytest
from stacks import needs

optuna = needs("optuna")
mlflow = needs("mlflow")
needs("flax")
needs("torch")

from doors_gym_baselines import harness, serving, tracking, tuning  # noqa: E402
from doors_gym_baselines.experiments import executors  # noqa: E402
from doors_gym_baselines.tuning import scores, space  # noqa: E402
from doors_gym_baselines.tuning.study import optuna_quiet  # noqa: E402
from doors_gym_baselines.config import DQNConfig, Hyperparameters, RunSettings  # noqa: E402
from doors_gym_baselines.harness.metrics import HistoryRow  # noqa: E402

TINY_STUDY = dict(total_steps=2_000, eval_every=1_000)


def row(step: int, greedy_step_reward: float) -> HistoryRow:
    """A learning-curve row with only a step and a greedy per-step reward (NaN elsewhere)."""
    nan = math.nan
    return HistoryRow(step, 1.0, nan, nan, nan, nan, greedy_step_reward, nan, nan, nan, nan, nan, nan)


def _store(tmp_path: pathlib.Path) -> tuple[str, str]:
    return f"sqlite:///{tmp_path / 'optuna.db'}", f"sqlite:///{tmp_path / 'mlflow.db'}"


def _runs(tracking_uri: str, experiment: str) -> tuple[object, list, list]:
    client = mlflow.MlflowClient(tracking_uri)
    experiment_id = client.get_experiment_by_name(experiment).experiment_id
    runs = client.search_runs([experiment_id], max_results=500)
    parents = [run for run in runs if run.data.tags.get("doors_gym.role") == "study"]
    children = [run for run in runs if "mlflow.parentRunId" in run.data.tags]
    return client, parents, children


def _tune_command(tmp_path: pathlib.Path, *extra: str, storage: str | None = None) -> list[str]:
    default_storage, tracking_uri = _store(tmp_path)
    storage = storage or default_storage
    return [
        sys.executable,
        "-m",
        "doors_gym_baselines.tuning",
        "--arm",
        "flax-numpy",
        "--storage",
        storage,
        "--tracking-uri",
        tracking_uri,
        "--total-steps",
        "2000",
        "--eval-every",
        "1000",
        "--no-models",
        "--hold-out-steps",
        "1000",
        "--heartbeat-interval",
        "1",
        "--grace-period",
        "2",
        *extra,
    ]


def _subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "JAX_PLATFORMS": "cpu"}


# --- the search space ------------------------------------------------------------------------------------------


def test_search_space_is_well_conditioned_and_round_trips() -> None:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    base = Hyperparameters()
    for _ in range(30):
        trial = study.ask()
        config = space.suggest_hyperparameters(trial, base)
        assert config.gamma == pytest.approx(1 - trial.params["one_minus_gamma"], abs=1e-6)
        assert config.batch_size == 2 ** trial.params["log2_batch_size"] and 32 <= config.batch_size <= 256
        assert config.buffer_size == 2 ** trial.params["log2_buffer_size"] >= config.batch_size
        assert len(config.hidden_sizes) == trial.params["depth"]
        assert set(config.hidden_sizes) == {2 ** trial.params["log2_width"]}
        assert 3e-5 <= config.learning_rate <= 1e-2 and config.optimizer in ("adam", "sgd")
        assert space.hyperparameters_from_params(trial.params, base) == config
        study.tell(trial, 0.0)
    distributions = study.trials[0].distributions
    assert distributions["learning_rate"].log and distributions["one_minus_gamma"].log
    assert distributions["target_update"].log and distributions["tau"].log
    # The stabilisers are searched.
    sampled = [space.suggest_hyperparameters(optuna.trial.FixedTrial(t.params), base) for t in study.trials]
    assert {config.double_dqn for config in sampled} == {False, True}
    assert {config.max_grad_norm for config in sampled} > {0.0}
    assert all(0.01 <= config.tau <= 1.0 and 0.0 <= config.lr_end_fraction <= 1.0 for config in sampled)


@pytest.mark.parametrize("level_name", ["Random", "3Walls", "31x31", "63x63"])
def test_each_level_preset_lies_inside_the_space_a_study_at_that_level_searches(level_name: str) -> None:
    """``tune --level L`` queues L's shared preset as its first trial: no coordinate of it may be clipped into the
    space on the way (a step cost of 0.5 once became 0.2, and the first trial was not the preset that solves)."""
    from doors_gym.levels import get_level
    from doors_gym_baselines import presets
    from doors_gym_baselines.arms import get_arm

    hyperparameters = presets.level_preset(level_name).config(None).hyperparameters
    searched = space.space_of(get_arm("flax-scan"), get_level(level_name).params(), hyperparameters.algorithm)
    exploration = space.SPACES[hyperparameters.algorithm][1]
    assert set(exploration) <= set(searched)  # the level draws its doors: exploration is searched
    coordinates = space.to_coordinates(hyperparameters, searched)
    for coordinate in searched:
        value = coordinates[coordinate.name]
        if coordinate.choices:
            assert value in coordinate.choices, (coordinate.name, value)
        else:
            assert coordinate.low <= value <= coordinate.high, (coordinate.name, value, coordinate.low, coordinate.high)
    queued = space.hyperparameters_from_params(space.params_for(hyperparameters, searched), hyperparameters, searched)
    # Only the sizes move, to the nearest power of two.
    assert dataclasses.replace(queued, buffer_size=hyperparameters.buffer_size) == hyperparameters


DQN_ONLY = ("batch_size", "buffer_size", "train_frequency", "target_update", "learning_starts", "double_dqn", "tau")
"""The hyperparameters PQN leaves unused that the DQN space searches."""
PQN_OWN = ("td_lambda", "rollout_steps", "epochs", "minibatches")


def _pqn_study_at_31x31() -> tuple[object, object]:
    """``(base, searched)``: the PQN preset a study of the jitted arm at ``31x31`` starts from (``--preset tuned``
    there: its own file, else the level's), over that level's run, and the space such a study searches."""
    from doors_gym_baselines import presets
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.levels import TrainingLevel

    level = TrainingLevel.named("31x31")
    base = presets.preset_at("tuned", "flax-scan", "31x31").config(level.layout)
    assert base.hyperparameters.algorithm == "pqn" and base.params.random_doors
    searched = space.space_of(get_arm("flax-scan"), base.params, space.algorithm_of(base.hyperparameters))
    return base, searched


def test_a_pqn_study_searches_pqn_own_coordinates_and_none_of_those_pqn_leaves_unused() -> None:
    """A study whose base is PQN: no trial spent on a coordinate PQN ignores, none on one it refuses."""
    _, searched = _pqn_study_at_31x31()
    targets = {coordinate.target for coordinate in searched}
    assert not targets & {*DQN_ONLY, "n_step", "advantage_learning"}
    assert set(PQN_OWN) <= targets
    assert {"num_envs", "learning_rate", "gamma", "inputs", "step_cost", "restart_prob"} <= targets
    envs = next(coordinate for coordinate in searched if coordinate.target == "num_envs")
    assert (envs.name, envs.scale.value(envs.low), envs.scale.value(envs.high)) == ("log2_num_envs", 16, 256)
    assert len({coordinate.name for coordinate in searched}) == len(searched)
    # Without drawn doors, no exploration; an arm's own space whatever the algorithm; an unknown one refused.
    from doors_gym_baselines.arms import get_arm

    plain = space.space_of(get_arm("flax-scan"), None, "pqn")
    assert set(PQN_OWN) <= {coordinate.target for coordinate in plain}
    assert not {coordinate.name for coordinate in plain} & {coordinate.name for coordinate in space.EXPLORATION}
    own = (space.Range("alpha", 0.0, 1.0),)
    arm = types.SimpleNamespace(search_space=own, hyperparameters=object)
    assert space.space_of(arm, None, "pqn") == own
    with pytest.raises(ValueError, match="algorithm='ppo'"):
        space.space_of(get_arm("flax-scan"), None, "ppo")


def test_every_point_of_the_pqn_space_builds_a_valid_pqn_config() -> None:
    """Random points and every coordinate's two ends: each a PQN config that validates (minibatches dividing the
    rollout's transitions, no advantage learning)."""
    base, searched = _pqn_study_at_31x31()
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=11))
    drawn = []
    for _ in range(200):
        trial = study.ask()
        drawn.append(space.suggest_hyperparameters(trial, base.hyperparameters, searched))
        study.tell(trial, 0.0)
    corners = [
        {c.name: (c.choices[0 if end == "low" else -1] if c.choices else getattr(c, end)) for c in searched}
        for end in ("low", "high")
    ]
    drawn += [space.hyperparameters_from_params(corner, base.hyperparameters, searched) for corner in corners]
    for hyperparameters in drawn:
        config = DQNConfig(hyperparameters=hyperparameters, run=base.run)  # ValueError on an invalid point
        assert hyperparameters.algorithm == "pqn" and hyperparameters.advantage_learning == 0
        transitions = hyperparameters.rollout_steps * hyperparameters.num_envs
        assert config.update_batch_size * hyperparameters.minibatches == transitions
    assert {h.minibatches for h in drawn} == {1, 2, 4, 8, 16, 32} and {h.epochs for h in drawn} == {1, 2, 3, 4}
    assert {h.rollout_steps for h in drawn} == {8, 16, 32, 64}
    assert {h.num_envs for h in drawn} == {16, 32, 64, 128, 256}
    assert min(h.td_lambda for h in drawn) == 0.0 and max(h.td_lambda for h in drawn) == 1.0


def test_the_pqn_preset_at_31x31_lies_inside_the_pqn_space_and_round_trips() -> None:
    """A study from the ``31x31`` PQN preset queues it unclipped: its point gives back the preset."""
    base, searched = _pqn_study_at_31x31()
    hyperparameters = base.hyperparameters
    coordinates = space.to_coordinates(hyperparameters, searched)
    params = space.params_for(hyperparameters, searched)
    assert params == coordinates  # nothing clipped or rounded on the way in
    queued = space.hyperparameters_from_params(params, hyperparameters, searched)
    for name in (*PQN_OWN, "num_envs"):
        assert getattr(queued, name) == getattr(hyperparameters, name), name
    assert (queued.td_lambda, queued.rollout_steps, queued.epochs, queued.minibatches) == (0.65, 32, 1, 16)
    assert queued.num_envs == 128
    assert queued == hyperparameters


def test_the_dqn_space_is_unchanged_for_a_dqn_base() -> None:
    """A DQN base (and a plug-in's, which has no ``algorithm``) keeps DQN's space, as before PQN's."""
    from doors_gym.levels import get_level
    from doors_gym_baselines.arms import get_arm

    arm, params = get_arm("flax-scan"), get_level("31x31").params()
    assert space.algorithm_of(Hyperparameters()) == "dqn" and space.algorithm_of(types.SimpleNamespace()) == "dqn"
    dqn = space.algorithm_of(Hyperparameters())
    assert space.space_of(arm, params, dqn) == space.space_of(arm, params) == space.SPACE + space.EXPLORATION
    assert space.space_of(arm, None, dqn) == space.SPACE
    assert [coordinate.name for coordinate in space.SPACE] == [
        "one_minus_gamma", "depth", "log2_width", "learning_rate", "optimizer", "log2_batch_size", "log2_num_envs",
        "log2_buffer_size", "train_frequency", "target_update", "learning_starts", "exploration_fraction",
        "double_dqn", "tau", "lr_end_fraction", "max_grad_norm",
    ]
    assert [coordinate.name for coordinate in space.EXPLORATION] == [
        "n_step", "restart_prob", "restart_fraction", "inputs", "dueling", "step_cost", "advantage_learning",
    ]
    envs = next(coordinate for coordinate in space.SPACE if coordinate.target == "num_envs")
    assert (envs.low, envs.high) == (3, 6)
    assert set(DQN_ONLY) <= {coordinate.target for coordinate in space.SPACE}


def test_a_pqn_study_writes_its_best_trial_as_a_pqn_preset(tmp_path: pathlib.Path) -> None:
    """The callers pass the base's algorithm to the space: the best trial of a PQN study reads back as PQN."""
    from doors_gym_baselines import presets
    from doors_gym_baselines.tuning.best import write_best_preset

    base, searched = _pqn_study_at_31x31()
    with optuna_quiet():
        study = optuna.create_study(direction="minimize", sampler=optuna.samplers.RandomSampler(seed=2))
    study.set_user_attr("arm", "flax-scan")
    study.set_user_attr("objective", scores.DEFAULT_OBJECTIVE)
    trial = study.ask()
    sampled = space.suggest_hyperparameters(trial, base.hyperparameters, searched)
    trial.set_user_attr("seed", 0)
    study.tell(trial, 1.0)
    written = presets.read_preset(write_best_preset(study, base, str(tmp_path / "pqn.yml")))
    assert written.config().hyperparameters == sampled and written.hyperparameters["algorithm"] == "pqn"


def test_learning_score_is_the_running_mean_of_greedy_reward() -> None:
    rows = [row(step, value) for step, value in ((1, 0.1), (2, 0.5), (3, 0.6))]
    assert scores.learning_score(rows) == pytest.approx(0.4)
    assert scores.learning_score(rows[:1]) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="history is empty"):
        scores.learning_score([])


def test_tracked_trial_reports_the_running_score(tmp_path: pathlib.Path) -> None:
    reported = []

    class Recorder:
        def report(self, value: float, step: int) -> None:
            reported.append((step, value))

        def should_prune(self) -> bool:
            return False

    tracking.connect(f"sqlite:///{tmp_path / 'mlflow.db'}", "tracked-trial")
    with mlflow.start_run() as run:
        tracked = tuning.TrackedTrial(Recorder(), "learning-curve")
        for step, value in ((100, 0.2), (200, 0.4)):
            harness.report(tracked, row(step, value))
    assert reported == [(100, pytest.approx(0.2)), (200, pytest.approx(0.3))]
    history = mlflow.MlflowClient().get_metric_history(run.info.run_id, "greedy_step_reward")
    assert [(point.step, point.value) for point in history] == [(100, 0.2), (200, 0.4)]


@pytest.mark.parametrize("arm", ["torch", "flax"])
def test_non_finite_loss_prunes_the_trial(arm: str, load_arm) -> None:
    module = load_arm(arm)
    config = DQNConfig.of(
        total_steps=3_000,
        learning_starts=64,
        batch_size=32,
        buffer_size=1_024,
        learning_rate=1e30,
        optimizer="sgd",
        loss="mse",
        eval_every=0,
        quiet=True,
    )
    study = optuna.create_study(direction="maximize")
    study.optimize(
        lambda trial: module.train(config, harness.GreedyReward(trial)).evaluation.mean_step_reward, n_trials=1
    )
    trial = study.trials[0]
    assert trial.state == optuna.trial.TrialState.PRUNED


# --- a study end to end ------------------------------------------------------------------------------------------


def test_two_trial_study_is_tracked_in_mlflow(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    storage, tracking_uri = _store(tmp_path)
    options = tuning.TuneOptions(arm="torch-numpy", n_trials=2, storage=storage, tracking_uri=tracking_uri)
    study = tuning.tune(options, RunSettings(seed=5, **TINY_STUDY))
    assert len(tuning.finished_trials(study)) == 2

    client, parents, children = _runs(tracking_uri, tuning.DEFAULT_EXPERIMENT)
    assert len(parents) == 1 and len(children) == 2
    parent = parents[0]
    assert {child.data.tags["mlflow.parentRunId"] for child in children} == {parent.info.run_id}
    for child in children:
        tags, params = child.data.tags, child.data.params
        assert tags["arm"] == "torch-numpy" and tags["env_id"] == "Doors-v0" and tags["framework"] == "torch"
        assert tags["doors_gym.version"] and tags["git_commit"]
        assert {"learning_rate", "gamma", "batch_size", "hidden_sizes", "search.one_minus_gamma"} <= set(params)
        history = client.get_metric_history(child.info.run_id, "greedy_step_reward")
        assert len(history) >= 1 and 1_000 <= history[0].step < 1_100  # the first vector step past eval_every
        if tags["optuna.state"] == "PRUNED":  # Hyperband may stop the second trial at its first evaluation
            continue
        # The last vector step of the budget (num_envs is searched: 2000 // num_envs vector steps).
        assert 2_000 - 64 < [point.step for point in history][-1] <= 2_000 and len(history) >= 2
        assert "score" in child.data.metrics and "final_rolling_reward" in child.data.metrics
        model = mlflow.pytorch.load_model(f"runs:/{child.info.run_id}/torch-model")
        assert tuple(model(__import__("torch").zeros((3, 225), dtype=__import__("torch").int16)).shape) == (3, 5)

    assert any(child.data.tags["optuna.state"] == "COMPLETE" for child in children)
    plots = {artifact.path for artifact in client.list_artifacts(parent.info.run_id, "plots")}
    assert {"plots/optimization_history.html", "plots/optimization_history.png"} <= plots
    for name in ("param_importances", "contour"):
        assert {f"plots/{name}.html", f"plots/{name}.png"} <= plots or f"plots/{name}.txt" in plots
    assert "best_params.json" in {artifact.path for artifact in client.list_artifacts(parent.info.run_id)}
    best = client.get_run(parent.info.run_id).data
    assert best.tags["best.trial"] == str(study.best_trial.number)
    assert best.metrics["best_value"] == pytest.approx(study.best_value)


def test_flax_trial_logs_a_loadable_params_artifact(tmp_path: pathlib.Path) -> None:
    storage, tracking_uri = _store(tmp_path)
    tuning.tune(
        tuning.TuneOptions(arm="flax-numpy", n_trials=1, storage=storage, tracking_uri=tracking_uri),
        RunSettings(seed=0, **TINY_STUDY),
    )
    _, _, children = _runs(tracking_uri, tuning.DEFAULT_EXPERIMENT)
    policy, config = serving.load_run_model(children[0].info.run_id)
    assert config.run.env_id == "Doors-v0"
    assert policy.q_values(np.zeros((2, 225), dtype=np.int16)).shape == (2, 5)


def test_rerunning_a_finished_study_adds_no_trials(tmp_path: pathlib.Path) -> None:
    storage, tracking_uri = _store(tmp_path)
    options = tuning.TuneOptions(arm="flax-numpy", n_trials=1, storage=storage, tracking_uri=tracking_uri, models=False)
    tuning.tune(options, RunSettings(seed=0, **TINY_STUDY))
    study = tuning.tune(options, RunSettings(seed=0, **TINY_STUDY))
    assert len(study.trials) == 1
    _, parents, children = _runs(tracking_uri, tuning.DEFAULT_EXPERIMENT)
    assert len(parents) == 1 and len(children) == 1


# --- resume and workers (real processes) ------------------------------------------------------------------------


def _finished(storage: str, study_name: str = "dqn-flax-numpy-time-to-solved") -> list:
    try:
        study = optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        return []
    return tuning.finished_trials(study)


def _interruptible(storage: str, tracking_uri: str, study_name: str = "dqn-flax-numpy-time-to-solved") -> bool:
    """Whether the study has a finished trial and a running one whose MLflow run is open (read while paused)."""
    try:
        study = optuna.load_study(study_name=study_name, storage=storage)
        trials = study.get_trials(deepcopy=False)
        client = mlflow.MlflowClient(tracking_uri)
        return any(trial.state.is_finished() for trial in trials) and any(
            trial.state == optuna.trial.TrialState.RUNNING
            and "mlflow_run_id" in trial.user_attrs
            and client.get_run(trial.user_attrs["mlflow_run_id"]).info.status == "RUNNING"
            for trial in trials
        )
    except Exception:  # no study yet, or the paused worker holds a write lock: look again later
        return False


def _kill_during_a_trial(process: subprocess.Popen, storage: str, tracking_uri: str) -> None:
    """SIGKILLs ``process`` while a trial after its first runs; deterministic: it is paused (SIGSTOP) to look."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        os.killpg(process.pid, signal.SIGSTOP)
        if _interruptible(storage, tracking_uri):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return
        os.killpg(process.pid, signal.SIGCONT)
        time.sleep(0.2)
    process.kill()
    process.wait()
    pytest.fail("the first worker never ran a second trial to interrupt")


@pytest.mark.slow
def test_killed_study_resumes_without_duplicates(tmp_path: pathlib.Path) -> None:
    storage, tracking_uri = _store(tmp_path)
    command = _tune_command(tmp_path, "--n-trials", "3")
    first = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=_subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _kill_during_a_trial(first, storage, tracking_uri)
    killed_at = len(_finished(storage))
    assert killed_at >= 1, "the first process should have finished a trial before the kill"
    time.sleep(2.5)  # past the grace period: the interrupted trial's heartbeat is stale

    second = subprocess.run(command, cwd=tmp_path, env=_subprocess_env(), capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    study = optuna.load_study(study_name="dqn-flax-numpy-time-to-solved", storage=storage)
    finished = tuning.finished_trials(study)
    assert len(finished) == 3
    assert len({trial.number for trial in study.trials}) == len(study.trials)
    assert len({tuple(sorted(trial.params.items())) for trial in finished}) == 3, "a resumed sampler replayed params"
    states = [trial.state for trial in study.trials]
    assert optuna.trial.TrialState.RUNNING not in states
    # The trial the kill interrupted is failed (not counted, not rerun), and its MLflow run is marked killed.
    interrupted = [trial for trial in study.trials if trial not in finished]
    assert killed_at < 3 and len(interrupted) == 1
    assert interrupted[0].state == optuna.trial.TrialState.FAIL
    client = mlflow.MlflowClient(tracking_uri)
    assert client.get_run(interrupted[0].user_attrs["mlflow_run_id"]).info.status == "KILLED"
    _, parents, _ = _runs(tracking_uri, tuning.DEFAULT_EXPERIMENT)
    assert len(parents) == 1


SHARED_STORAGES = ["sqlite"] + (["server"] if os.environ.get("DOORS_GYM_TEST_STORAGE") else [])
"""SQLite always; set ``DOORS_GYM_TEST_STORAGE`` to an empty database's URL (PostgreSQL) to test a server too."""


@pytest.mark.slow
@pytest.mark.parametrize("kind", SHARED_STORAGES)
@pytest.mark.parametrize("arm", ["flax-numpy", "flax-scan"])  # one trial per program; programs of 2 trials
def test_two_workers_share_one_study(kind: str, arm: str, tmp_path: pathlib.Path) -> None:
    storage, tracking_uri = _store(tmp_path)
    study_name = f"dqn-{arm}-{tmp_path.name}"
    if kind == "server":
        storage = os.environ["DOORS_GYM_TEST_STORAGE"]
    lanes = ["--trials-per-program", "2"] if arm == "flax-scan" else []
    workers = [
        subprocess.Popen(
            _tune_command(
                tmp_path, "--n-trials", "4", "--worker", str(index), "--study-name", study_name, "--arm", arm, *lanes,
                storage=storage,
            ),
            cwd=tmp_path,
            env=_subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(2)
    ]
    outputs = [worker.communicate(timeout=400) for worker in workers]
    for worker, (_, err) in zip(workers, outputs):
        assert worker.returncode == 0, err[-2000:]
    study = optuna.load_study(study_name=study_name, storage=storage)
    finished = tuning.finished_trials(study)
    assert len(finished) >= 4
    assert {trial.user_attrs["worker"] for trial in finished} == {0, 1}, "both workers ran trials"
    assert len({trial.number for trial in study.trials}) == len(study.trials)
    _, parents, children = _runs(tracking_uri, tuning.DEFAULT_EXPERIMENT)
    assert len(parents) == 1
    assert {child.data.tags["mlflow.parentRunId"] for child in children} == {parents[0].info.run_id}
    assert len(children) == len([trial for trial in study.trials if "mlflow_run_id" in trial.user_attrs])


# --- bad flags ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tune", "--arm", "keras"], "invalid choice: 'keras'"),
        (["tune", "--arm", "torch-numpy", "--n-trials", "0"], "--n-trials 0 is out of range"),
        (["tune", "--arm", "torch-numpy", "--storage", "sqlite:////dev/null/x/optuna.db"], "is unreachable"),
        (["tune", "--arm", "torch-numpy", "--storage", "nosuchdb://host/x"], "is unreachable"),
        (["tune", "--arm", "torch-numpy", "--timeout", "-1"], "--timeout -1.0 is out of range"),
        (["tune", "--arm", "torch-numpy", "--eval-every", "5", "--total-steps", "4"], "--eval-every 5 exceeds"),
        (["tune", "--arm", "torch-numpy", "--study-name", "it's"], '--study-name "it\'s" is invalid'),
        (["compare", "--arms", "torch-numpy", "keras"], "--arms 'keras' is not supported"),
        (["compare", "--seeds", "0"], "--seeds 0 is out of range"),
        (["compare", "--quick", "--full"], "not allowed with argument"),
        (["compare", "--total-steps", "0"], "--total-steps 0 is out of range"),
        (["compare", "--preset", "nowhere.yml"], "--preset 'nowhere.yml' is neither one of"),
        (["tune", "--arm", "torch-numpy", "--total-steps", "20000"], "leaves no evaluation to be solved at"),
        (["tune", "--arm", "torch-numpy", "--objective", "reward"], "invalid choice: 'reward'"),
        (["tune", "--arm", "torch-numpy", "--penalty-seconds", "-1"], "--penalty-seconds -1.0 is out of range"),
        (["tune", "--arm", "torch-numpy", "--storage", "mysql+nosuch://u@h/db"], "is unreachable"),
        (["train", "--preset", "nowhere.yml"], "--preset 'nowhere.yml' is neither one of"),
        (["tune", "--arm", "flax-scan", "--executor", "ray"], "invalid choice: 'ray'"),
        (["tune", "--arm", "flax-scan", "--workers", "0"], "--workers 0 is out of range"),
        (["tune", "--arm", "flax-scan", "--address", "tcp://h:8786"], "--address 'tcp://h:8786' needs --executor"),
        (
            ["tune", "--arm", "flax-scan", "--executor", "dask", "--address", "h:8786"],
            "--address 'h:8786' is not a scheduler address: expected tcp://HOST:PORT",
        ),
        (
            ["tune", "--arm", "flax-scan", "--executor", "dask", "--workers", "2", "--address", "tcp://h:8786"],
            "--workers 2 does not go with --address 'tcp://h:8786'",
        ),
    ],
)
def test_bad_flags_exit_2_with_a_clear_message(
    argv: list[str], message: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from doors_gym import cli

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_an_unreachable_storage_is_its_own_error_and_a_bug_is_not_one(tmp_path, monkeypatch) -> None:
    with pytest.raises(tuning.StorageUnreachable, match="is unreachable: OperationalError"):
        tuning.open_storage(f"sqlite:///{tmp_path / 'no' / 'such' / 'folder' / 'optuna.db'}")
    assert issubclass(tuning.StorageUnreachable, ValueError)  # the command line reports it as a bad flag

    def broken(*args, **kwargs):
        raise TypeError("a bug, not an unreachable storage")

    monkeypatch.setattr(optuna.storages, "RDBStorage", broken)
    with pytest.raises(TypeError, match="a bug"):
        tuning.open_storage(f"sqlite:///{tmp_path / 'optuna.db'}")


def test_an_unreachable_tracking_store_is_its_own_error_and_a_bug_is_not_one(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(tracking.TrackingUnreachable, match="is unreachable"):
        tracking.connect(f"sqlite:///{blocker / 'mlflow.db'}", "nowhere")
    assert issubclass(tracking.TrackingUnreachable, ValueError)  # the command line reports it as a bad flag

    def broken(*args, **kwargs):
        raise TypeError("a bug, not an unreachable store")

    monkeypatch.setattr(tracking, "_experiment_id", broken)
    with pytest.raises(TypeError, match="a bug"):
        tracking.connect(f"sqlite:///{tmp_path / 'mlflow.db'}", "somewhere")


def test_a_worker_that_loses_the_race_for_a_parent_tag_tries_again(tmp_path, monkeypatch):

    tracking.connect(f"sqlite:///{tmp_path / 'mlflow.db'}", "race")
    study = optuna.create_study(direction="maximize")
    study.optimize(lambda trial: trial.suggest_float("x", 0.0, 1.0), n_trials=2)
    real_set_tags, calls = mlflow.set_tags, []

    def set_tags_losing_once(tags):
        calls.append(tags)
        if len(calls) == 1:  # what SQLite says when another worker inserted the same tag first
            raise mlflow.exceptions.MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: tags.key")
        return real_set_tags(tags)

    monkeypatch.setattr(mlflow, "set_tags", set_tags_losing_once)
    with mlflow.start_run() as run:
        tuning.log_study_plots(study)
    assert len(calls) == 2
    tags = mlflow.MlflowClient().get_run(run.info.run_id).data.tags
    assert tags["best.trial"] == str(study.best_trial.number) and "best.x" in tags


def test_a_study_of_another_objective_is_an_error_not_a_mix(tmp_path: pathlib.Path) -> None:
    storage, tracking_uri = _store(tmp_path)
    curve = tuning.TuneOptions(
        arm="flax-numpy", objective="learning-curve", n_trials=1, storage=storage, tracking_uri=tracking_uri
    )
    assert curve.resolved_study_name == "dqn-flax-numpy-learning-curve"
    study = tuning.tune(curve, RunSettings(seed=0, **TINY_STUDY))
    assert study.direction == optuna.study.StudyDirection.MAXIMIZE and study.user_attrs["objective"] == "learning-curve"
    timed = dataclasses.replace(curve, objective="time-to-solved", study_name="dqn-flax-numpy-learning-curve")
    with pytest.raises(ValueError, match="tunes the 'learning-curve' objective .maximize., not 'time-to-solved'"):
        tuning.tune(timed, RunSettings(seed=0, **TINY_STUDY))


def test_time_to_solved_study_writes_a_preset_and_a_summary(tmp_path: pathlib.Path) -> None:
    from doors_gym_baselines import presets

    storage, tracking_uri = _store(tmp_path)
    options = tuning.TuneOptions(
        arm="flax-numpy",
        n_trials=2,
        storage=storage,
        tracking_uri=tracking_uri,
        models=False,
        preset_out=str(tmp_path / "preset.yml"),
        summary_out=str(tmp_path / "summary"),
        confirm_top=2,
        confirm_seeds=1,
    )
    run = RunSettings(seed=3, hold_out_steps=1_000, **TINY_STUDY)
    study = tuning.tune(options, run)
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    finished = tuning.finished_trials(study)
    # Trials train the tuning seeds in turn, and unsolved ones score their budget plus the penalty.
    assert [trial.user_attrs["seed"] for trial in finished] == [3 + trial.number for trial in finished]
    for trial in finished:
        if trial.state == optuna.trial.TrialState.COMPLETE and not trial.user_attrs["seconds_to_solved"]:
            low = trial.user_attrs["wall_seconds"] + scores.PENALTY_SECONDS
            assert low - 1 <= trial.value <= trial.user_attrs["wall_seconds"] + 2 * scores.PENALTY_SECONDS + 1
    # The best complete trials trained the next tuning seed too; the preset is the best on average.
    complete = [trial for trial in finished if trial.state == optuna.trial.TrialState.COMPLETE]
    confirmed = [study.user_attrs[f"confirm.{trial.number}"] for trial in complete]
    assert [found["seeds"] for found in confirmed] == [[3 + t.number, 3 + (t.number + 1) % 10] for t in complete]
    winner = min(confirmed, key=lambda found: np.mean(found["scores"]))
    preset = presets.read_preset(tmp_path / "preset.yml")
    assert preset.study["study"] == "dqn-flax-numpy-time-to-solved" and preset.study["trial"] == winner["trial"]
    assert preset.study["confirmed"]["seeds"] == winner["seeds"]
    expected = space.hyperparameters_from_params(study.trials[winner["trial"]].params, Hyperparameters())
    assert preset.config().hyperparameters == expected
    assert preset.run == {"total_steps": 2_000, "eval_every": 1_000, "hold_out_steps": 1_000, "stop_when_solved": True}
    summary = json.loads((tmp_path / "summary" / "summary.json").read_text())
    assert summary["best"]["trial"] == study.best_trial.number and summary["objective"] == "time-to-solved"
    assert summary["confirmed"][0]["trial"] == winner["trial"] and len(summary["confirmed"]) == len(complete)
    assert (tmp_path / "summary" / "optimization_history.png").read_bytes()[:4] == b"\x89PNG"


def test_a_new_study_starts_from_the_quick_preset_and_its_point_round_trips() -> None:
    from doors_gym_baselines import presets

    quick = dataclasses.replace(Hyperparameters(), **presets.BUILTIN["quick"][0])
    point = space.params_for(quick)
    back = space.hyperparameters_from_params(point, Hyperparameters())
    # The nearest point of the space: the buffer goes to a power of two, everything else is kept.
    assert back == dataclasses.replace(quick, buffer_size=2**16)
    assert space.params_for(back) == point
    with pytest.raises(ValueError, match="differ in width"):
        space.params_for(Hyperparameters(hidden_sizes=(64, 32)))
    study = optuna.create_study(direction="minimize")
    study.set_user_attr("arm", "flax-numpy")
    tuning.start_study(study, "quick", Hyperparameters())
    study.optimize(lambda trial: space.suggest_hyperparameters(trial, Hyperparameters()).learning_rate, n_trials=2)
    assert study.trials[0].params == point and study.trials[0].user_attrs["start_from"] == "quick"
    assert study.trials[1].params != point
    tuning.start_study(study, "quick", Hyperparameters())  # a study with trials is left alone
    assert len(study.trials) == 2
    with pytest.raises(ValueError, match="start_from='slow' is neither one of"):
        tuning.TuneOptions(arm="flax-numpy", start_from="slow")
    assert tuning.first_rung(200_000, 10_000) == 25_000 and tuning.first_rung(2_000, 1_000) == 1_000


@pytest.mark.parametrize(
    ("flag", "url"),
    [("--storage", "postgresql+psycopg2://optuna@db-host/optuna"), ("--tracking-uri", "mysql+pymysql://u@h/mlflow")],
)
def test_a_missing_database_driver_names_the_package_to_install(flag, url, tmp_path, monkeypatch, capsys) -> None:
    from doors_gym import cli

    monkeypatch.chdir(tmp_path)
    # Whatever is installed here: the driver's module is made to be missing.
    for driver, (_, package) in list(tracking.DRIVER_PACKAGES.items()):
        monkeypatch.setitem(tracking.DRIVER_PACKAGES, driver, ("doors_gym_no_such_driver", package))
    package = {"--storage": "psycopg2-binary", "--tracking-uri": "PyMySQL"}[flag]
    argv = ["tune", "--arm", "torch-numpy", flag, url]
    if flag == "--tracking-uri":
        argv += ["--storage", f"sqlite:///{tmp_path / 'optuna.db'}"]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "needs the database driver" in error and f"pip install '{package}'" in error, error


def test_experiments_open_on_their_runs_in_mlflow_3(tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracking.connect(uri, "new")
    client = mlflow.MlflowClient(uri)
    old = client.create_experiment("older", artifact_location=(tmp_path / "mlruns").as_uri())  # made by hand
    assert "mlflow.experimentKind" not in client.get_experiment(old).tags
    tracking.connect(uri, "older")
    for name in ("new", "older"):
        tags = client.get_experiment_by_name(name).tags
        assert tags["mlflow.experimentKind"] == "custom_model_development", (name, tags)


# --- trials asked centrally: queued trials under lanes, the stop rule, heartbeats ----------------------------------


def _lane_study() -> tuple[object, object, list, list[str]]:
    """``(study, base, space, shared)``: an in-memory study of flax-scan's space and its program coordinates."""
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.config import make_config
    from doors_gym_baselines.tuning.lanes import program_coordinates

    base = make_config(Hyperparameters(), RunSettings(seed=0, total_steps=2_000, eval_every=1_000))
    search = space.space_of(get_arm("flax-scan"), base.params)
    with optuna_quiet():
        study = optuna.create_study(direction="minimize")
    return study, base, search, program_coordinates(search)


def _points_of_two_programs(base, search, shared) -> tuple[dict, dict]:
    """Two points of ``search`` whose program coordinates differ."""
    points = []
    for seed in range(50):
        with optuna_quiet():
            draw = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
        trial = draw.ask()
        space.suggest_hyperparameters(trial, base.hyperparameters, search)
        points.append(dict(trial.params))
        if any(points[-1][name] != points[0][name] for name in shared):
            return points[0], points[-1]
    raise AssertionError("no two random points of different programs")


def _coordinates(trial, shared) -> tuple:
    return tuple(trial.params[name] for name in shared)


def test_a_queued_trial_of_another_program_leads_a_program_of_its_own() -> None:
    from doors_gym_baselines.tuning.lanes import ask_program

    study, base, search, shared = _lane_study()
    first, second = _points_of_two_programs(base, search, shared)
    study.enqueue_trial(first)
    study.enqueue_trial(second)  # both queued again after their workers died, say

    program = ask_program(study, 3, base, search, tuning_seeds=10)
    assert [trial.params for trial, _ in program] == [first], "the second queued trial fits no program of the first's"
    program = ask_program(study, 3, base, search, tuning_seeds=10)
    assert program[0][0].params == second and len(program) == 3
    assert len({_coordinates(trial, shared) for trial, _ in program}) == 1
    states = [trial.state for trial in study.trials]
    assert optuna.trial.TrialState.FAIL not in states and optuna.trial.TrialState.WAITING not in states


def test_a_queued_trial_drawn_as_a_later_lane_is_retried_in_a_program_of_its_own(monkeypatch) -> None:
    from doors_gym_baselines.tuning import lanes

    study, base, search, shared = _lane_study()
    first, second = _points_of_two_programs(base, search, shared)
    beats = []

    def queue_during_the_asking(study_, trials):  # another process queues a trial between two lanes' asking
        beats.append(trials)
        if len(beats) == 1:
            study_.enqueue_trial(second)

    monkeypatch.setattr(lanes, "heartbeat", queue_during_the_asking)
    study.enqueue_trial(first)
    program = lanes.ask_program(study, 3, base, search, tuning_seeds=10)
    assert [trial.params for trial, _ in program] == [first]
    handed_back = [trial for trial in study.trials if trial.state == optuna.trial.TrialState.FAIL]
    assert len(handed_back) == 1 and handed_back[0].params == second

    program = lanes.ask_program(study, 3, base, search, tuning_seeds=10)
    assert program[0][0].params == second, "the queued trial is retried, leading the next program"
    assert program[0][0].user_attrs["handed_back_from"] == handed_back[0].number
    assert len({_coordinates(trial, shared) for trial, _ in program}) == 1


def test_the_stop_rule_counts_every_workers_running_trials() -> None:
    with optuna_quiet():
        study = optuna.create_study()
    study.optimize(lambda trial: trial.suggest_float("x", 0.0, 1.0), n_trials=1)
    others = [study.ask() for _ in range(2)]  # another worker's lanes, running
    assert tuning.trials_left(study, 4) == 1
    assert tuning.trials_left(study, 3) == 0

    with optuna_quiet():
        study.optimize(
            lambda trial: trial.suggest_float("x", 0.0, 1.0), n_trials=10, callbacks=[tuning.StopAtCount(5)]
        )
    assert len(tuning.finished_trials(study)) == 3, "3 finished and 2 running: 5, not 5 finished and 2 more"
    for trial in others:
        study.tell(trial, 0.5)
    assert len(tuning.finished_trials(study)) == 5


def test_a_program_beats_while_it_compiles_so_a_new_worker_never_fails_it(tmp_path: pathlib.Path) -> None:
    from optuna.storages import fail_stale_trials

    from doors_gym_baselines.tuning.lanes import Heartbeat, heartbeat

    storage = tuning.open_storage(f"sqlite:///{tmp_path / 'optuna.db'}", heartbeat_interval=1, grace_period=1)
    with optuna_quiet():
        study = optuna.create_study(study_name="beats", storage=storage)
    with pytest.warns(UserWarning, match="Heartbeat of storage"):
        beating, silent = study.ask(), study.ask()
    heartbeat(study, [beating, silent])  # as each is asked (lanes.ask_program)
    with Heartbeat(study, lambda: [beating], interval=0.2):
        # a compile longer than the grace period, no evaluation yet: SQLite's clock (CURRENT_TIMESTAMP, which Optuna
        # stamps heartbeats with) keeps whole seconds, so a silent trial is stale for certain only past grace + 1 s
        time.sleep(2.5)
        with pytest.warns(optuna.exceptions.ExperimentalWarning):
            fail_stale_trials(study)  # what a worker starting now does
    states = {trial.number: trial.state for trial in study.get_trials(deepcopy=False)}
    assert states[beating.number] == optuna.trial.TrialState.RUNNING
    assert states[silent.number] == optuna.trial.TrialState.FAIL


def _dask_workers(driver: subprocess.Popen) -> list:
    """The worker processes of the local Dask cluster a ``tune --executor dask`` driver started (spawned children
    that are neither Dask's nor multiprocessing's helpers)."""
    import psutil

    children = psutil.Process(driver.pid).children(recursive=True)
    return [child for child in children if "spawn_main" in " ".join(child.cmdline())]


@pytest.mark.slow
def test_tune_on_dask_ends_with_exactly_n_trials_after_a_worker_is_killed(tmp_path: pathlib.Path) -> None:
    needs("distributed")
    storage, tracking_uri = _store(tmp_path)
    command = _tune_command(
        tmp_path, "--arm", "flax-scan", "--executor", "dask", "--workers", "2", "--n-trials", "6",
        "--trials-per-program", "3", "--grace-period", "5",
    )  # fmt: skip
    driver = subprocess.Popen(
        command, cwd=tmp_path, env=_subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    study_name = "dqn-flax-scan-time-to-solved"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and driver.poll() is None:  # both programs sent: 6 trials running
        running = [t for t in _all_trials(storage, study_name) if t.state == optuna.trial.TrialState.RUNNING]
        if len(running) == 6:
            break
        time.sleep(0.5)
    time.sleep(2.0)  # their workers compile and train
    workers = _dask_workers(driver)
    assert len(workers) == 2 and not tuning.finished_trials(optuna.load_study(study_name=study_name, storage=storage))
    workers[0].kill()
    output, _ = driver.communicate(timeout=300)
    assert driver.returncode == 0, output[-3000:]
    assert "(running or queued there); Dask runs it again" in output, output[-3000:]

    trials = _all_trials(storage, study_name)
    assert len(tuning.finished_trials(optuna.load_study(study_name=study_name, storage=storage))) == 6
    assert len(trials) == 6, "no trial failed, none asked beyond --n-trials"
    client, parents, children = _runs(tracking_uri, tuning.DEFAULT_EXPERIMENT)
    assert len(parents) == 1 and len(children) == 6
    assert {child.info.status for child in children} == {"FINISHED"}
    retried = [child for child in children if executors.RETRIED_TAG in child.data.tags]
    assert len(retried) == 3, "the killed worker's program: its 3 trials, each logged once"
    assert {trial.user_attrs["mlflow_run_id"] for trial in trials} == {child.info.run_id for child in children}


def _all_trials(storage: str, study_name: str) -> list:
    try:
        return optuna.load_study(study_name=study_name, storage=storage).get_trials(deepcopy=False)
    except KeyError:
        return []


def test_the_inputs_coordinate_sets_only_the_valid_pairs_of_relative_inputs_and_cell_planes() -> None:
    """A study at a level with random doors searches the inputs as one coordinate: a flag each would sample the cell
    planes off without the relative inputs, a config that raises (the 31x31 preset has them off)."""
    from doors_gym.levels import get_level
    from doors_gym_baselines import presets
    from doors_gym_baselines.arms import get_arm

    base = presets.level_preset("31x31").config(None).hyperparameters
    searched = space.space_of(get_arm("flax-scan"), get_level("31x31").params(), base.algorithm)
    assert "relative_inputs" not in {coordinate.name for coordinate in searched}
    params = space.params_for(base, searched)
    pairs = set()
    for choice in space.INPUTS:
        chosen = space.hyperparameters_from_params({**params, "inputs": choice}, base, searched)
        pairs.add((chosen.relative_inputs, chosen.cell_planes))
        assert space.to_coordinates(chosen, searched)["inputs"] == choice
        DQNConfig(hyperparameters=chosen)  # valid
    assert pairs == {(False, True), (True, True), (True, False)}
