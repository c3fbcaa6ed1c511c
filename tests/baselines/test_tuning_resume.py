"""A confirmation killed between two seeds resumes on the next seed: nothing finished trains twice, no name doubles."""

from __future__ import annotations

import pathlib

import pytest
from stacks import needs

optuna = needs("optuna")
mlflow = needs("mlflow")
needs("flax")

from doors_gym_baselines import tracking, tuning  # noqa: E402
from doors_gym_baselines.config import RunSettings  # noqa: E402


class Killed(BaseException):
    """Stands for the process dying in the middle of a training."""


def test_a_confirmation_killed_between_its_seeds_resumes_per_seed(tmp_path: pathlib.Path, monkeypatch) -> None:
    storage, tracking_uri = f"sqlite:///{tmp_path / 'optuna.db'}", f"sqlite:///{tmp_path / 'mlflow.db'}"
    options = tuning.TuneOptions(
        arm="flax-numpy", n_trials=1, storage=storage, tracking_uri=tracking_uri, models=False,
        confirm_top=1, confirm_seeds=2, verbose=False,
    )  # fmt: skip
    run = RunSettings(seed=3, total_steps=2_000, eval_every=1_000, hold_out_steps=1_000)
    trained: list[str] = []
    original = tracking.TrackedRun.train

    def train(self, *args, **kwargs):
        name = mlflow.active_run().info.run_name
        if name.startswith("confirm-"):
            trained.append(name)
            if kill_at is not None and len(trained) == kill_at:
                raise Killed(name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(tracking.TrackedRun, "train", train)
    kill_at = 2  # the first confirmation seed finishes, the second dies
    with pytest.raises(Killed):
        tuning.tune(options, run)
    first_attempt, trained[:] = list(trained), []
    kill_at = None
    study = tuning.tune(options, run)
    assert len(first_attempt) == 2 and trained == first_attempt[1:]  # only the killed seed trains again
    confirmed = study.user_attrs["confirm.0"]
    assert confirmed["seeds"] == [3, 4, 5] and len(confirmed["scores"]) == 3
    client = mlflow.MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(options.experiment)
    names = [found.info.run_name for found in client.search_runs([experiment.experiment_id], max_results=100)]
    confirm_names = sorted(name for name in names if name.startswith("confirm-"))
    assert confirm_names == ["confirm-0-seed4", "confirm-0-seed5"]


def test_a_program_killed_midway_fails_its_trials_and_the_study_resumes(tmp_path: pathlib.Path, monkeypatch) -> None:
    import time

    from doors_gym_baselines.arm import Arm

    storage, tracking_uri = f"sqlite:///{tmp_path / 'optuna.db'}", f"sqlite:///{tmp_path / 'mlflow.db'}"
    options = tuning.TuneOptions(
        arm="flax-scan", n_trials=2, trials_per_program=2, storage=storage, tracking_uri=tracking_uri, models=False,
        verbose=False, start_from="", heartbeat_interval=1, grace_period=1,
    )  # fmt: skip
    run = RunSettings(seed=0, total_steps=2_000, eval_every=1_000, hold_out_steps=1_000)
    original = Arm.train

    def killed(self, config, trial=None):
        raise Killed("the process died in its first program")

    monkeypatch.setattr(Arm, "train", killed)
    with pytest.raises(Killed):
        tuning.tune(options, run)
    monkeypatch.setattr(Arm, "train", original)
    time.sleep(2.5)  # past the grace period: the dead program's trials have no heartbeat
    study = tuning.tune(options, run)
    states = [trial.state for trial in study.get_trials(deepcopy=False)]
    assert states[:2] == [optuna.trial.TrialState.FAIL] * 2
    assert len(states) == 4 and all(state.is_finished() and state.name != "FAIL" for state in states[2:])
    client = mlflow.MlflowClient(tracking_uri)
    for trial in study.get_trials(deepcopy=False)[:2]:
        assert client.get_run(trial.user_attrs["mlflow_run_id"]).info.status == "KILLED"
