"""``doors-gym compare`` on a tiny budget: the table, the CSVs, the plot, MLflow, and resuming."""

from __future__ import annotations

import csv
import pathlib

import pytest
from stacks import needs

mlflow = needs("mlflow")
needs("matplotlib")
needs("flax")
needs("torch")

from doors_gym_baselines.experiments import compare  # noqa: E402
from doors_gym_baselines.config import RunSettings  # noqa: E402
from doors_gym_baselines.harness.metrics import is_solved  # noqa: E402


@pytest.fixture(scope="module")
def tiny_compare(tmp_path_factory: pytest.TempPathFactory) -> tuple[compare.CompareOptions, dict]:
    folder = tmp_path_factory.mktemp("compare")
    options = compare.CompareOptions(
        arms=("torch-numpy", "flax-scan"),
        preset="quick",
        seeds=2,
        total_steps=2_000,
        eval_every=1_000,
        out=str(folder / "out"),
        tracking_uri=f"sqlite:///{folder / 'mlflow.db'}",
    )
    return options, compare.compare(options, RunSettings(quiet=True))


def test_compare_writes_the_table_csvs_and_plot(tiny_compare) -> None:
    options, outcome = tiny_compare
    paths = outcome.paths
    table = paths["markdown"].read_text()
    assert table == outcome.table
    for text in ("torch x Doors-v0 (NumPy)", "Flax + JAX env, one jitted scan", "oracle (shortest paths)", "± "):
        assert text in table
    for published in ("0.73", "22.5 min", "0.64", "0.71", "2.3 min"):
        assert published in table
    rows = list(csv.DictReader(paths["csv"].open()))
    # Every arm one seed per run; the seeds an arm can train together, also in one run: a row of its own.
    assert [row["key"] for row in rows] == [
        "torch-numpy",
        "flax-scan",
        "flax-scan-together",
        "oracle",
        "published:torch-numpy",
        "published:flax-numpy",
        "published:flax-jax",
    ]
    assert [row["seeds_in_one_run"] for row in rows[:3]] == ["0", "0", "2"]
    assert "Flax + JAX env, one jitted scan, 2 seeds in one run (per seed)" in table
    assert float(rows[0]["speedup_vs_torch_numpy"]) == pytest.approx(1.0)
    for name in ("seconds_to_solved", "greedy_success_rate", "greedy_step_reward", "rolling_reward"):
        low, iqm, high = (float(rows[0][f"{name}_{stat}"]) for stat in ("ci_low", "iqm", "ci_high"))
        assert low <= iqm <= high, name
    assert rows[0]["budget"] == "2k steps, eval every 1k"
    assert float(rows[3]["greedy_step_reward_mean"]) == pytest.approx(0.7762, abs=1e-3)
    assert all(float(row["env_steps_per_second"]) > 0 for row in rows[:3])
    seeds = list(csv.DictReader(paths["seeds_csv"].open()))
    assert [(row["key"], int(row["seed"])) for row in seeds] == [
        ("torch-numpy", 100),
        ("torch-numpy", 101),
        ("flax-scan", 100),
        ("flax-scan", 101),
        ("flax-scan-together", 100),
        ("flax-scan-together", 101),
    ]
    assert all(int(row["env_steps"]) == 2_000 for row in seeds)  # per seed, whichever way it trained
    assert paths["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_summary_is_the_mean_spread_and_iqm_of_the_seeds(tiny_compare) -> None:
    from scipy.stats import trim_mean

    _, outcome = tiny_compare
    seeds = list(csv.DictReader(outcome.paths["seeds_csv"].open()))
    for row in outcome.rows:
        values = [float(seed["rolling_reward"]) for seed in seeds if seed["key"] == row.key]
        assert row.rolling_reward.mean == pytest.approx(sum(values) / len(values))
        assert row.intervals["rolling_reward"].iqm == pytest.approx(trim_mean(values, 0.25))
        assert row.seeds == 2 and row.wall_seconds_total > 0
        # A seed that is not solved counts as never solved: with half the seeds unsolved the IQM is infinite.
        times = [float(seed["seconds_to_solved"]) for seed in seeds if seed["key"] == row.key]
        unsolved = sum(time != time for time in times)
        assert (row.intervals["seconds_to_solved"].iqm == float("inf")) == (unsolved >= 1)


def test_compare_is_logged_to_mlflow(tiny_compare) -> None:
    options, outcome = tiny_compare
    client = mlflow.MlflowClient(options.tracking_uri)
    experiment = client.get_experiment_by_name(compare.DEFAULT_EXPERIMENT)
    children = client.search_runs(
        [experiment.experiment_id], f"tags.mlflow.parentRunId = '{outcome.run_id}'", max_results=100
    )
    names = sorted(run.info.run_name for run in children)
    assert names == ["flax-scan-seed100", "flax-scan-seed101", "flax-scan-seeds100-101", "torch-numpy-seed100",
                     "torch-numpy-seed101"]  # fmt: skip
    for run in children:
        assert client.get_metric_history(run.info.run_id, "rolling_reward")[-1].step == 2_000
        assert run.data.params["total_steps"] == "2000"
    artifacts = {artifact.path for artifact in client.list_artifacts(outcome.run_id)}
    assert {"compare.md", "compare.csv", "compare_seeds.csv", "learning_curves.png"} <= artifacts


def test_compare_resumes_from_finished_runs(tiny_compare, capsys: pytest.CaptureFixture[str]) -> None:
    options, first = tiny_compare
    runs = pathlib.Path(options.out) / "runs"
    assert len(list(runs.glob("flax-scan-seed*.json"))) == 3  # its two seeds and their run together
    assert not list(runs.glob("*.ckpt")), "no checkpoint is left beside the caches of finished runs"
    again = compare.compare(options, RunSettings(quiet=True))
    assert "reusing" in capsys.readouterr().out
    assert [row.rolling_reward.mean for row in again.rows] == [row.rolling_reward.mean for row in first.rows]
    client = mlflow.MlflowClient(options.tracking_uri)
    experiment = client.get_experiment_by_name(compare.DEFAULT_EXPERIMENT)
    assert again.run_id == first.run_id, "a comparison made again continues its own parent run"
    assert client.get_run(again.run_id).info.status == "FINISHED"
    children = client.search_runs([experiment.experiment_id], f"tags.mlflow.parentRunId = '{again.run_id}'")
    names = [run.info.run_name for run in children]
    assert len(names) == 5 and len(set(names)) == 5, f"reused runs are not trained (nor logged) again: {names}"
    for arm in options.arms:  # the champion of reused runs is the model registered already: no second version
        versions = client.search_model_versions(f"name='doors-{arm}'")
        assert len(versions) == 1, [(version.version, version.run_id) for version in versions]
        assert client.get_model_version_by_alias(f"doors-{arm}", "champion").version == versions[0].version


def test_tuned_presets_are_the_default_and_full_follows_the_study() -> None:
    options = compare.CompareOptions()
    assert options.preset == "tuned" and options.seeds == 10 and options.seed_list == list(range(100, 110))
    assert options.arms == ("torch-numpy", "flax-numpy", "flax-jax", "flax-scan")
    quick, _ = compare.CompareOptions(preset="quick").preset_config("flax-jax")
    full, _ = compare.CompareOptions(preset="full").preset_config("flax-jax")
    assert quick.run.total_steps == 100_000 and full.run.total_steps == 500_000 and full.run.rolling_episodes == 2000
    assert not quick.run.stop_when_solved and not full.run.stop_when_solved
    overridden, _ = compare.CompareOptions(preset="full", total_steps=3_000).preset_config("flax-jax")
    assert (overridden.run.total_steps, overridden.run.eval_every) == (3_000, 3_000)


def test_bad_options_name_the_flag() -> None:
    with pytest.raises(ValueError, match=r"arms=\('torch-numpy', 'torch-numpy'\)|repeats an arm"):
        compare.CompareOptions(arms=("torch-numpy", "torch-numpy"))
    with pytest.raises(ValueError, match=r"preset='slow' is neither one of \['tuned', 'shared', 'quick', 'full'\] nor"):
        compare.CompareOptions(preset="slow")
    with pytest.raises(ValueError, match="first_seed=0 is out of range"):
        compare.CompareOptions(first_seed=0)


def test_main_prints_the_table(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    from doors_gym import cli

    code = cli.main(
        [
            "compare",
            "--preset",
            "quick",
            "--arms",
            "flax-numpy",
            "--seeds",
            "1",
            "--total-steps",
            "1000",
            "--eval-every",
            "500",
            "--out",
            str(tmp_path / "out"),
            "--tracking-uri",
            f"sqlite:///{tmp_path / 'mlflow.db'}",
            "--quiet",
            "--no-models",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0 and "flax-numpy " in printed and "oracle " in printed and ("1/1" in printed or "0/1" in printed)
    lines = [line for line in printed.splitlines() if str(tmp_path) not in line]  # this test's paths are long
    assert max(len(line) for line in lines) <= 100, "the terminal output fits 100 columns"
    assert "| Flax x Doors-v0 (NumPy) |" in (tmp_path / "out" / "compare.md").read_text()  # the full table
    assert f"files in {tmp_path / 'out'}/ (compare.md has the full tables):\n  compare.md, compare.csv" in printed
    assert f"mlflow ui --backend-store-uri sqlite:///{tmp_path / 'mlflow.db'}" in printed
    assert "then http://127.0.0.1:5000/#/experiments/" in printed and "?workflowType=machine_learning" in printed


def test_compare_shows_where_the_time_goes(tiny_compare) -> None:
    options, outcome = tiny_compare
    assert outcome.paths["breakdown"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Where the time goes" in outcome.table and "ms per update" in outcome.table
    rows = {row["arm"]: row for row in csv.DictReader(outcome.paths["csv"].open())}
    for summary in outcome.rows:
        row = rows[summary.arm]
        phases = {
            name: float(row[f"seconds_{name}"]) for name in ("env_step", "update", "evaluation", "compile", "other")
        }
        assert all(value >= 0 for value in phases.values()) and phases["evaluation"] > 0
        # The phases of a seed add up to its wall time.
        assert sum(summary.phases.values()) == pytest.approx(summary.wall_seconds.mean, rel=1e-6)
    client = mlflow.MlflowClient(options.tracking_uri)
    assert "time_breakdown.png" in {artifact.path for artifact in client.list_artifacts(outcome.run_id)}


def test_compare_registers_each_arms_best_seed_as_champion(tiny_compare) -> None:
    options, outcome = tiny_compare
    client = mlflow.MlflowClient(options.tracking_uri, registry_uri=options.tracking_uri)
    seeds = list(csv.DictReader(outcome.paths["seeds_csv"].open()))
    for arm in options.arms:
        version = client.get_model_version_by_alias(f"doors-{arm}", "champion")
        run = client.get_run(version.run_id)
        assert run.data.tags["arm"] == arm and run.data.tags["mlflow.parentRunId"]
        best = max(
            (row for row in seeds if row["arm"] == arm),
            key=lambda row: (
                is_solved(float(row["greedy_success_rate"]), float(row["rolling_reward"])),
                float(row["greedy_step_reward"]),
                float(row["rolling_reward"]),
            ),
        )
        # The champion is the best seed's model, in a run of that seed alone (seeds trained together have a
        # nested run each under their training's run).
        assert run.data.tags["seeds"] == best["seed"] and run.info.run_name == f"{arm}-seed{best['seed']}"
    scan_runs = client.search_runs(
        [client.get_experiment_by_name(options.experiment).experiment_id], "tags.arm = 'flax-scan'"
    )
    # Seeds trained together: their run, and a nested run per seed under it.
    together = next(run for run in scan_runs if run.info.run_name == "flax-scan-seeds100-101")
    nested = [run for run in scan_runs if run.data.tags.get("mlflow.parentRunId") == together.info.run_id]
    assert sorted(run.info.run_name for run in nested) == ["flax-scan-seed100", "flax-scan-seed101"]
    for run in nested:
        assert run.data.metrics["greedy_step_reward"] >= 0 and "final_solved" in run.data.metrics


def test_no_together_leaves_out_the_row_of_seeds_trained_together() -> None:
    both = compare.plan(compare.CompareOptions(arms=("flax-scan",), seeds=3))
    alone = compare.plan(compare.CompareOptions(arms=("flax-scan",), seeds=3, together=False))
    assert [row.row.seeds_in_one_run for row in both.rows] == [0, 3]
    assert [row.row.seeds_in_one_run for row in alone.rows] == [0] and len(alone.rows[0].runs) == 3


def test_a_run_cached_before_a_knob_was_added_is_reused_while_the_knob_keeps_its_default(tmp_path) -> None:
    """A cache written before a hyperparameter existed (its saved config lacks the field) is the same run as the
    config with that field at its default, and not as one with the knob turned on; a saved field the config no
    longer has never matches."""
    import json

    from doors_gym_baselines.config import DQNConfig

    config = DQNConfig.of(total_steps=2_000, seed=100)
    saved = config.outcome_key()
    del saved["hyperparameters"]["layer_norm"]  # as written before layer_norm existed
    cache = tmp_path / "run.json"
    cache.write_text(json.dumps({"config": saved, "model_uri": None, "seeds": []}))
    assert compare.load_cached(compare.PlannedRun(config, cache)) is not None
    assert compare.load_cached(compare.PlannedRun(config.replace(layer_norm=True), cache)) is None
    assert compare.load_cached(compare.PlannedRun(config.replace(total_steps=4_000), cache)) is None
    saved["hyperparameters"]["a_knob_since_removed"] = 1
    cache.write_text(json.dumps({"config": saved, "model_uri": None, "seeds": []}))
    assert compare.load_cached(compare.PlannedRun(config, cache)) is None


def test_a_cached_run_serves_any_config_that_differs_only_in_what_its_algorithm_leaves_unused(tmp_path) -> None:
    """A PQN run written with the full config (a replay buffer size it never used) is the run of a PQN config with
    another buffer size, not of one with another lambda; a DQN run's buffer size is its own."""
    import json

    from doors_gym_baselines.config import DQNConfig

    pqn = DQNConfig.of(total_steps=2_000, seed=100, algorithm="pqn", buffer_size=131_072, tau=0.05)
    cache = tmp_path / "run.json"
    cache.write_text(json.dumps({"config": pqn.to_dict() | {"run": pqn.outcome_key()["run"]}, "seeds": []}))
    assert "buffer_size" not in pqn.outcome_key()["hyperparameters"]
    assert compare.load_cached(compare.PlannedRun(pqn.replace(buffer_size=32_768, tau=1.0), cache)) is not None
    assert compare.load_cached(compare.PlannedRun(pqn.replace(td_lambda=0.9), cache)) is None
    dqn = DQNConfig.of(total_steps=2_000, seed=100, buffer_size=131_072)
    cache.write_text(json.dumps({"config": dqn.outcome_key(), "seeds": []}))
    assert "td_lambda" not in dqn.outcome_key()["hyperparameters"]
    assert compare.load_cached(compare.PlannedRun(dqn.replace(td_lambda=0.9), cache)) is not None
    assert compare.load_cached(compare.PlannedRun(dqn.replace(buffer_size=32_768), cache)) is None


def test_comparisons_of_different_arms_never_share_a_parent_run(tmp_path: pathlib.Path) -> None:
    # torch-numpy and flax-numpy share a config: only the arm tells their comparisons apart, so resuming one in a
    # folder where the other ran must open a parent run of its own (MLflow refuses to change a logged "arms" param).
    def key(*arms: str) -> str:
        options = compare.CompareOptions(arms=arms, level="31x31", seeds=3, out=str(tmp_path))
        return compare.comparison_key(compare.plan(options))

    assert key("torch-numpy") != key("flax-numpy")
    assert key("torch-numpy") == key("torch-numpy")
