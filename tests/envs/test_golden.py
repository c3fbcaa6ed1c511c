"""``Doors-v0`` and ``DoorsJax-v0`` replay the transitions recorded before the Doors suite, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import golden


@pytest.fixture(scope="module")
def recorded() -> dict[str, np.ndarray]:
    with np.load(golden.GOLDEN_PATH) as data:
        return {name: data[name] for name in data.files}


@pytest.mark.parametrize("part", ["single", "vector"])
def test_numpy_envs_replay_the_recorded_transitions(recorded, part):
    fresh = {"single": golden.record_single, "vector": golden.record_vector}[part]("Doors-v0")
    assert set(fresh) == {name.split("/")[1] for name in recorded if name.startswith(part + "/")}
    for name, value in fresh.items():
        expected = recorded[f"{part}/{name}"]
        assert value.dtype == expected.dtype and value.shape == expected.shape, name
        np.testing.assert_array_equal(value, expected, err_msg=f"{part}/{name}")


def test_jax_envs_replay_the_recorded_transitions(recorded):
    pytest.importorskip("jax")
    fresh = {
        **{f"jax_single/{k}": v for k, v in golden.record_single("DoorsJax-v0").items()},
        **{f"jax_vector/{k}": v for k, v in golden.record_vector("DoorsJax-v0").items()},
        **{f"jax_rollout/{k}": v for k, v in golden.record_rollout().items()},
    }
    assert set(fresh) == {name for name in recorded if name.startswith("jax_")}
    for name, value in fresh.items():
        assert value.dtype == recorded[name].dtype and value.shape == recorded[name].shape, name
        np.testing.assert_array_equal(value, recorded[name], err_msg=name)


def test_the_recording_holds_episodes_that_end_both_ways(recorded):
    ended = {part: (recorded[f"{part}/terminated"].sum(), recorded[f"{part}/truncated"].sum()) for part in ("vector",)}
    assert all(terminated > 0 and truncated > 0 for terminated, truncated in ended.values())
    assert recorded["single/terminated"].sum() > 0 and recorded["jax_rollout/truncated"].sum() > 0
