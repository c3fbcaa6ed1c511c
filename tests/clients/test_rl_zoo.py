"""RL Zoo by id with the presets the package ships: ``rl_zoo3.train`` then ``rl_zoo3.enjoy``, as a user types them.

The budgets are tiny (the figures that the presets reach are in the README); what is tested is
that the Zoo finds the env, the module given to ``--conf-file``, the file itself and the
wrapper they name, trains, saves, and that ``enjoy`` reloads the run and prints a success rate.
"""

from __future__ import annotations

import importlib
import pathlib
import subprocess
import sys

import pytest
from stacks import needs

needs("torch")
needs("rl_zoo3")
yaml = needs("yaml")

from doors_gym import rl_zoo  # noqa: E402

ENV_ID = "Doors-v0"


def run_zoo(script: str, *args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    """``python -m rl_zoo3.<script> ... --gym-packages doors_gym`` in ``cwd``, one torch thread."""
    command = [sys.executable, "-m", f"rl_zoo3.{script}", "--env", ENV_ID, "--gym-packages", "doors_gym"]
    command += ["--num-threads", "1", *args]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result


@pytest.mark.parametrize("algo", rl_zoo.ALGOS)
def test_each_shipped_file_is_what_its_module_gives_the_zoo(algo):
    hyperparams = importlib.import_module(f"doors_gym.rl_zoo.{algo}").hyperparams
    assert hyperparams == rl_zoo.load(algo) == yaml.safe_load(rl_zoo.path(algo).read_text())
    assert set(hyperparams) == {ENV_ID}
    assert hyperparams[ENV_ID]["env_wrapper"] == "doors_gym.wrappers.SuccessInfo"


def test_an_algo_without_a_file_is_named():
    with pytest.raises(ValueError, match=r"algo='a2c' has no RL Zoo hyperparameters here: expected one of"):
        rl_zoo.path("a2c")


@pytest.mark.slow
@pytest.mark.parametrize("algo", rl_zoo.ALGOS)
def test_zoo_trains_by_id_with_the_shipped_module_and_enjoy_reports_success(algo, tmp_path):
    run_zoo("train", "--algo", algo, "--conf-file", f"doors_gym.rl_zoo.{algo}", "-n", "2048", "-f", "logs",
            "--seed", "0", "--eval-freq", "-1", cwd=tmp_path)
    run = tmp_path / "logs" / algo / f"{ENV_ID}_1"
    assert (run / f"{ENV_ID}.zip").is_file()
    saved = dict(yaml.unsafe_load((run / ENV_ID / "config.yml").read_text()))
    assert saved == {**rl_zoo.load(algo)[ENV_ID], "n_timesteps": saved["n_timesteps"]}

    enjoy = run_zoo("enjoy", "--algo", algo, "-f", "logs", "--no-render", "-n", "300", "--seed", "0", cwd=tmp_path)
    # Greedy episodes of at most 60 steps in 300 steps: at least 5 ended, and the wrapper's key gave enjoy a rate.
    assert enjoy.stdout.count("Episode Reward: ") >= 5
    assert "Success rate: " in enjoy.stdout, enjoy.stdout[-2000:]


@pytest.mark.slow
def test_zoo_takes_the_file_path_too(tmp_path):
    run_zoo("train", "--algo", "ppo", "--conf-file", str(rl_zoo.path("ppo")), "-n", "1024", "-f", "logs",
            "--seed", "0", "--eval-freq", "-1", cwd=tmp_path)
    assert (tmp_path / "logs" / "ppo" / f"{ENV_ID}_1" / f"{ENV_ID}.zip").is_file()
