"""Every MLflow run a command starts ends FINISHED, FAILED or KILLED, also after ``kill -9``: killed mid-run,
each kind of run (a comparison's seed, a study's confirmation, a tracked training) is marked KILLED when the
next command connects, and that command says what it cleaned."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from stacks import needs

mlflow = needs("mlflow")
needs("flax")

from doors_gym_baselines import tracking  # noqa: E402

ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "JAX_PLATFORMS": "cpu"}


def doors_gym(*argv: str) -> list[str]:
    return [sys.executable, "-m", "doors_gym", *argv]


def kill_when_running(
    command: list[str], tracking_uri: str, experiment: str, name_prefix: str, cwd, status: str = "RUNNING"
) -> str:
    """Starts ``command``, kills it (SIGKILL, its whole process group) once a run whose name starts with
    ``name_prefix`` has ``status`` (RUNNING: while it runs), and returns that run's id."""
    process = subprocess.Popen(command, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)  # fmt: skip
    client = None
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and process.poll() is None:
            with tracking.sqlite_lock(tracking_uri):  # the command may be creating the store's tables
                client = client or mlflow.MlflowClient(tracking_uri)
                found = client.get_experiment_by_name(experiment)
            if found is not None:
                running = client.search_runs([found.experiment_id], f"attributes.status = '{status}'")
                targets = [run for run in running if (run.info.run_name or "").startswith(name_prefix)]
                if targets:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                    return targets[0].info.run_id
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    pytest.fail(f"no run named {name_prefix}* was ever {status} (the command exited {process.returncode})")


def assert_cleaned(resumed: subprocess.CompletedProcess, tracking_uri: str, experiment: str, run_id: str) -> None:
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    client = mlflow.MlflowClient(tracking_uri)
    assert client.get_run(run_id).info.status == "KILLED"
    assert "left RUNNING by a killed process, now KILLED" in resumed.stdout
    experiment_id = client.get_experiment_by_name(experiment).experiment_id
    assert not client.search_runs([experiment_id], "attributes.status = 'RUNNING'"), "a run was left RUNNING"


@pytest.mark.slow
@pytest.mark.parametrize("executor", [[], ["--executor", "dask", "--workers", "1"]], ids=["local", "dask"])
def test_a_killed_comparison_resumes_in_its_own_parent_run(tmp_path: pathlib.Path, executor: list[str]) -> None:
    # A comparison's runs are logged by the driver once trained: killed while seed 101 trains (seed 100 logged),
    # its parent run is left RUNNING, ended KILLED by the next command, then continued by it. Under Dask the kill
    # takes the driver and its cluster's workers (one process group), and the rerun starts a cluster afresh.
    if executor:
        needs("distributed")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    command = doors_gym("compare", "--arms", "flax-numpy", "--seeds", "2", "--preset", "quick", "--total-steps",
                        "8000", "--eval-every", "2000", "--out", str(tmp_path / "out"), "--tracking-uri", uri,
                        "--quiet", "--no-models", *executor)  # fmt: skip
    kill_when_running(command, uri, "doors-gym-compare", "flax-numpy-seed100", tmp_path, status="FINISHED")
    resumed = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "left RUNNING by a killed process, now KILLED" in resumed.stdout and "continuing" in resumed.stdout
    assert "reusing" in resumed.stdout  # the seed that had finished is not trained again
    client = mlflow.MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("doors-gym-compare").experiment_id
    runs = client.search_runs([experiment_id])
    parents = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
    assert [(run.info.run_name, run.info.status) for run in parents] == [("compare-quick", "FINISHED")]
    children = sorted((run.info.run_name, run.info.status, run.data.tags["mlflow.parentRunId"]) for run in runs
                      if run not in parents)  # fmt: skip
    parent = parents[0].info.run_id
    finished = [child for child in children if child[1] == "FINISHED"]
    assert finished == [("flax-numpy-seed100", "FINISHED", parent), ("flax-numpy-seed101", "FINISHED", parent)]
    # Under Dask seed 101 may have trained beside seed 100 and been in the middle of its logging at the kill: that
    # record is closed KILLED by the rerun, which logs the run again; nothing else may be left beside them.
    others = [child for child in children if child not in finished]
    allowed = [("flax-numpy-seed101", "KILLED", parent)] if executor else []
    assert others in ([], allowed), others


@pytest.mark.slow
def test_a_killed_confirmation_run_ends_killed(tmp_path: pathlib.Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    command = doors_gym("tune", "--arm", "flax-numpy", "--n-trials", "2", "--confirm-top", "1", "--confirm-seeds", "2",
                        "--total-steps", "6000", "--eval-every", "2000", "--hold-out-steps", "2000", "--start-from", "",
                        "--storage", f"sqlite:///{tmp_path / 'optuna.db'}", "--tracking-uri", uri, "--no-models",
                        "--heartbeat-interval", "1", "--grace-period", "2")  # fmt: skip
    run_id = kill_when_running(command, uri, "doors-gym-tune", "confirm-", tmp_path)
    time.sleep(2.5)  # past the grace period, as after any killed worker
    resumed = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert_cleaned(resumed, uri, "doors-gym-tune", run_id)


def test_a_killed_tracked_training_ends_killed(tmp_path: pathlib.Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    train = ("train", "--arm", "flax-numpy", "--preset", "quick", "--eval-every", "2000", "--quiet", "--track",
             "--tracking-uri", uri)  # fmt: skip
    run_id = kill_when_running(doors_gym(*train, "--total-steps", "60000"), uri, "doors-gym-train", "flax-numpy",
                               tmp_path)  # fmt: skip
    resumed = subprocess.run(doors_gym(*train, "--total-steps", "2000"), cwd=tmp_path, env=ENV, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
    assert_cleaned(resumed, uri, "doors-gym-train", run_id)


def test_a_run_of_a_living_process_or_another_host_is_left_alone() -> None:
    host, pid, start = tracking.this_process().rsplit(":", 2)
    assert tracking.process_alive(tracking.this_process()) is True
    assert tracking.process_alive(f"{host}:{pid}:{start}0") is False  # the same id, another start: reused
    assert tracking.process_alive(f"another-{host}:{pid}:{start}") is None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert tracking.process_alive(f"{host}:{dead.pid}:") is False
