"""The library arms (Stable-Baselines3's, SBX's and rejax's DQN, rejax's PQN) run by doors-gym's protocol.

Each trains on a tiny budget through the public arm API, returns the protocol's figures (an evaluation every
``eval_every`` env steps, the phases, steps/s), and its model file, in the library's own format, plays through
``enjoy``'s loader; a missing library is one line naming its extra.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from stacks import needs

needs("mlflow")
needs("yaml")

from doors_gym_baselines.arms import ARMS  # noqa: E402
from doors_gym_baselines.serving.enjoy import load_policy  # noqa: E402
from doors_gym_baselines.presets import HYPERPARAMS_DIR, hyperparameters_of, load_preset, read_preset  # noqa: E402
from doors_gym_baselines.serving import example_observations, load_model  # noqa: E402

DOORS_GYM = pathlib.Path(sys.executable).with_name("doors-gym")
LIBRARIES = {"sb3-dqn": "stable_baselines3", "sbx-dqn": "sbx", "rejax-dqn": "rejax", "rejax-pqn": "rejax"}
EXTRAS = {"sb3-dqn": "sb3", "sbx-dqn": "sbx", "rejax-dqn": "rejax", "rejax-pqn": "rejax"}
TINY = {
    "sb3-dqn": {"learning_starts": 200, "buffer_size": 2000},
    "sbx-dqn": {"learning_starts": 200, "buffer_size": 2000, "net_arch": (32, 32)},
    "rejax-dqn": {"fill_buffer": 200, "buffer_size": 2000, "num_envs": 4, "observation": "flat"},
    "rejax-pqn": {"num_envs": 8, "num_steps": 25, "num_minibatches": 4},
}
"""A few seconds of training each on two cores (rejax's compile included)."""
TOTAL_STEPS, EVAL_EVERY = 2000, 1000
pytestmark = [
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]


@functools.cache
def trained(name: str):
    """One tiny run of the arm ``name`` (shared by the tests that read it)."""
    needs(LIBRARIES[name])
    arm = ARMS[name]
    return arm.train(arm.config(total_steps=TOTAL_STEPS, eval_every=EVAL_EVERY, seed=2, quiet=True, **TINY[name]))


def doors_gym(cwd: pathlib.Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
    return subprocess.run([str(DOORS_GYM), *argv], capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


def test_the_library_arms_are_installed_plug_ins_with_their_own_hyperparameters():
    for name in LIBRARIES:
        assert name in list(ARMS) and not ARMS.is_builtin(name)
        assert hyperparameters_of(name) is ARMS[name].hyperparameters
        assert ARMS[name].search_space, name


@pytest.mark.parametrize("name", list(LIBRARIES))
def test_a_tiny_run_has_the_protocols_figures(name):
    result = trained(name)
    steps = [row.step for row in result.history]
    assert steps[0] >= EVAL_EVERY and steps[-1] == result.env_steps >= TOTAL_STEPS
    assert len(steps) == TOTAL_STEPS // EVAL_EVERY  # one per eval_every steps, the last at the end
    assert all(row.per_seed[0].seed == 2 and row.sps > 0 for row in result.history)
    assert 0.0 <= result.evaluation.success_rate <= 1.0 and result.evaluation.episodes == 15 * 15
    assert result.timings.evaluation > 0 and result.timings.update > 0
    assert result.timings.total == pytest.approx(result.wall_seconds)
    assert np.isfinite(result.rolling_reward)  # the training episodes were seen
    assert result.updates > 0


@pytest.mark.parametrize("name", list(LIBRARIES))
def test_its_model_file_is_the_librarys_own_and_plays_through_enjoys_loader(name, tmp_path):
    result = trained(name)
    arm = ARMS[name]
    path = arm.save(result, tmp_path / "agent.zip")
    obs = example_observations(result.config.params, 6)
    reader, model, config = load_model(path)  # told by its content
    assert reader.name == name and config == result.config
    np.testing.assert_allclose(model.q_values(obs), result.model.q_values(obs), rtol=1e-6)
    assert (model.act(obs) == result.model.act(obs)).all()
    policy, _ = load_policy(path)
    assert policy(obs[0]) == int(result.model.act(obs[:1])[0])
    if name in ("sb3-dqn", "sbx-dqn"):  # the library itself loads the file
        library = needs(LIBRARIES[name])
        agent = library.DQN.load(io.BytesIO(path.read_bytes()), device="cpu")
        actions, _ = agent.predict(np.asarray(model.inputs(obs)), deterministic=True)
        assert (np.asarray(actions) == model.act(obs)).all()
    else:
        assert "params.msgpack" in zipfile.ZipFile(path).namelist()


def test_another_arms_file_is_not_taken_for_its_own(tmp_path):
    path = ARMS["sbx-dqn"].save(trained("sbx-dqn"), tmp_path / "agent.zip")
    assert ARMS["sbx-dqn"].recognises(path) and not ARMS["sb3-dqn"].recognises(path)


@pytest.mark.parametrize("name", list(LIBRARIES))
def test_a_missing_library_is_one_line_naming_its_extra(name, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, LIBRARIES[name], None)  # import raises ModuleNotFoundError
    from doors_gym import cli

    with pytest.raises(ImportError, match=rf'pip install "doors-gym\[{EXTRAS[name]}\]"'):
        ARMS[name].train(ARMS[name].config(total_steps=100, eval_every=0))
    assert cli.main(["train", "--arm", name, "--preset", "defaults", "--total-steps", "100"]) == 1


def test_presets_map_the_shared_one_and_rl_zoos():
    import yaml

    shared = read_preset(HYPERPARAMS_DIR / "shared.yml").hyperparameters
    zoo = yaml.safe_load((pathlib.Path(needs("doors_gym").__file__).parent / "rl_zoo" / "dqn.yml").read_text())
    for name in LIBRARIES:
        for preset in ("defaults", "shared", "shared-onehot", "tuned"):
            load_preset(preset, name).config(hyperparameters=hyperparameters_of(name))  # every value checked
        mapped = load_preset("shared", name).hyperparameters
        assert mapped["learning_rate"] == shared["learning_rate"] and mapped["gamma"] == shared["gamma"]
        onehot = load_preset("shared-onehot", name).hyperparameters  # the same but the input, as a user gets it
        assert mapped["observation"] == "cells" and onehot.get("observation", "grid") in ("flat", "grid")
        assert {key: value for key, value in onehot.items() if key != "observation"} == {
            key: value for key, value in mapped.items() if key != "observation"
        }
        assert load_preset("defaults", name).hyperparameters == {}
    sb3 = load_preset("zoo", "sb3-dqn").hyperparameters
    for key in ("buffer_size", "batch_size", "gamma", "target_update_interval", "learning_starts"):
        assert sb3[key] == zoo["Doors-v0"][key]
    assert sb3["n_envs"] == zoo["Doors-v0"]["n_envs"]


def test_bad_settings_name_the_setting():
    with pytest.raises(ValueError, match=r"net_arch=\(64, 32\) is not supported by SBX's DQN"):
        ARMS["sbx-dqn"].config(net_arch=(64, 32))
    with pytest.raises(ValueError, match=r"observation='rgb' is not supported"):
        ARMS["rejax-dqn"].config(observation="rgb")
    with pytest.raises(ValueError, match=r"num_minibatches=7 does not divide"):
        ARMS["rejax-pqn"].config(num_minibatches=7)


def test_a_tracked_cli_run_logs_a_model_that_enjoy_plays(tmp_path):
    needs("sbx")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    preset = tmp_path / "tiny.yml"
    preset.write_text("hyperparameters: {buffer_size: 2000, learning_starts: 200, net_arch: [32, 32]}\n")
    done = doors_gym(
        tmp_path, "train", "--arm", "sbx-dqn", "--preset", str(preset), "--total-steps", "1000",
        "--eval-every", "500", "--track", "--tracking-uri", uri, "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(search_all_experiments=True)
    assert len(runs) == 1
    policy, config = load_policy(f"runs:/{runs.run_id[0]}/model", tracking_uri=uri)  # as enjoy reads it
    assert config.hyperparameters.net_arch == (32, 32)
    obs = example_observations(config.params, 1)[0]
    assert policy(obs) in range(5)


@pytest.mark.parametrize("name", list(LIBRARIES))
def test_its_search_space_samples_its_own_hyperparameters(name):
    optuna = needs("optuna")
    from doors_gym_baselines.tuning.space import space_of, suggest_hyperparameters

    arm = ARMS[name]
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask()
    sampled = suggest_hyperparameters(trial, arm.hyperparameters(), space_of(arm))
    assert isinstance(sampled, arm.hyperparameters)
    for coordinate in arm.search_space:  # every coordinate set the field it names, within its range
        value = coordinate.scale.coordinate(getattr(sampled, coordinate.target))
        assert coordinate.low - 1e-9 <= value <= coordinate.high + 1e-9, coordinate.name


@pytest.mark.parametrize("name", list(LIBRARIES))
def test_its_study_starts_from_its_own_preset_and_keeps_what_its_space_does_not_search(name):
    needs("optuna")
    from doors_gym_baselines.tuning import TuneOptions
    from doors_gym_baselines.tuning.command import start_point

    arm = ARMS[name]
    assert TuneOptions(arm=name).resolved_start_from == "tuned"  # not DQN's quick, which its dataclass cannot take
    assert TuneOptions(arm=name, level="31x31").resolved_start_from == "tuned"  # not the level's DQN preset
    assert TuneOptions(arm=name, start_from="").resolved_start_from == ""
    with pytest.raises(ValueError, match=r"start_from='quick' is neither one of \['defaults'"):
        TuneOptions(arm=name, start_from="quick")
    shared = start_point(arm, TuneOptions(arm=name, start_from="shared").resolved_start_from)
    searched = {coordinate.target for coordinate in arm.search_space}
    preset = load_preset("shared", name).hyperparameters
    kept = {key: value for key, value in preset.items() if key not in searched}
    assert kept and all(getattr(shared, key) == value or tuple(getattr(shared, key)) == tuple(value)
                        for key, value in kept.items())
    assert start_point(arm, "") == arm.hyperparameters()
    if "observation" in kept:  # the like-for-like input (our arms' cells), not the library's default (cell codes)
        assert shared.observation == "cells" != arm.hyperparameters().observation


def test_a_study_of_our_arms_still_starts_from_quick():
    needs("optuna")
    from doors_gym_baselines.tuning import TuneOptions

    assert TuneOptions(arm="flax-numpy").resolved_start_from == "quick"
    assert TuneOptions(arm="flax-numpy", start_from="shared").resolved_start_from == "shared"


def test_a_study_of_a_library_arm_writes_its_own_preset_that_compare_loads(tmp_path):
    needs("optuna")
    needs(LIBRARIES["sb3-dqn"])
    from doors_gym_baselines.config import RunSettings
    from doors_gym_baselines.tuning import TuneOptions, tune

    name, arm = "sb3-dqn", ARMS["sb3-dqn"]
    options = TuneOptions(
        arm=name, n_trials=2, storage=f"sqlite:///{tmp_path / 'optuna.db'}",
        tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", models=False, preset_out=str(tmp_path / "tuned.yml"),
        confirm_top=1, confirm_seeds=1, verbose=False,
    )  # fmt: skip
    study = tune(options, RunSettings(seed=3, total_steps=TOTAL_STEPS, eval_every=EVAL_EVERY, hold_out_steps=1000))
    assert len(study.trials) == 2
    start = load_preset("tuned", name).hyperparameters  # the study's first point and its fixed settings
    written = load_preset(str(tmp_path / "tuned.yml"), name)
    hyper = written.config(None, arm.hyperparameters).hyperparameters
    assert isinstance(hyper, arm.hyperparameters)
    winner = study.trials[written.study["trial"]]
    searched = {coordinate.target for coordinate in arm.search_space}
    for coordinate in arm.search_space:  # the winner's point, in the arm's own settings
        assert coordinate.scale.coordinate(getattr(hyper, coordinate.target)) == pytest.approx(
            winner.params[coordinate.name], rel=1e-6
        ), coordinate.name
    for key, value in start.items():  # what the space does not search is the start preset's
        if key not in searched:
            assert getattr(hyper, key) == (tuple(value) if isinstance(value, list) else value), key
    assert hyper.n_envs == 16 and "n_envs" not in searched


@pytest.mark.parametrize("name", list(LIBRARIES))
def test_the_cells_observation_gives_the_network_the_agents_and_the_goals_planes(name):
    """``observation="cells"``: the library's network reads what this package's arms read (2 * H * W planes), in
    training (the env wrapped) and when its model acts on grid observations."""
    from doors_gym.wrappers import agent_goal_planes
    from doors_gym_baselines.serving import example_observations

    needs(LIBRARIES[name])
    arm = ARMS[name]
    config = arm.config(
        total_steps=TOTAL_STEPS, eval_every=0, seed=3, quiet=True, **{**TINY[name], "observation": "cells"}
    )
    result = arm.train(config)
    obs = example_observations(config.params, 6)
    planes = agent_goal_planes(obs)
    assert planes.shape == (6, 2 * config.params.num_cells) and (planes.sum(axis=1) == 2).all()
    if name in ("sb3-dqn", "sbx-dqn"):  # the library's own predict on the planes its env gave it in training
        assert result.model.agent.observation_space.shape == (2 * config.params.num_cells,)
        actions, _ = result.model.agent.predict(planes, deterministic=True)
        np.testing.assert_array_equal(np.asarray(actions), result.model.act(obs))
    else:
        np.testing.assert_allclose(result.model.q_values(obs), result.model._apply(result.model.params, planes))


def test_a_level_reaches_the_librarys_env_with_its_walls_and_door_draws():
    """At ``3Walls`` (three walls, doors drawn per episode) the library steps that level, not the study's wall:
    rejax's env and SB3's vector env are made with the level's layout and time limit; the ``cells`` observation,
    which cannot show drawn doors, is refused with what to use instead."""
    from doors_gym_baselines.levels import TrainingLevel
    from doors_gym_libraries import common

    level = TrainingLevel.named("3Walls")
    assert level.params.n_walls > 1 and level.params.doors == "random"  # the case this test is about
    needs("rejax")
    from doors_gym_libraries.rejax import make_algorithm

    config = ARMS["rejax-pqn"].config(**TINY["rejax-pqn"], observation="flat", **level.settings)
    env = make_algorithm(config, ARMS["rejax-pqn"]).env
    assert env.default_params == dataclasses.replace(level.params, obs_mode="flat")
    needs("stable_baselines3")
    from doors_gym_libraries.stable import make_env

    vector = make_env(ARMS["sb3-dqn"].config(n_envs=2, observation="grid", **level.settings))
    layout = dataclasses.replace(level.params, max_episode_steps=None)  # gymnasium's TimeLimit truncates instead
    assert [inner.unwrapped.params for inner in vector.envs] == [layout] * 2
    assert [inner.spec.max_episode_steps for inner in vector.envs] == [level.max_episode_steps] * 2
    with pytest.raises(ValueError, match=r"observation='cells' .*\(doors='random'\): expected observation 'grid' or"):
        common.env_keywords(ARMS["sb3-dqn"].config(observation="cells", **level.settings))


def test_a_library_arm_at_a_level_takes_its_own_preset_with_the_levels_budget():
    from doors_gym_baselines.presets import level_preset, preset_at

    for name in LIBRARIES:
        for spec in ("tuned", "shared-onehot"):
            preset = preset_at(spec, name, "31x31")
            own = load_preset(spec, name)
            assert preset.hyperparameters == own.hyperparameters
            preset.config(hyperparameters=hyperparameters_of(name))  # every value checked against the arm's own
        budget = level_preset("31x31").run
        assert preset_at("tuned", name, "31x31").run == {**load_preset("tuned", name).run, **budget}
        assert preset_at("shared-onehot", name, "31x31").run == load_preset("shared-onehot", name).run  # as typed
