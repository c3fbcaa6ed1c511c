"""A confirmation killed between two seeds resumes on the next seed: nothing finished trains twice, no name doubles."""

from __future__ import annotations

import pathlib

import pytest

optuna = pytest.importorskip("optuna")
mlflow = pytest.importorskip("mlflow")
pytest.importorskip("flax")

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
