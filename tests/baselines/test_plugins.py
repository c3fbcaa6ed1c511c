"""Arms from other distributions: a throwaway plug-in built and installed in ``tmp_path`` (entry point and all)
trains, tunes, compares and plays through ``doors-gym`` with no line of this repository changed; a clash and a
plug-in that fails at import are one line each and leave the other arms working."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
from stacks import needs

needs("mlflow")
needs("optuna")

DOORS_GYM = pathlib.Path(sys.executable).with_name("doors-gym")

PLUGIN = '''
"""A throwaway arm: the oracle's shortest paths, stepping off them at random (rate: the learning rate)."""

import dataclasses
import json
import pathlib
import time

import numpy as np

from doors_gym.oracle import OraclePolicy
from doors_gym_baselines.api import (
    Arm, Config, EvaluationSchedule, Range, TrainingFigures, evaluate_greedy, field, finish, history_row,
)

MAGIC = b"TOYARM1\\n"


@dataclasses.dataclass(frozen=True)
class Slips:
    learning_rate: float = field(0.001, "how often it steps off the shortest path")


class Model:
    def __init__(self, params, slip, seed=0):
        self.params, self.slip = params, slip
        self.oracle = OraclePolicy(params)
        self.rng = np.random.default_rng(seed)

    def act(self, obs):
        actions = self.oracle(np.asarray(obs))
        slips = self.rng.random(actions.shape) < self.slip
        return np.where(slips, self.rng.integers(0, 5, actions.shape), actions)

    def q_values(self, obs):
        return np.eye(5, dtype=np.float32)[self.oracle(np.asarray(obs))]


def train(config, trial=None, arm=None):
    run, start = config.run, time.perf_counter()
    model = Model(config.params, config.hyperparameters.learning_rate, run.seed)
    history = []

    def evaluate(step):
        evaluation = evaluate_greedy(model.act, config.params)
        figures = TrainingFigures(rolling_reward=0.76)
        return evaluation, history_row(step, start, 0.0, [], [evaluation], [figures], [run.seed])

    schedule = EvaluationSchedule(evaluate, history, trial, config)
    step = 0
    while step < run.total_steps:
        step = min(run.total_steps, step + 1000)
        if schedule.should_stop(step, step < run.total_steps):
            break
    last = schedule.final(step)
    phases = {"evaluation": schedule.seconds}
    return finish(arm or ARM, config, start, history, last, phases, env_steps=step, updates=0, model=model)


def save_model(result, path, seed_index=0):
    values = {"arm": result.arm, "slip": result.model.slip, "config": result.config.to_dict()}
    pathlib.Path(path).write_bytes(MAGIC + json.dumps(values).encode())


def load_model(path):
    values = json.loads(pathlib.Path(path).read_bytes()[len(MAGIC):])
    config = Config.from_dict(values["config"], Slips)
    return values["arm"], Model(config.params, values["slip"]), config


ARM = Arm(
    "toy",
    "numpy",
    "Doors-v0",
    "toy: the oracle, slipping",
    train,
    save_model,
    loader=load_model,
    hyperparameters=Slips,
    presets={"tuned": str(pathlib.Path(__file__).with_name("tuned.yml"))},
    search_space=(Range("learning_rate", 1e-4, 1e-2, log=True),),
    requirements=("doors-gym-toy",),
    magic=MAGIC,
)
'''

TUNED = """study: {study: by hand}
hyperparameters: {learning_rate: 0.001}
run: {total_steps: 3000, eval_every: 1000, hold_out_steps: 0, stop_when_solved: false}
"""


def pyproject(name: str, entries: dict[str, str]) -> str:
    lines = "\n".join(f'"{arm}" = "{target}"' for arm, target in entries.items())
    return textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=77"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{name}"
        version = "0.3.0"

        [tool.setuptools]
        packages = ["{name.replace('-', '_')}"]

        [tool.setuptools.package-data]
        "{name.replace('-', '_')}" = ["*.yml"]

        [project.entry-points."doors_gym.arms"]
        """) + lines + "\n"


def install(tmp_path: pathlib.Path, name: str, entries: dict[str, str], files: dict[str, str]) -> pathlib.Path:
    """Builds and installs the distribution ``name`` into ``tmp_path/site``; returns that folder."""
    source = tmp_path / "src" / name
    package = source / name.replace("-", "_")
    package.mkdir(parents=True)
    (source / "pyproject.toml").write_text(pyproject(name, entries))
    for file_name, text in files.items():
        (package / file_name).write_text(text)
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
        + ["--target", str(site), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return site


def doors_gym(site: pathlib.Path, cwd: pathlib.Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "SDL_VIDEODRIVER": "dummy"}
    return subprocess.run([str(DOORS_GYM), *argv], capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def toy_site(tmp_path_factory) -> pathlib.Path:
    tmp_path = tmp_path_factory.mktemp("plugin")
    return install(tmp_path, "doors-gym-toy", {"toy": "doors_gym_toy:ARM"}, {"__init__.py": PLUGIN, "tuned.yml": TUNED})


def test_a_plugin_arm_trains_and_plays_with_its_tuned_preset(toy_site, tmp_path):
    trained = doors_gym(toy_site, tmp_path, "train", "--arm", "toy", "--no-track", "--save", "toy.bin")
    assert trained.returncode == 0, trained.stderr[-3000:]
    summary = json.loads(trained.stdout[trained.stdout.index("{") : trained.stdout.index("}") + 1])
    assert summary["arm"] == "toy" and summary["env_steps"] == 3000  # its own tuned preset's budget
    assert (tmp_path / "toy.bin").read_bytes().startswith(b"TOYARM1")
    played = doors_gym(toy_site, tmp_path, "enjoy", "toy.bin", "--episodes", "2", "--out", "toy.gif")
    assert played.returncode == 0, played.stderr[-3000:]  # its file recognised by its own magic
    assert "2 greedy episode(s)" in played.stdout and (tmp_path / "toy.gif").exists()
    listed = doors_gym(toy_site, tmp_path, "compare", "--help")
    assert "toy" in listed.stdout.split("arms to train, among")[1]


def test_a_plugin_arm_refuses_a_hyperparameter_it_does_not_have(toy_site, tmp_path):
    done = doors_gym(toy_site, tmp_path, "train", "--arm", "toy", "--no-track", "--hidden-sizes", "64", "64")
    assert done.returncode != 0
    assert "--hidden-sizes (64, 64) is not a hyperparameter of the toy arm (doors-gym-toy 0.3.0)" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_plugin_arm_is_tuned_and_compared_beside_a_builtin_one(toy_site, tmp_path):
    storage, tracking = f"sqlite:///{tmp_path / 'optuna.db'}", f"sqlite:///{tmp_path / 'mlflow.db'}"
    tuned = doors_gym(
        toy_site, tmp_path, "tune", "--arm", "toy", "--n-trials", "2", "--storage", storage,
        "--tracking-uri", tracking, "--start-from", "", "--total-steps", "2000", "--eval-every", "1000",
        "--hold-out-steps", "0",
    )  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    assert tuned.stdout.count("trial ") >= 2 and "2 finished trials" in tuned.stdout
    compared = doors_gym(
        toy_site, tmp_path, "compare", "--arms", "toy", "flax-scan", "--seeds", "1", "--total-steps", "2000",
        "--eval-every", "1000", "--tracking-uri", tracking, "--out", str(tmp_path / "out"), "--no-models",
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr[-3000:]
    rows = (tmp_path / "out" / "compare_seeds.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["toy", "flax-scan"]
    assert "toy: the oracle, slipping" in (tmp_path / "out" / "compare.md").read_text()
    import mlflow

    mlflow.set_tracking_uri(tracking)
    runs = mlflow.search_runs(search_all_experiments=True, filter_string="tags.arm = 'toy'")
    assert not runs.empty and set(runs["tags.package"]) == {"doors-gym-toy 0.3.0"}
    assert set(runs["tags.framework"]) == {"numpy"}


def test_a_name_clash_names_both_packages_and_other_arms_still_work(tmp_path):
    site = install(tmp_path, "doors-gym-clash", {"torch-numpy": "doors_gym_clash:ARM"}, {"__init__.py": "ARM = None\n"})
    done = doors_gym(site, tmp_path, "train", "--arm", "torch-numpy", "--no-track")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "'torch-numpy' is provided by two packages" in done.stderr
    assert "doors-gym-clash 0.3.0" in done.stderr and "doors-gym 0." in done.stderr
    oracle = doors_gym(site, tmp_path, "oracle")
    assert oracle.returncode == 0 and "success 1.000" in oracle.stdout


def test_a_plugin_that_fails_at_import_is_one_line_and_breaks_nothing_else(tmp_path):
    site = install(
        tmp_path, "doors-gym-broken", {"broken": "doors_gym_broken:ARM"}, {"__init__.py": "import no_such_module\n"}
    )
    done = doors_gym(site, tmp_path, "train", "--arm", "broken", "--no-track")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1 and "doors-gym-broken 0.3.0 failed to import" in lines[0]
    assert "No module named 'no_such_module'" in lines[0]
    listed = doors_gym(site, tmp_path, "compare", "--help")
    assert listed.returncode == 0 and "broken" in listed.stdout
    other = doors_gym(site, tmp_path, "train", "--arm", "flax-numpy", "--no-track", "--total-steps", "2000",
                      "--eval-every", "0", "--preset", "quick")  # fmt: skip
    assert other.returncode == 0, other.stderr[-3000:]


def test_a_notebook_compares_an_arm_object_directly(tmp_path, monkeypatch):
    import doors_gym_baselines
    from doors_gym_baselines.arms import ARMS

    namespace: dict = {"__file__": str(tmp_path / "toy.py")}
    (tmp_path / "tuned.yml").write_text(TUNED)
    exec(compile(PLUGIN, str(tmp_path / "toy.py"), "exec"), namespace)
    arm = namespace["ARM"]
    monkeypatch.setattr(ARMS, "_added", {})
    outcome = doors_gym_baselines.compare(
        [arm], seeds=1, out=str(tmp_path / "out"), tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", models=False
    )
    assert [row.key for row in outcome.rows] == ["toy"]
    assert outcome.rows[0].solved == 1 and "toy" in outcome.table


def test_an_arm_object_named_like_an_installed_one_is_a_clash_unless_it_is_that_arm(monkeypatch):
    import dataclasses

    from doors_gym_baselines.arms import ARMS, ArmNameClash

    monkeypatch.setattr(ARMS, "_added", {})
    installed = ARMS["flax-numpy"]
    ARMS.add(installed)  # the same record: nothing to add
    assert ARMS._added == {}
    with pytest.raises(ArmNameClash, match=r"arm 'flax-numpy' is installed already \(doors-gym 0\."):
        ARMS.add(dataclasses.replace(installed, trainer=lambda config, trial, arm: None))
    with pytest.raises(TypeError, match="is not an arm"):
        ARMS.add(object())
