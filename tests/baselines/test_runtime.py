"""Nothing process-wide changes behind a user's back: importing the baselines and building the parser set
nothing; a command sets its settings when it runs, and a run puts back what it can."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from stacks import needs

BASELINES = pathlib.Path(__file__).resolve().parents[2] / "doors_gym_baselines"

SNAPSHOT = textwrap.dedent(
    """
    import json, logging, os, sys
    import jax, matplotlib, torch
    import doors_gym  # Gymnasium sets PYGAME_HIDE_SUPPORT_PROMPT when imported, as for any Gymnasium env

    def snapshot():
        return {
            "environ": dict(os.environ),
            "torch_threads": torch.get_num_threads(),
            "jax_num_cpu_devices": jax.config.jax_num_cpu_devices,
            "jax_cache": jax.config.jax_compilation_cache_dir,
            "jax_backends_started": __import__("jax._src.xla_bridge", fromlist=["x"]).backends_are_initialized(),
            "matplotlib_backend": matplotlib.rcParams._get_backend_or_none(),
            "loggers": {name: logging.getLogger(name).level for name in ("mlflow", "alembic", "optuna")},
        }

    before = snapshot()
    import importlib, pkgutil
    import doors_gym_baselines
    for module in pkgutil.walk_packages(doors_gym_baselines.__path__, "doors_gym_baselines."):
        if module.name.rsplit(".", 1)[-1] not in ("__main__", "pyfunc_entry"):  # the entry points run when executed
            importlib.import_module(module.name)
    from doors_gym import cli
    cli.build_parser()
    after = snapshot()
    print(json.dumps({"before": before, "after": after}))
    """
)


def test_importing_every_module_and_building_the_parser_changes_nothing_process_wide():
    needs("torch")
    needs("flax")
    # The variables a test run's own imports (Gymnasium's) have set would hide a change: the child starts without them.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYGAME_", "MLFLOW_"))}
    done = subprocess.run([sys.executable, "-c", SNAPSHOT], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    before, after = found["before"], found["after"]
    changed = {key: (before[key], after[key]) for key in before if before[key] != after[key]}
    if "environ" in changed:  # name the variables, not the whole environment
        changed["environ"] = sorted(set(after["environ"].items()) ^ set(before["environ"].items()))
    assert not changed, changed
    modules = [path for path in BASELINES.rglob("*.py") if path.stem not in ("__init__", "__main__", "pyfunc_entry")]
    assert len(modules) >= 20  # the loop above saw the package


def test_a_run_puts_torch_threads_and_the_jax_cache_back(tmp_path):
    torch = needs("torch")
    jax = needs("jax")
    from doors_gym_baselines import runtime

    threads, cache = torch.get_num_threads(), jax.config.jax_compilation_cache_dir
    with runtime.torch_threads(None) as inside:
        assert inside == runtime.CPU_TORCH_THREADS == torch.get_num_threads()
    with runtime.torch_threads(2) as inside:
        assert inside == 2
    with runtime.jax_compilation_cache(str(tmp_path)) as folder:
        assert folder == str(tmp_path) == jax.config.jax_compilation_cache_dir
    assert (torch.get_num_threads(), jax.config.jax_compilation_cache_dir) == (threads, cache)


def test_the_mlflow_environment_is_the_commands_and_leaves_the_users_alone(monkeypatch):
    import os

    from doors_gym_baselines import runtime

    monkeypatch.delenv("MLFLOW_DISABLE_TELEMETRY", raising=False)
    monkeypatch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "true")  # the user's own choice
    with runtime.mlflow_environment():
        assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "true"
        assert os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] == "true"
    assert "MLFLOW_DISABLE_TELEMETRY" not in os.environ
    assert os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] == "true"


def test_xla_flags_are_real_flags_and_keep_every_flag_of_the_users():
    from doors_gym_baselines import runtime

    user = "--xla_force_host_platform_device_count=3"
    assert runtime.xla_flags(runtime.XLA_THREAD_FLAGS, user) == f"--xla_cpu_multi_thread_eigen=false {user}"
    mine = "--xla_cpu_multi_thread_eigen=true --xla_dump_to=/tmp/dump"
    assert runtime.xla_flags(runtime.XLA_THREAD_FLAGS, mine) == mine  # the user's setting, once
    built = runtime.worker_environment(2, {"XLA_FLAGS": user})["XLA_FLAGS"].split()
    assert built[-1] == user and all(token.startswith("--") and "=" in token for token in built)
    with pytest.raises(ValueError, match=r"'intra_op_parallelism_threads=2' is not --NAME=VALUE"):
        runtime.xla_flags(("intra_op_parallelism_threads=2",), user)


XLA_PROBE = textwrap.dedent(
    """
    import json, os
    import jax, jax.numpy as jnp
    jax.jit(lambda x: x @ x)(jnp.ones((64, 64))).block_until_ready()
    names = [open(f"/proc/self/task/{task}/comm").read() for task in os.listdir("/proc/self/task")]
    pool = [name for name in names if name.startswith("tf_XLAEigen")]
    print(json.dumps({"devices": jax.device_count(), "pool": len(pool)}))
    """
)


def xla_in_a_worker(user_flags: str | None) -> dict:
    """JAX's CPU devices and XLA's pool threads in a fresh process given a one-core worker's environment over the
    user's ``XLA_FLAGS``."""
    from doors_gym_baselines import runtime

    names = ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES", runtime.XLA_POOL_VARIABLE)
    env = {key: value for key, value in os.environ.items() if key not in names}
    env["JAX_PLATFORMS"] = "cpu"
    if user_flags is not None:
        env["XLA_FLAGS"] = user_flags
    env.update(runtime.worker_environment(1, env))
    done = subprocess.run([sys.executable, "-c", XLA_PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_workers_xla_flags_reach_xla_with_the_users_flag_intact():
    needs("jax")
    if not pathlib.Path("/proc/self/task").is_dir():
        pytest.skip("reads the threads' names in /proc")
    # A flag XLA's parser never reached (after a token without its "--") would leave the one device of the worker.
    assert xla_in_a_worker("--xla_force_host_platform_device_count=3")["devices"] == 3
    # Without it, the worker's share: one device, and XLA's pool held to one thread (one per core without it).
    assert xla_in_a_worker(None) == {"devices": 1, "pool": 1}
