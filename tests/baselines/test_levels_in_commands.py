"""``--level`` in every command that builds an env: one mapping of a level to its layout and time limit
(``config.at_level``), the level's presets (``presets.preset_at``), and the commands that read them."""

from __future__ import annotations

import pytest

from doors_gym import cli
from doors_gym.levels import LEVELS, STUDY, get_level
from doors_gym_baselines import compare, presets
from doors_gym_baselines.api import Arm
from doors_gym_baselines.arm import PURE_FUNCTIONS
from doors_gym_baselines.config import RunSettings, at_level


@pytest.mark.parametrize("level", [level.name for level in LEVELS])
def test_a_level_maps_to_its_layout_and_time_limit_in_one_place(level) -> None:
    custom = RunSettings(grid_size=(9, 21), n_doors=4, seed=7, quiet=True)
    run = at_level(custom, level)
    if level == STUDY:
        assert run == custom  # the study's level keeps the flags' own layout
    else:
        assert run.params == get_level(level).params()
        assert (run.seed, run.quiet) == (7, True)  # the machinery is left as it was
    with pytest.raises(ValueError, match="level='Huge' is unknown"):
        at_level(custom, "Huge")


def captured_train_configs(monkeypatch) -> list:
    seen: list = []

    def fake_train(arm, config, trial=None):
        seen.append(config)
        raise SystemExit(0)  # the config is all these tests need

    monkeypatch.setattr(Arm, "train", fake_train)
    return seen


def test_train_at_a_level_trains_there_with_the_levels_preset(monkeypatch) -> None:
    seen = captured_train_configs(monkeypatch)
    for argv in (["--level", "31x31"], ["--level", "31x31", "--total-steps", "5000", "--gamma", "0.95"]):
        with pytest.raises(SystemExit):
            cli.main(["train", "--arm", "flax-numpy", *argv])
    shared = presets.level_preset("31x31")
    plain, typed = seen
    assert plain.params == get_level("31x31").params()
    assert plain.hyperparameters.hidden_sizes == tuple(shared.hyperparameters["hidden_sizes"])
    assert plain.hyperparameters.gamma == shared.hyperparameters["gamma"] == 0.99
    assert plain.run.total_steps == shared.run["total_steps"]
    assert (typed.run.total_steps, typed.hyperparameters.gamma) == (5000, 0.95)  # the flags over the level's preset
    assert typed.params == plain.params


def test_layout_flags_take_the_layouts_time_limit(monkeypatch) -> None:
    seen = captured_train_configs(monkeypatch)
    for argv in ([], ["--grid-size", "9", "21", "--n-walls", "2", "--doors", "random"], ["--max-episode-steps", "40"]):
        with pytest.raises(SystemExit):
            cli.main(["train", "--arm", "torch-numpy", *argv])
    study, layout, limited = seen
    assert study.params == get_level(STUDY).params()  # Doors-v0's own time limit, 60
    assert (layout.params.n_walls, layout.params.random_doors, layout.run.max_episode_steps) == (2, True, 3 * 30)
    assert limited.run.max_episode_steps == 40


@pytest.mark.parametrize(
    ("command", "given", "named"),
    [
        ("train", ["--grid-size", "9", "9"], "grid_size"),
        ("train", ["--n-walls", "2"], "n_walls"),
        ("train", ["--max-episode-steps", "50"], "max_episode_steps"),
        ("tune", ["--door-cols", "1", "5", "9"], "door_cols"),
        ("compare", ["--n-doors", "2"], "n_doors"),
        ("train", ["--doors", "random"], "doors"),
        ("compare", ["--max-episode-steps", "50"], "max_episode_steps"),
    ],
)
def test_a_layout_flag_beside_a_level_is_an_error_naming_both(command, given, named, capsys) -> None:
    arm = ["--arms" if command == "compare" else "--arm", "flax-numpy"]
    with pytest.raises(SystemExit) as raised:
        cli.main([command, *arm, "--level", "3Walls", *given])
    assert raised.value.code == 2
    error = capsys.readouterr().err
    assert "--level '3Walls' sets the" in error and f"--{named.replace('_', '-')}" in error


def test_tune_at_a_level_starts_from_the_levels_preset_and_budget(monkeypatch) -> None:
    from doors_gym_baselines import tuning
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.tuning.command import start_point

    seen: dict = {}
    monkeypatch.setattr(tuning, "tune", lambda options, run: seen.update(options=options, run=run) or None)
    monkeypatch.setattr(tuning, "describe", lambda study, options: "described")
    assert cli.main(["tune", "--arm", "flax-scan", "--level", "63x63", "--no-models"]) == 0
    options, run = seen["options"], seen["run"]
    shared = presets.level_preset("63x63")
    assert run.params == get_level("63x63").params()
    assert (run.total_steps, run.eval_every, run.hold_out_steps) == tuple(
        shared.run[name] for name in ("total_steps", "eval_every", "hold_out_steps")
    )
    assert options.resolved_study_name == "dqn-flax-scan-time-to-solved-63x63"
    assert options.resolved_start_from == "shared"
    start = start_point(get_arm("flax-scan"), options.resolved_start_from, options.level)
    assert start.gamma == 0.99 and start.hidden_sizes == tuple(shared.hyperparameters["hidden_sizes"])
    assert cli.main(["tune", "--arm", "flax-scan", "--level", "63x63", "--total-steps", "9000"]) == 0
    assert seen["run"].total_steps == 9000 and seen["run"].eval_every == shared.run["eval_every"]


def test_a_tuned_preset_at_a_level_is_what_tuned_means_there(tmp_path, monkeypatch) -> None:
    for name in ("shared.yml", "level-3Walls.yml"):  # the installed shared presets, in a folder of the test's own
        (tmp_path / name).write_text((presets.HYPERPARAMS_DIR / name).read_text())
    monkeypatch.setattr(presets, "HYPERPARAMS_DIR", tmp_path)
    options = compare.CompareOptions(level="3Walls", arms=("flax-scan", "torch-numpy"))
    assert options.run_name == "compare-shared-3Walls"
    assert options.preset_config("flax-scan")[1].name == "shared-3Walls"
    own = tmp_path / "3Walls" / "flax-scan.yml"
    own.parent.mkdir()
    own.write_text("hyperparameters: {gamma: 0.97, hidden_sizes: [32, 32]}\nrun: {total_steps: 12345}\n")
    assert presets.tuned_path("flax-scan", "3Walls") == own
    config, preset = options.preset_config("flax-scan")
    assert preset.name == "tuned-3Walls" and config.hyperparameters.gamma == 0.97
    assert config.run.total_steps == 12345 and config.params == get_level("3Walls").params()
    assert options.preset_config("torch-numpy")[1].name == "shared-3Walls"  # an arm without one: the level's shared
    assert options.run_name == "compare-tuned-3Walls"
    shared = compare.CompareOptions(level="3Walls", preset="shared", arms=("flax-scan",))
    assert shared.preset_config("flax-scan")[1].name == "shared-3Walls"  # --shared stays like for like


def test_the_studys_level_typed_beside_a_layout_flag_is_an_error_too(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["train", "--arm", "flax-numpy", "--level", "study", "--grid-size", "9", "9"])
    assert "--level 'study' sets the layout: --grid-size (9, 9)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arm_name", "label_of"),
    [
        ("torch-numpy", lambda level: level.env_id),
        ("flax-jax", lambda level: level.jax_env_id),
        ("flax-scan", lambda level: PURE_FUNCTIONS),
    ],
)
def test_what_an_arm_steps_is_named_at_the_level_it_trains(arm_name, label_of) -> None:
    from doors_gym_baselines import tracking
    from doors_gym_baselines.arm import env_label_at
    from doors_gym_baselines.arms import get_arm

    arm = get_arm(arm_name)
    assert env_label_at(arm, get_level(STUDY).params()) == arm.env_label  # Doors-v0's runs are named as before
    for level in (get_level("3Walls"), get_level("63x63")):
        assert env_label_at(arm, level.params()) == label_of(level)
        assert tracking.run_tags(arm, level.params())["env_id"] == label_of(level)
    assert tracking.run_tags(arm)["env_id"] == arm.env_label


def test_train_at_a_level_names_the_levels_env_in_its_summary_and_run(tmp_path, capsys, load_arm) -> None:
    import json

    import mlflow

    load_arm("flax")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    argv = [
        "train", "--arm", "flax-jax", "--level", "3Walls", "--total-steps", "1000", "--learning-starts", "500",
        "--num-envs", "4", "--eval-every", "0", "--quiet", "--track", "--tracking-uri", uri,
    ]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    summary, _ = json.JSONDecoder().raw_decode(out[out.index("{") :])
    assert summary["env_id"] == "DoorsJax-3Walls-v0"
    client = mlflow.MlflowClient(uri)
    (run,) = client.search_runs([experiment.experiment_id for experiment in client.search_experiments()])
    assert run.data.tags["env_id"] == "DoorsJax-3Walls-v0"
