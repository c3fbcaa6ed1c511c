"""``compare`` and ``ladder`` spread over Dask (``--executor dask``): the same figures as the runs made here, a
killed worker's run retried elsewhere and logged once, a run that raises named while the others finish, and a
scheduler with workers started as processes of their own on 127.0.0.1."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pytest
from stacks import needs

mlflow = needs("mlflow")
needs("torch")
needs("distributed")

from doors_gym_baselines.experiments import compare, executors  # noqa: E402
from doors_gym_baselines.arms import get_arm  # noqa: E402
from doors_gym_baselines.config import RunSettings  # noqa: E402
from doors_gym_baselines.experiments.executors import ExecutorOptions, RunsFailed, open_executor  # noqa: E402

ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "JAX_PLATFORMS": "cpu"}


def tiny(tmp_path: pathlib.Path, name: str, **values) -> compare.CompareOptions:
    settings = dict(arms=("torch-numpy",), seeds=2, preset="quick", total_steps=4_000, eval_every=2_000,
                    out=str(tmp_path / name), tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
                    models=False)  # fmt: skip
    return compare.CompareOptions(**{**settings, **values})


def nested_runs(options: compare.CompareOptions, parent: str | None = None) -> list:
    """The nested runs of the experiment (of one parent run)."""
    client = mlflow.MlflowClient(options.tracking_uri)
    experiment = client.get_experiment_by_name(options.experiment)
    runs = client.search_runs([experiment.experiment_id])
    nested = [run for run in runs if "mlflow.parentRunId" in run.data.tags]
    return [run for run in nested if parent is None or run.data.tags["mlflow.parentRunId"] == parent]


def test_executor_flags_are_checked() -> None:
    with pytest.raises(ValueError, match="workers=2 needs executor='dask'"):
        ExecutorOptions(workers=2)
    with pytest.raises(ValueError, match="address='tcp://h:8786' needs executor='dask'"):
        ExecutorOptions(address="tcp://h:8786")
    with pytest.raises(ValueError, match="workers=0 is out of range"):
        ExecutorOptions("dask", workers=0)
    with pytest.raises(ValueError, match="expected tcp://HOST:PORT"):
        ExecutorOptions("dask", address="h:8786")
    with pytest.raises(ValueError, match="does not go with address"):
        ExecutorOptions("dask", workers=2, address="tcp://h:8786")
    with pytest.raises(ValueError, match=r"executor='ray' is not supported: expected one of \['local', 'dask'\]"):
        ExecutorOptions("ray")


def test_dask_gives_the_local_figures_and_logs_host_and_worker(tmp_path: pathlib.Path) -> None:
    options = tiny(tmp_path, "local", arms=("torch-numpy", "flax-numpy"), seeds=1)
    local = compare.compare(options, RunSettings(quiet=True))
    spread = dataclasses.replace(options, out=str(tmp_path / "dask"))
    with open_executor(ExecutorOptions("dask", workers=2)) as executor:
        remote = compare.compare(spread, RunSettings(quiet=True), executor)
    for mine, theirs in zip(local.rows, remote.rows, strict=True):
        assert (mine.key, mine.env_steps_per_second > 0) == (theirs.key, True)
        if mine.key == "torch-numpy":  # one torch thread in both: the same numbers
            assert mine.rolling_reward.mean == theirs.rolling_reward.mean
            assert mine.greedy_success_rate.mean == theirs.greedy_success_rate.mean
    runs = nested_runs(spread, remote.run_id)
    assert len(runs) == 2 and {run.data.params["worker"] for run in runs} <= {"0", "1"}  # the workers' names
    assert {run.data.params["worker"] for run in nested_runs(options, local.run_id)} == {"local"}
    seeds_csv = (pathlib.Path(spread.out) / "compare_seeds.csv").read_text().splitlines()
    assert seeds_csv[0].endswith(",host,worker") and all(not line.endswith(",local") for line in seeds_csv[1:])


@pytest.mark.slow
def test_a_killed_workers_run_is_retried_elsewhere_and_logged_once(tmp_path: pathlib.Path, capsys) -> None:
    options = tiny(tmp_path, "out", total_steps=30_000, eval_every=10_000)
    killed: list[str] = []
    with open_executor(ExecutorOptions("dask", workers=2)) as executor:
        client = executor.client()
        pids = client.run(os.getpid)

        def kill_one_mid_run() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                busy = [address for address, keys in client.processing().items() if keys and address in pids]
                if busy:
                    time.sleep(1.0)  # the run is under way (importing torch or training)
                    os.kill(pids[busy[0]], signal.SIGKILL)
                    killed.append(busy[0])
                    return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_one_mid_run)
        killer.start()
        outcome = compare.compare(options, RunSettings(quiet=True), executor)
        killer.join()
    assert killed, "no worker was ever busy"
    runs = nested_runs(options)
    assert sorted((run.info.run_name, run.info.status) for run in runs) == [
        ("torch-numpy-seed100", "FINISHED"), ("torch-numpy-seed101", "FINISHED")]  # fmt: skip
    assert [row.seeds for row in outcome.rows] == [2]
    retried = [run for run in runs if executors.RETRIED_TAG in run.data.tags]
    assert [run.data.tags[executors.RETRIED_TAG] for run in retried] == killed  # the killed one's run, alone
    printed = capsys.readouterr().out
    seed = retried[0].data.tags["seeds"]
    said = f"torch-numpy seed {seed} at study: worker {killed[0]} died holding it (running or queued there); Dask runs"
    assert f"{said} it again" in printed
    assert printed.count(f"run again after losing worker {killed[0]}") == 1


def test_the_driver_tells_each_run_whose_worker_died_and_marks_it_retried(capsys) -> None:
    retries = executors.Retries()
    retries.labels["ours"] = "torch-numpy seed 100 at study"
    retries.worker_removed((0.0, {"action": "add-worker", "worker": "tcp://10.0.0.2:4001"}))
    removed = {"action": "remove-worker", "worker": "tcp://10.0.0.2:4001", "processing-tasks": {"ours", "theirs"}}
    retries.worker_removed((1.0, {**removed, "expected": False}))
    assert capsys.readouterr().out == (
        "  torch-numpy seed 100 at study: worker tcp://10.0.0.2:4001 died holding it (running or queued there); Dask "
        "runs it again\n")  # fmt: skip
    trained = executors.Trained(None, [], None, None, 0.0, "host-b", "1")
    assert retries.finished("ours", trained).lost_on == ("tcp://10.0.0.2:4001",)
    assert retries.finished("theirs", trained).lost_on == ()  # another driver's task
    assert not retries.lost and not retries.labels


def test_the_task_key_tells_two_drivers_apart(tmp_path: pathlib.Path, monkeypatch) -> None:
    def keys(**values) -> list[str]:
        planned = compare.plan(tiny(tmp_path, "out", **values))
        return [job.key for *_, job in compare.missing_jobs(planned, {})]

    same = keys()
    assert keys() == same and len(set(same)) == 2 and same[0].startswith("torch-numpy-seed100-")
    assert set(keys(out=str(tmp_path / "other"))).isdisjoint(same)  # another driver's folder
    assert set(keys(models=True)).isdisjoint(same)  # another driver's models come back
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / "a")
    relative = keys(out="out")
    monkeypatch.chdir(tmp_path / "b")
    assert set(keys(out="out")).isdisjoint(relative)  # the same relative --out from two folders


def test_checkpoints_go_to_an_absolute_folder_and_a_url_is_refused(tmp_path: pathlib.Path, monkeypatch) -> None:
    needs("flax")
    from doors_gym_baselines.experiments.ladder import LadderOptions

    monkeypatch.chdir(tmp_path)

    def checkpoint(**values) -> str:
        planned = compare.plan(compare.CompareOptions(arms=("flax-scan",), seeds=1, **values))
        return planned.rows[0].runs[0].config.run.checkpoint

    assert checkpoint(out="out") == str(tmp_path / "out" / "runs" / "flax-scan-seed100.ckpt")  # not a worker's cwd
    assert checkpoint(out="out", checkpoint_dir="shared") == str(tmp_path / "shared" / "flax-scan-seed100.ckpt")
    level = LadderOptions(levels=("Random",), checkpoint_dir="shared").level_options("Random")
    assert level.checkpoint_folder == tmp_path / "shared" / "Random"
    with pytest.raises(ValueError, match=r"checkpoint_dir='s3://bucket/runs' is not a folder's path: .*URLs are not"):
        compare.CompareOptions(checkpoint_dir="s3://bucket/runs")
    with pytest.raises(ValueError, match=r"checkpoint_dir='' is not a folder's path"):
        LadderOptions(checkpoint_dir="")


class Killed(Exception):
    """Stands for a kill between two segments of a run."""


class Sent(Exception):
    """Stops a command once it has sent its runs."""


class Recorder(executors.LocalExecutor):
    """A local executor that notes what it is asked, and whether the stale checkpoint is there at each step."""

    def __init__(self, stale: pathlib.Path, ahead: bool = False) -> None:
        self.stale, self.ahead, self.calls = stale, ahead, []

    def clear(self, paths) -> None:
        super().clear(paths)
        self.calls.append(("clear", list(paths)))

    def submit_ahead(self, jobs) -> None:
        self.calls.append(("submit_ahead", len(jobs), self.stale.exists()))

    def submitted(self, key: str) -> bool:
        return self.ahead

    def run(self, jobs, done):
        raise Sent


def test_a_fresh_ladder_clears_the_checkpoints_before_it_sends_a_run(tmp_path: pathlib.Path, monkeypatch) -> None:
    needs("flax")
    from doors_gym_baselines.experiments import ladder

    options = ladder.LadderOptions(arms=("flax-scan",), levels=("study",), quick=True, fresh=True,
                                   out=str(tmp_path / "ladder"))  # fmt: skip
    stale = tmp_path / "ladder" / "study" / "runs" / "flax-scan-seed110.ckpt"  # a killed ladder's (from 110)
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"a killed run's state")
    recorder = Recorder(stale)
    monkeypatch.setattr(ladder.comparison, "compare", lambda *args: (_ for _ in ()).throw(Sent()))
    with pytest.raises(Sent):
        ladder.ladder(options, RunSettings(quiet=True), recorder)
    assert recorder.calls == [("clear", [str(stale)]), ("submit_ahead", 1, False)]
    # A level's comparison then leaves alone the checkpoint of a run sent ahead: it may be training by now.
    stale.write_bytes(b"the state of the run sent ahead")
    ahead = Recorder(stale, ahead=True)
    with pytest.raises(Sent):
        compare.make_runs(compare.plan(options.level_options("study"), RunSettings(quiet=True)), ahead)
    assert ahead.calls == [("clear", [])] and stale.exists()


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NPROC", "JAX_NUM_CPU_DEVICES")


def thread_settings(libraries: bool) -> dict:
    """A worker's thread settings: its variables and NumPy's BLAS pool; with ``libraries``, torch's threads and JAX's
    devices and XLA pool threads as a task that imports them finds them."""
    import numpy  # noqa: F401  # its BLAS, as any run loads it
    import threadpoolctl

    blas = [pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"]
    found = {"environ": {name: os.environ.get(name) for name in (*THREAD_VARIABLES, "XLA_FLAGS")}, "blas": blas}
    if libraries:
        import jax
        import jax.numpy as jnp
        import torch

        jax.jit(lambda x: x @ x)(jnp.ones((64, 64))).block_until_ready()
        tasks = pathlib.Path("/proc/self/task")
        pool = [task for task in tasks.iterdir() if (task / "comm").read_text().startswith("tf_XLAEigen")]
        found.update(torch=torch.get_num_threads(), devices=jax.device_count(), pool=len(pool))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("setup", ["plugin", "preload"])
def test_a_worker_started_without_the_drivers_environment_gets_its_threads_from_the_cluster(
    tmp_path: pathlib.Path, monkeypatch, setup: str
) -> None:
    import cloudpickle
    import dask
    from distributed import Client, LocalCluster

    from doors_gym_baselines.runtime import available_cores
    from doors_gym_baselines.experiments.worker_threads import WorkerThreads

    if available_cores() < 2 or not pathlib.Path("/proc/self/task").is_dir():
        pytest.skip("one thread a worker is every library's default on one core; the pool is read in /proc")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers never import this test module
    for name in (*THREAD_VARIABLES, "DOORS_GYM_WORKER_THREADS"):
        monkeypatch.delenv(name, raising=False)
    dump = tmp_path / "dump"
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={dump}")  # the user's flag, read back by XLA in the worker
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    # As `dask worker --no-nanny` starts one, or a nanny whose configuration sets no threads: nothing limits them,
    # but the plugin the driver registers, or the preload the worker was started with.
    preload = ["doors_gym_baselines.experiments.worker_threads"] if setup == "preload" else []
    with dask.config.set({executors.SPAWN_ENVIRONMENT: {}}):
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=40, preload=preload)  # fmt: skip
    with cluster, Client(cluster) as client:
        if setup == "plugin":
            (before,) = client.run(thread_settings, False).values()
            assert before["environ"]["OMP_NUM_THREADS"] is None and before["blas"][0] > 1
            client.register_plugin(WorkerThreads())
        (after,) = client.run(thread_settings, True).values()
    flags = f"--xla_cpu_multi_thread_eigen=false --xla_dump_to={dump}"  # ours, then the user's
    assert after["environ"] == {**{name: "1" for name in THREAD_VARIABLES}, "XLA_FLAGS": flags}
    assert (after["blas"], after["torch"], after["devices"], after["pool"]) == ([1], 1, 1, 1)
    assert any(dump.iterdir()), "XLA never read the user's --xla_dump_to"


def failing_train(config, trial=None, arm=None):
    raise RuntimeError(f"no luck with seed {config.run.seed}")


def test_a_run_that_raises_is_named_and_the_others_finish(tmp_path: pathlib.Path) -> None:
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers never import this test module
    broken = dataclasses.replace(get_arm("torch-numpy"), name="broken-torch", trainer=failing_train)
    compare.ARMS.add(broken)
    options = tiny(tmp_path, "out", arms=("torch-numpy", "broken-torch"), seeds=1)
    try:
        with open_executor(ExecutorOptions("dask", workers=2)) as executor:
            with pytest.raises(RunsFailed, match="broken-torch seed 100 at study: RuntimeError: no luck with seed 100"):
                compare.compare(options, RunSettings(quiet=True), executor)
    finally:
        compare.ARMS._added.pop("broken-torch", None)
    ended = [(run.info.run_name, run.info.status) for run in nested_runs(options)]
    assert ended == [("torch-numpy-seed100", "FINISHED")]
    cached = json.loads((pathlib.Path(options.out) / "runs" / "torch-numpy-seed100.json").read_text())
    assert cached["seeds"][0]["seed"] == 100  # a rerun trains only the run that failed


@contextlib.contextmanager
def hand_started_cluster(folder: pathlib.Path, workers: int):
    """A scheduler on 127.0.0.1 and ``workers`` workers of one thread, started as processes of their own in
    ``folder`` (as a user starts them by hand, not by the driver); yields the scheduler's address, kills them after."""
    folder.mkdir(parents=True, exist_ok=True)
    scheduler_file = folder / "scheduler.json"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    quiet = dict(env=ENV, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    scheduler = subprocess.Popen([*dask, "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  "--scheduler-file", str(scheduler_file)], **quiet)  # fmt: skip
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers",
                                   str(workers), "--nthreads", "1", "--no-dashboard"], **quiet)  # fmt: skip
        yield address
    finally:
        for process in (worker, scheduler):
            if process is not None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.mark.slow
def test_a_scheduler_and_workers_started_as_processes_of_their_own(tmp_path: pathlib.Path) -> None:
    with hand_started_cluster(tmp_path, 2) as address:
        command = [sys.executable, "-m", "doors_gym", "compare", "--arms", "torch-numpy", "--seeds", "2", "--preset",
                   "quick", "--total-steps", "4000", "--eval-every", "2000", "--out", str(tmp_path / "out"),
                   "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", "--quiet", "--executor", "dask",
                   "--address", address]  # fmt: skip
        done = subprocess.run(command, env=ENV, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        from distributed import Client

        with Client(address) as client:  # the workers started by hand got their threads from the driver's plugin
            pools = client.run(lambda: os.environ.get("NPROC"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"runs train on the Dask cluster at {address}" in done.stdout
    assert "registered as version 1 of doors-torch-numpy@champion" in done.stdout
    rows = (tmp_path / "out" / "compare_seeds.csv").read_text().splitlines()[1:]
    assert len(rows) == 2 and all(not row.endswith(",local") for row in rows)
    assert list(pools.values()) == ["1", "1"]


@pytest.mark.slow
def test_workers_started_in_another_folder_go_on_from_the_shared_checkpoint_folder(
    tmp_path: pathlib.Path, monkeypatch
) -> None:
    """The driver resolves ``--checkpoint-dir`` (relative, as a user types it) in its own folder: a worker started
    elsewhere finds there the checkpoint a killed run left, goes on from it, and writes nothing in its own folder."""
    needs("flax")
    from doors_gym_baselines.learners import scan_driver
    from doors_gym_baselines.learners.dqn_flax_scan import train

    driver, host = tmp_path / "driver", tmp_path / "host"
    driver.mkdir()
    flags = dict(arms=("flax-scan",), seeds=1, preset="quick", total_steps=4_000, eval_every=2_000, out="out",
                 checkpoint_dir="shared", together=False, models=False)  # fmt: skip
    monkeypatch.chdir(driver)
    config = compare.plan(compare.CompareOptions(**flags)).rows[0].runs[0].config
    checkpoint = driver / "shared" / "flax-scan-seed100.ckpt"
    assert config.run.checkpoint == str(checkpoint)
    calls = []

    def killed_at_the_fifth_chunk(self, first):  # the run killed after four segments, each one saved
        calls.append(first)
        if len(calls) == 5:
            raise Killed(first)
        return original(self, first)

    original = scan_driver.CompiledSeeds.run_chunk
    with monkeypatch.context() as patched:
        patched.setattr(scan_driver, "CHECKPOINT_SECONDS", 0.0)
        patched.setattr(scan_driver.CompiledSeeds, "run_chunk", killed_at_the_fifth_chunk)
        with pytest.raises(Killed):
            train(config)
    assert checkpoint.exists()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with hand_started_cluster(host, 1) as address:
        command = [sys.executable, "-m", "doors_gym", "compare", "--arms", "flax-scan", "--seeds", "1", "--preset",
                   "quick", "--total-steps", "4000", "--eval-every", "2000", "--out", "out", "--checkpoint-dir",
                   "shared", "--no-together", "--no-models", "--tracking-uri", uri, "--quiet", "--executor", "dask",
                   "--address", address]  # fmt: skip
        done = subprocess.run(command, env=ENV, cwd=driver, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    [run] = nested_runs(compare.CompareOptions(tracking_uri=uri))
    assert run.data.params["worker"] != "local"
    [resumed] = ast.literal_eval(run.data.tags["fact.resumed"])
    assert 0 < resumed["at_step"] < 4_000  # went on from the killed run's fourth segment, not from zero
    assert not checkpoint.exists()  # removed once the run ended
    assert not (host / "out").exists() and not (host / "shared").exists()  # nothing under the worker's folder


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_the_workers_and_leaves_nothing_running(tmp_path: pathlib.Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    command = [sys.executable, "-m", "doors_gym", "compare", "--arms", "torch-numpy", "--seeds", "2", "--preset",
               "quick", "--total-steps", "2000000", "--eval-every", "1000000", "--out", str(tmp_path / "out"),
               "--tracking-uri", uri, "--quiet", "--no-models", "--executor", "dask", "--workers", "2"]  # fmt: skip
    log = tmp_path / "log.txt"
    with log.open("w") as handle:
        # Ctrl-C's default: a test runner's worker (pytest-xdist's) may ignore SIGINT, and a child inherits that.
        process = subprocess.Popen(command, env=ENV, cwd=tmp_path, stdout=handle, stderr=subprocess.STDOUT,
                                   start_new_session=True, preexec_fn=default_sigint)  # fmt: skip
    try:
        def workers() -> list[str]:
            found = subprocess.run(["pgrep", "-g", str(process.pid), "-f", "spawn_main"], capture_output=True, text=True)
            return found.stdout.split()

        deadline = time.monotonic() + 120
        while len(workers()) < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)  # the cluster is started once both worker processes run
        time.sleep(5.0)  # the workers are importing or training
        os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole foreground group
        returncode = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert returncode != 0
    time.sleep(1.0)
    living = subprocess.run(["ps", "-o", "stat=", "-g", str(process.pid)], capture_output=True, text=True).stdout
    assert all(state.startswith("Z") for state in living.split()), f"processes left: {living}"
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("doors-gym-compare")
    assert [(run.info.run_name, run.info.status) for run in client.search_runs([experiment.experiment_id])] == [
        ("compare-quick", "KILLED")]  # fmt: skip


@pytest.mark.slow
def test_tune_workers_replace_a_killed_one_and_reach_the_trial_count(tmp_path: pathlib.Path) -> None:
    import optuna

    storage, uri = f"sqlite:///{tmp_path / 'optuna.db'}", f"sqlite:///{tmp_path / 'mlflow.db'}"
    command = [sys.executable, "-m", "doors_gym", "tune", "--arm", "torch-numpy", "--workers", "2", "--n-trials", "3",
               "--total-steps", "8000", "--eval-every", "4000", "--hold-out-steps", "0", "--storage", storage,
               "--tracking-uri", uri, "--no-models", "--heartbeat-interval", "1", "--grace-period", "3"]  # fmt: skip
    process = subprocess.Popen(command, env=ENV, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)  # fmt: skip
    killed = None
    try:
        deadline = time.monotonic() + 180
        while killed is None and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.3)
            try:
                study = optuna.load_study(study_name="dqn-torch-numpy-time-to-solved", storage=storage)
            except KeyError:  # not created yet
                continue
            if any(trial.state.name == "RUNNING" for trial in study.get_trials(deepcopy=False)):
                workers = subprocess.run(["pgrep", "-g", str(process.pid), "-f", "spawn_main"], capture_output=True,
                                         text=True).stdout.split()  # fmt: skip
                if workers:
                    time.sleep(0.5)  # into the trial
                    killed = int(workers[0])
                    os.kill(killed, signal.SIGKILL)
        out, _ = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert killed is not None, "no worker was ever running a trial"
    assert process.returncode == 0, out[-3000:]
    assert "died (exit code -9)" in out and "takes its place" in out
    study = optuna.load_study(study_name="dqn-torch-numpy-time-to-solved", storage=storage)
    states = [trial.state.name for trial in study.trials]
    assert states.count("COMPLETE") + states.count("PRUNED") >= 3 and "RUNNING" not in states, states
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("doors-gym-tune")
    assert not client.search_runs([experiment.experiment_id], "attributes.status = 'RUNNING'")
