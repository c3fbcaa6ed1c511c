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

BASELINES = pathlib.Path(__file__).resolve().parents[2] / "baselines"

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
    pytest.importorskip("torch")
    pytest.importorskip("flax")
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
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
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
