"""A CleanRL ``dqn.py``-shaped loop, written here: SyncVectorEnv, a flat input size from the single space's
shape, Stable-Baselines3's ``ReplayBuffer`` and ``RecordEpisodeStatistics`` on every env.

As CleanRL's scripts for Gymnasium 1.x, the vector env autoresets in the same
step and the final observation of a truncated episode comes from
``infos["final_obs"]``.
"""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

torch = needs("torch")
needs("stable_baselines3")
from stable_baselines3.common.buffers import ReplayBuffer  # noqa: E402
from torch import nn  # noqa: E402

ENV_IDS = ["Doors-v0", "DoorsJax-v0"]


def make_env(env_id: str, seed: int):
    def thunk() -> gym.Env:
        env = gym.make(env_id)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env.action_space.seed(seed)
        return env

    return thunk


class QNetwork(nn.Module):
    def __init__(self, envs: gym.vector.VectorEnv) -> None:
        super().__init__()
        self.network = nn.Sequential(
            nn.Linear(int(np.array(envs.single_observation_space.shape).prod()), 120),
            nn.ReLU(),
            nn.Linear(120, 84),
            nn.ReLU(),
            nn.Linear(84, int(envs.single_action_space.n)),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


def linear_schedule(start_e: float, end_e: float, duration: int, t: int) -> float:
    slope = (end_e - start_e) / duration
    return max(slope * t + start_e, end_e)


def cleanrl_dqn_setup(env_id: str, seed: int, num_envs: int):
    """CleanRL ``dqn.py``'s set-up before its loop: seeding, the vector env, the Q- and target networks, the
    optimizer and the replay buffer, here on the grid's int16 observations (225 cells)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    envs = gym.vector.SyncVectorEnv(
        [make_env(env_id, seed + i) for i in range(num_envs)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    assert isinstance(envs.single_action_space, gym.spaces.Discrete)
    q_network = QNetwork(envs)
    assert q_network.network[0].in_features == 225
    optimizer = torch.optim.Adam(q_network.parameters(), lr=2.5e-4)
    target_network = QNetwork(envs)
    target_network.load_state_dict(q_network.state_dict())
    rb = ReplayBuffer(
        10_000, envs.single_observation_space, envs.single_action_space, "cpu", n_envs=num_envs,
        handle_timeout_termination=False,
    )  # fmt: skip
    assert rb.observations.dtype == np.int16
    return envs, q_network, optimizer, target_network, rb


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_cleanrl_dqn_loop_runs_and_its_bookkeeping_adds_up(env_id):
    if env_id == "DoorsJax-v0":
        needs("jax")
    seed, num_envs, total_timesteps, learning_starts = 1, 4, 2_500, 500
    envs, q_network, optimizer, target_network, rb = cleanrl_dqn_setup(env_id, seed, num_envs)

    obs, _ = envs.reset(seed=seed)
    running_returns = np.zeros(num_envs)
    episodes, losses, truncations_seen = [], [], 0
    for global_step in range(total_timesteps // num_envs):
        epsilon = linear_schedule(1.0, 0.05, total_timesteps // 2, global_step * num_envs)
        if random.random() < epsilon:
            actions = np.array([envs.single_action_space.sample() for _ in range(envs.num_envs)])
        else:
            q_values = q_network(torch.Tensor(obs))
            actions = torch.argmax(q_values, dim=1).cpu().numpy()
        next_obs, rewards, terminations, truncations, infos = envs.step(actions)
        running_returns += rewards
        if "final_info" in infos and "episode" in infos["final_info"]:
            final_info = infos["final_info"]
            for index in np.flatnonzero(final_info["_episode"]):
                # RecordEpisodeStatistics' return is the sum of the rewards we saw.
                assert final_info["episode"]["r"][index] == pytest.approx(running_returns[index], abs=1e-5)
                episodes.append(float(final_info["episode"]["r"][index]))
                running_returns[index] = 0.0
        real_next_obs = next_obs.copy()
        for idx, trunc in enumerate(truncations):
            if trunc:
                real_next_obs[idx] = infos["final_obs"][idx]
                truncations_seen += 1
        rb.add(obs, real_next_obs, actions, rewards, terminations, infos)
        obs = next_obs

        if global_step * num_envs > learning_starts:
            data = rb.sample(32)
            with torch.no_grad():
                target_max, _ = target_network(data.next_observations.float()).max(dim=1)
                td_target = data.rewards.flatten() + 0.99 * target_max * (1 - data.dones.flatten())
            old_val = q_network(data.observations.float()).gather(1, data.actions).squeeze()
            loss = nn.functional.mse_loss(td_target, old_val)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if global_step % 100 == 0:
                target_network.load_state_dict(q_network.state_dict())
    envs.close()

    assert len(episodes) >= 10, "episodes end (goal or the 60-step limit) and are reported"
    assert all(np.isfinite(episodes)) and losses and np.isfinite(losses).all()
    assert truncations_seen > 0 and rb.size() == total_timesteps // num_envs
    stored_obs = rb.observations[: rb.size()].reshape(-1, 225)
    # Observations went in unchanged: one agent per stored grid, cell codes 0..3.
    assert stored_obs.min() >= 0 and stored_obs.max() <= 3
    assert ((stored_obs == 1).sum(axis=1) == 1).all()


def cleanrl_update(q_network, target_network, optimizer, data) -> float:
    """CleanRL ``dqn.py``'s update, line for line: the sampled observations go into the networks uncast."""
    with torch.no_grad():
        target_max, _ = target_network(data.next_observations).max(dim=1)
        td_target = data.rewards.flatten() + 0.99 * target_max * (1 - data.dones.flatten())
    old_val = q_network(data.observations).gather(1, data.actions).squeeze()
    loss = nn.functional.mse_loss(td_target, old_val)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


@pytest.mark.parametrize("env_id", ["Doors-Flat-v0", "Doors-Random-Flat-v0", "Doors-v0"])
def test_cleanrl_dqn_update_needs_only_the_flat_id(env_id):
    """CleanRL's script picks the env by ``--env-id`` alone: the flat ids give the float32 ``Box`` its update needs;
    the grid's int16 stops it at the first update, as the published script does."""
    num_envs = 2
    envs = gym.vector.SyncVectorEnv(
        [make_env(env_id, i) for i in range(num_envs)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    q_network, target_network = QNetwork(envs), QNetwork(envs)
    optimizer = torch.optim.Adam(q_network.parameters(), lr=2.5e-4)
    rb = ReplayBuffer(
        1_000, envs.single_observation_space, envs.single_action_space, "cpu", n_envs=num_envs,
        handle_timeout_termination=False,
    )  # fmt: skip
    obs, _ = envs.reset(seed=0)
    for _ in range(40):
        actions = np.array([envs.single_action_space.sample() for _ in range(num_envs)])
        next_obs, rewards, terminations, truncations, infos = envs.step(actions)
        rb.add(obs, next_obs, actions, rewards, terminations, infos)
        obs = next_obs
    envs.close()
    data = rb.sample(32)
    if env_id == "Doors-v0":
        with pytest.raises(RuntimeError, match="dtype"):
            cleanrl_update(q_network, target_network, optimizer, data)
        return
    assert rb.observations.dtype == np.float32 and q_network.network[0].in_features == 15 * 15 * 4
    assert np.isfinite(cleanrl_update(q_network, target_network, optimizer, data))
