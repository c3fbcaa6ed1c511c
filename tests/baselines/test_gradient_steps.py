"""``gradient_steps``: several gradient updates at each training vector step, in every DQN arm, counted as the
config counts them (so the learning rate decays over the run's real updates)."""

from __future__ import annotations

import numpy as np
import pytest
from stacks import needs

from doors_gym_baselines.config import DQNConfig

TINY = dict(
    total_steps=1_600, num_envs=16, learning_starts=480, buffer_size=2_000, batch_size=32, hidden_sizes=(16,),
    train_frequency=2, eval_every=0, quiet=True, profile=False, lr_end_fraction=0.1,
)  # fmt: skip


def test_the_config_counts_every_update_of_a_training_step() -> None:
    one, three = DQNConfig.of(**TINY), DQNConfig.of(**TINY, gradient_steps=3)
    # Vector steps 30..99 learn (past 480 env steps), every second one: 35 training steps.
    assert one.num_updates == 35 and three.num_updates == 3 * 35
    assert (one.lr_decay_updates, three.lr_decay_updates) == (34, 104)  # from the first update to the last
    assert "(3 updates)" in three.hyperparameters.describe()
    with pytest.raises(ValueError, match="gradient_steps=0 is out of range"):
        DQNConfig.of(gradient_steps=0)


@pytest.mark.parametrize("arm_name", ["torch-numpy", "flax-numpy", "flax-scan"])
def test_every_arm_makes_the_updates_the_config_counts(arm_name) -> None:
    needs("torch" if arm_name.startswith("torch") else "flax")
    from doors_gym_baselines.arms import get_arm

    arm = get_arm(arm_name)
    config = DQNConfig.of(**TINY, gradient_steps=3, env_id=arm.env_id)
    result = arm.train(config)
    assert result.updates == config.num_updates == 105
    losses = np.asarray(result.losses)
    assert np.isfinite(losses).all()
    if arm.steps_pure_functions:
        assert len(losses) == 35  # the scan logs a training step's mean loss
    else:
        assert len(losses) == 105  # the host loop, each update's
