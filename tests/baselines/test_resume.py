"""A resumable run killed part way goes on from its checkpoint and learns what it would have learned whole."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from stacks import needs

from doors_gym_baselines.config import DQNConfig

needs("jax")
needs("flax")

SMALL = dict(
    total_steps=3_200, num_envs=8, learning_starts=400, batch_size=16, buffer_size=800, hidden_sizes=(16,),
    eval_every=800, quiet=True, profile=False, num_seeds=2, n_step=3,
)  # fmt: skip


class Killed(Exception):
    """Stands for a kill between two segments."""


@pytest.fixture(autouse=True)
def save_every_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    """These runs take seconds: each segment is saved (a run saves at most once a minute)."""
    from doors_gym_baselines.learners import scan_driver

    monkeypatch.setattr(scan_driver, "CHECKPOINT_SECONDS", 0.0)


def kill_at_chunk(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """Makes the driver's ``count``-th chunk raise :class:`Killed` (the chunks before it ran and were saved)."""
    from doors_gym_baselines.learners import scan_driver

    original, calls = scan_driver.CompiledSeeds.run_chunk, []

    def run_chunk(self, first):
        calls.append(first)
        if len(calls) == count:
            raise Killed(first)
        return original(self, first)

    monkeypatch.setattr(scan_driver.CompiledSeeds, "run_chunk", run_chunk)


def without_clocks(row) -> dict:
    """A history row's figures without its wall-clock ones (seconds, env steps per second)."""

    def drop(value):
        if isinstance(value, dict):
            return {key: drop(inner) for key, inner in value.items() if key not in ("seconds", "sps")}
        if isinstance(value, (list, tuple)):
            return [drop(inner) for inner in value]
        return value

    return drop(dataclasses.asdict(row))


def test_a_run_killed_part_way_resumes_from_its_checkpoint_and_learns_what_the_whole_run_learns(
    tmp_path, monkeypatch
) -> None:
    import jax

    from doors_gym_baselines.learners.dqn_flax_scan import train

    whole = train(DQNConfig.of(**SMALL))
    path = tmp_path / "run.ckpt"
    config = DQNConfig.of(**SMALL, checkpoint=str(path))
    with monkeypatch.context() as patched:
        kill_at_chunk(patched, 9)  # eight of twenty segments done, two evaluations made
        with pytest.raises(Killed):
            train(config)
    assert path.exists()
    resumed = train(config)
    assert not path.exists()  # removed once the run ended
    per_chunk_steps = SMALL["total_steps"] // 20
    assert [entry["at_step"] for entry in resumed.facts["resumed"]] == [8 * per_chunk_steps]
    assert resumed.env_steps == whole.env_steps and resumed.updates == whole.updates
    for mine, theirs in zip(jax.tree.leaves(resumed.model.params), jax.tree.leaves(whole.model.params), strict=True):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    np.testing.assert_array_equal(resumed.losses, whole.losses)
    assert len(resumed.history) == len(whole.history) == SMALL["total_steps"] // SMALL["eval_every"]
    for mine, theirs in zip(resumed.history, whole.history, strict=True):
        np.testing.assert_equal(without_clocks(mine), without_clocks(theirs))
    assert resumed.history[-1].seconds > resumed.facts["resumed"][0]["after_seconds"] > 0  # one clock, not restarted


def test_a_checkpoint_of_another_config_is_not_resumed(tmp_path, monkeypatch, capsys) -> None:
    from doors_gym_baselines.learners.dqn_flax_scan import train

    path = tmp_path / "run.ckpt"
    with monkeypatch.context() as patched:
        kill_at_chunk(patched, 5)
        with pytest.raises(Killed):
            train(DQNConfig.of(**SMALL, checkpoint=str(path)))
    other = train(DQNConfig.of(**{**SMALL, "gamma": 0.9}, checkpoint=str(path)))
    assert "resumed" not in other.facts
    assert f"checkpoint {path} holds another run" in capsys.readouterr().err
    assert not path.exists()


def test_a_checkpoint_written_before_a_knob_was_added_resumes_while_the_knob_keeps_its_default(
    tmp_path, monkeypatch
) -> None:
    """A checkpoint whose saved config lacks a hyperparameter added since (a row resumed by a newer version) is
    the same run's while that knob keeps its default, and another's once the knob is turned on."""
    import pickle

    from doors_gym_baselines.learners.dqn_flax_scan import train

    path = tmp_path / "run.ckpt"
    config = DQNConfig.of(**SMALL, checkpoint=str(path))
    with monkeypatch.context() as patched:
        kill_at_chunk(patched, 5)
        with pytest.raises(Killed):
            train(config)
    saved = pickle.loads(path.read_bytes())
    del saved["fingerprint"]["config"]["hyperparameters"]["advantage_learning"]  # as written before it existed
    older = pickle.dumps(saved)
    path.write_bytes(older)
    assert "resumed" not in train(config.replace(advantage_learning=0.5)).facts
    path.write_bytes(older)
    per_chunk_steps = SMALL["total_steps"] // 20
    assert [entry["at_step"] for entry in train(config).facts["resumed"]] == [4 * per_chunk_steps]


def test_an_unreadable_checkpoint_is_said_and_the_run_starts_afresh(tmp_path, capsys) -> None:
    from doors_gym_baselines.learners.dqn_flax_scan import train

    path = tmp_path / "run.ckpt"
    path.write_bytes(b"not a pickle")
    result = train(DQNConfig.of(**{**SMALL, "total_steps": 800, "eval_every": 0}, checkpoint=str(path)))
    assert "resumed" not in result.facts
    assert f"checkpoint {path} cannot be read" in capsys.readouterr().err


def test_a_checkpoint_that_cannot_be_written_is_said_once_and_the_run_goes_on(tmp_path, capsys) -> None:
    from doors_gym_baselines.harness.checkpoint import Checkpoint

    blocked = tmp_path / "a-file"
    blocked.write_text("")  # a folder this worker cannot make: a driver's path another host lacks behaves alike
    checkpoint = Checkpoint(blocked / "runs" / "run.ckpt", fingerprint="run")
    checkpoint.save({"first": 1})
    checkpoint.save({"first": 2})
    said = capsys.readouterr().err
    assert said.count(f"checkpoint {checkpoint.path} cannot be written") == 1 and "goes on without saving" in said
    assert checkpoint.load() is None


def test_an_arm_that_cannot_resume_refuses_a_checkpoint() -> None:
    from doors_gym_baselines.arms import get_arm

    arm = get_arm("flax-numpy")
    with pytest.raises(ValueError, match=r"checkpoint='x\.ckpt' is not supported by the flax-numpy arm"):
        arm.configure(arm.config(checkpoint="x.ckpt"))


def test_compare_gives_a_resumable_arms_runs_a_checkpoint_beside_their_cache(tmp_path) -> None:
    from doors_gym_baselines.experiments import compare

    planned = compare.plan(compare.CompareOptions(arms=("flax-scan", "flax-numpy"), seeds=2, out=str(tmp_path)))
    runs = {(row.row.key, run.cache.name): run.config.run.checkpoint for row in planned.rows for run in row.runs}
    assert runs == {
        ("flax-scan", "flax-scan-seed100.json"): str(tmp_path / "runs" / "flax-scan-seed100.ckpt"),
        ("flax-scan", "flax-scan-seed101.json"): str(tmp_path / "runs" / "flax-scan-seed101.ckpt"),
        ("flax-scan-together", "flax-scan-seed100-101.json"): str(tmp_path / "runs" / "flax-scan-seed100-101.ckpt"),
        ("flax-numpy", "flax-numpy-seed100.json"): None,
        ("flax-numpy", "flax-numpy-seed101.json"): None,
    }
    with_checkpoint = planned.rows[0].runs[0].config
    assert with_checkpoint.outcome_key() == with_checkpoint.replace(checkpoint=None).outcome_key()


def test_a_level_trial_killed_part_way_goes_on_with_its_log(tmp_path, monkeypatch, capsys) -> None:
    """``benchmarks/level_trial.py --checkpoint``: started again after a kill, the probe goes on from its last
    segment and its log is read back and continued (each evaluation once, in order, then the run's end)."""
    import importlib.util
    import json
    import pathlib
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("level_trial", root / "benchmarks" / "level_trial.py")
    level_trial = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(level_trial)
    log, checkpoint = tmp_path / "probe.jsonl", tmp_path / "probe.ckpt"
    changes = {k: v for k, v in SMALL.items() if k not in ("total_steps", "eval_every", "quiet", "num_seeds")}
    argv = ["level_trial.py", "--arm", "flax-scan", "--level", "study", "--steps", "3200", "--eval-every", "400"]
    argv += ["--seeds", "2", "--log", str(log), "--checkpoint", str(checkpoint)]
    for name, value in changes.items():
        argv += ["--set", f"{name}={list(value) if isinstance(value, tuple) else value}"]
    monkeypatch.setattr(sys, "argv", argv)
    with monkeypatch.context() as patched:
        kill_at_chunk(patched, 12)  # after 11 segments of 160 env steps: evaluated at 480, 800, 1280 and 1600
        with pytest.raises(Killed):
            level_trial.main()
    before = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [row["step"] for row in before[1:]] == [480, 800, 1280, 1600] and checkpoint.exists()
    capsys.readouterr()
    level_trial.main()
    header, *rows, end = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert header["arm"] == "flax-scan" and header["seeds"] == 2
    # Evaluated at the end of the segment that reaches each multiple of 400, as the whole run is.
    assert [row["step"] for row in rows] == [480, 800, 1280, 1600, 2080, 2400, 2880, 3200]
    assert rows[:4] == before[1:]  # the rows before the kill, kept as they were
    assert end["finished"] is True and not checkpoint.exists()
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(printed) == len(rows)  # the kept rows printed again, then the new ones


def test_a_run_shorter_than_the_checkpoint_interval_writes_no_checkpoint(tmp_path, monkeypatch) -> None:
    """A short run's time stays its training's: no save before a minute has passed since the run began."""
    from doors_gym_baselines.learners import scan_driver
    from doors_gym_baselines.learners.dqn_flax_scan import train

    monkeypatch.setattr(scan_driver, "CHECKPOINT_SECONDS", 3600.0)
    path = tmp_path / "run.ckpt"
    with monkeypatch.context() as patched:
        kill_at_chunk(patched, 9)
        with pytest.raises(Killed):
            train(DQNConfig.of(**SMALL, checkpoint=str(path)))
    assert not path.exists()
