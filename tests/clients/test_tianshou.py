"""Tianshou 2.0's DQN example (``examples/discrete/discrete_dqn.py``) on ``Doors-Flat-v0``, its task line changed.

The example is not in Tianshou's wheel, so it is written out here as published: its networks, collectors,
trainer parameters and final watch (``gym.make(task, render_mode="human")``, which builds and steps without a
display as CartPole's does), with ``task = "Doors-Flat-v0"`` (Tianshou refuses the grid's ``MultiDiscrete``;
the flat id is a float ``Box``), a short budget, and the logger writing to a temporary folder. The test
reward it reports after training is far above its first (a random policy gains about nothing).
"""

from __future__ import annotations

import math
import pathlib

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

torch = needs("torch")
ts = needs("tianshou")
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy  # noqa: E402
from tianshou.algorithm.optim import AdamOptimizerFactory  # noqa: E402
from tianshou.data import CollectStats  # noqa: E402
from tianshou.trainer import OffPolicyTrainerParams  # noqa: E402
from tianshou.utils.net.common import Net  # noqa: E402
from tianshou.utils.space_info import SpaceInfo  # noqa: E402
from torch.utils.tensorboard import SummaryWriter  # noqa: E402


def seed_everything(seed: int, training_envs: ts.env.DummyVectorEnv, test_envs: ts.env.DummyVectorEnv) -> None:
    """Not in this example: seeds, as Tianshou's other examples set them (its atari and mujoco scripts), so that
    the run, and the untrained policy it is held to, are the same at every run."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    training_envs.seed(seed)
    test_envs.seed(seed + 100)


def make_algorithm(
    env: gym.Env, lr: float, gamma: float, n_step: int, target_freq: int, eps_train: float, eps_test: float
) -> ts.algorithm.DQN:
    """The example's network, policy and DQN algorithm, sized from the watched env's spaces."""
    space_info = SpaceInfo.from_env(env)
    state_shape = space_info.observation_info.obs_shape
    action_shape = space_info.action_info.action_shape
    net = Net(state_shape=state_shape, action_shape=action_shape, hidden_sizes=[128, 128, 128])
    optim = AdamOptimizerFactory(lr=lr)

    policy = DiscreteQLearningPolicy(
        model=net, action_space=env.action_space, eps_training=eps_train, eps_inference=eps_test
    )
    return ts.algorithm.DQN(
        policy=policy, optim=optim, gamma=gamma, n_step_return_horizon=n_step, target_update_freq=target_freq
    )


def main(log_dir: pathlib.Path, seed: int = 0) -> tuple[float, float, float]:
    """The example's ``main``, task changed, budget smaller, seeded: the untrained and best test rewards, the
    watched return."""
    task = "Doors-Flat-v0"
    lr, epoch, batch_size = 1e-3, 2, 64
    num_training_envs, num_test_envs = 10, 10
    gamma, n_step, target_freq = 0.9, 3, 320
    buffer_size = 20000
    eps_train, eps_test = 0.1, 0.05
    epoch_num_steps, collection_step_num_env_steps = 4000, 10

    logger = ts.utils.TensorboardLogger(SummaryWriter(str(log_dir)))
    training_envs = ts.env.DummyVectorEnv([lambda: gym.make(task) for _ in range(num_training_envs)])
    test_envs = ts.env.DummyVectorEnv([lambda: gym.make(task) for _ in range(num_test_envs)])
    seed_everything(seed, training_envs, test_envs)

    env = gym.make(task, render_mode="human")
    assert isinstance(env.action_space, gym.spaces.Discrete)
    algorithm = make_algorithm(env, lr, gamma, n_step, target_freq, eps_train, eps_test)
    training_collector = ts.data.Collector[CollectStats](
        algorithm,
        training_envs,
        ts.data.VectorReplayBuffer(buffer_size, num_training_envs),
        exploration_noise=True,
    )
    test_collector = ts.data.Collector[CollectStats](algorithm, test_envs, exploration_noise=True)
    # Not in the example: the untrained policy's test reward, to compare with.
    untrained = test_collector.collect(n_episode=num_test_envs, reset_before_collect=True).returns.mean()

    def stop_fn(mean_rewards: float) -> bool:
        if env.spec:
            if not env.spec.reward_threshold:
                return False
            else:
                return mean_rewards >= env.spec.reward_threshold
        return False

    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training_collector,
            test_collector=test_collector,
            max_epochs=epoch,
            epoch_num_steps=epoch_num_steps,
            collection_step_num_env_steps=collection_step_num_env_steps,
            test_step_num_episodes=num_test_envs,
            batch_size=batch_size,
            update_step_num_gradient_steps_per_sample=1 / collection_step_num_env_steps,
            stop_fn=stop_fn,
            logger=logger,
            test_in_training=True,
        )
    )
    # Watch performance: one episode in human mode (the example watches 100; Tianshou 2.0.1's collector wants
    # reset_before_collect=True there, which the published line lacks, on CartPole too).
    collector = ts.data.Collector[CollectStats](algorithm, env, exploration_noise=True)
    watched = collector.collect(n_episode=1, render=1 / 35, reset_before_collect=True)
    return float(untrained), float(result.best_reward), float(watched.returns.mean())


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:render_mode='human' shows nothing")
@pytest.mark.filterwarnings("ignore:Single environment detected")
def test_tianshou_dqn_example_learns_on_the_flat_id(tmp_path):
    untrained, best, watched = main(tmp_path / "log" / "dqn")
    # A step's reward is the distance it gains on the goal: 10 test episodes' mean return, before and after. Unseeded
    # (as published), an untrained net's return varied a lot (-0.7 to 8.7 seen). Walking to the cell below the goal
    # and stopping at the wall gains 7.21 on average over the start/goal pairs (hypot(14, dc) - 8), so a mean above
    # 7.5 needs crossings. Measured on the 2-core development CPU, seeds 0, 1, 2: best 8.15, 10.20, 8.13 (5.6, -0.6,
    # 0.7 untrained); with torch's portable kernels and 2 threads (ATEN_CPU_CAPABILITY=default, OMP_NUM_THREADS=2)
    # 8.15, 10.34, 8.13. A bar of 8, as this test had, left seed 0 a margin of 0.15; 7.5 leaves every seed 0.6.
    assert best > max(untrained + 1.0, 7.5)
    assert math.isfinite(watched)  # the watched episode, in human mode without a display, ran to its end
    assert any(path.name.startswith("events.out.tfevents") for path in (tmp_path / "log" / "dqn").iterdir())
