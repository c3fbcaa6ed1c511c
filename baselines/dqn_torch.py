"""DQN in PyTorch against ``Doors-v0`` or ``DoorsJax-v0`` (CleanRL's ``dqn.py`` as the reference).

``python -m baselines.dqn_torch --env-id Doors-v0`` or ``doors-gym train --arm torch``.
The Flax file ``dqn_flax.py`` follows the same order, section by section.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch import nn

from doors_gym.core import AGENT, GOAL

from .common import (
    DQNConfig,
    EpisodeTracker,
    Progress,
    ReplayBuffer,
    TrainResult,
    evaluate_and_report,
    evaluate_greedy,
    history_row,
    is_solved,
    make_envs,
    prune,
    run_cli,
)

ARM = "torch"


class QNetwork(nn.Module):
    """MLP from the agent and goal planes to one Q-value per action.

    The first layer is a linear layer over the one-hot agent and goal planes
    (``2 * H * W`` inputs). A one-hot input selects one weight column per
    plane, so it is computed as those two columns: the same function and
    parameters, without multiplying zeros.
    """

    def __init__(self, num_cells: int, hidden_sizes: tuple[int, ...], num_actions: int = 5) -> None:
        super().__init__()
        self.num_cells = num_cells
        self.planes = nn.Linear(2 * num_cells, hidden_sizes[0])
        layers: list[nn.Module] = [nn.ReLU()]
        width = hidden_sizes[0]
        for hidden in hidden_sizes[1:]:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, num_actions))
        self.network = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``(batch, H * W)`` int8 observations -> ``(batch, 5)`` Q-values."""
        agent = (obs == AGENT).to(torch.uint8).argmax(dim=1)
        is_goal = obs == GOAL
        goal = is_goal.to(torch.uint8).argmax(dim=1)
        goal_visible = is_goal.any(dim=1, keepdim=True)  # the agent covers a reached goal
        rows = self.planes.weight.t()
        first = rows[agent] + rows[self.num_cells + goal] * goal_visible + self.planes.bias
        return self.network(first)


def make_optimizer(config: DQNConfig, parameters: Any) -> torch.optim.Optimizer:
    if config.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=config.learning_rate)
    return torch.optim.SGD(parameters, lr=config.learning_rate)


def greedy_actor(network: QNetwork, device: torch.device):
    """A batch of NumPy observations -> greedy actions (NumPy)."""

    @torch.no_grad()
    def act(obs: np.ndarray) -> np.ndarray:
        # DoorsJax-v0 hands out read-only views of JAX buffers; torch wants writable memory.
        obs = obs if obs.flags.writeable else obs.copy()
        return network(torch.as_tensor(obs, device=device)).argmax(dim=1).cpu().numpy()

    return act


def train(config: DQNConfig, trial: Any = None) -> TrainResult:
    """Trains one seed; reports greedy evaluations to an Optuna ``trial`` if given.

    Returns a :class:`TrainResult` whose ``model`` is the trained ``QNetwork``.
    """
    start = time.perf_counter()
    torch.manual_seed(config.seed)
    device = torch.device(config.device)
    params = config.params
    envs = make_envs(config)
    q_network = QNetwork(params.num_cells, config.hidden_sizes).to(device)
    target_network = QNetwork(params.num_cells, config.hidden_sizes).to(device)
    target_network.load_state_dict(q_network.state_dict())
    optimizer = make_optimizer(config, q_network.parameters())
    loss_function = nn.SmoothL1Loss() if config.loss == "huber" else nn.MSELoss()
    buffer = ReplayBuffer(config.buffer_size, params.num_cells, seed=config.seed)
    tracker = EpisodeTracker(config.num_envs, config.rolling_episodes)
    rng = np.random.default_rng(config.seed)
    act = greedy_actor(q_network, device)
    progress = Progress(config.num_iterations * config.num_envs, f"{ARM} x {config.env_id}", config.quiet)

    obs, info = envs.reset(seed=config.seed)
    tracker.start(np.ones(config.num_envs, dtype=bool), info["distance"])
    previous_done = np.zeros(config.num_envs, dtype=bool)
    history: list[dict[str, float]] = []
    losses: list[float] = []
    updates = 0
    next_eval = config.eval_every or None
    for iteration in range(config.num_iterations):
        global_step = (iteration + 1) * config.num_envs
        epsilon = config.epsilon(global_step)
        actions = act(obs)
        explore = rng.random(config.num_envs) < epsilon
        actions[explore] = rng.integers(0, 5, int(explore.sum()))

        next_obs, rewards, terminated, truncated, info = envs.step(actions)
        # Next-step autoreset: a step that follows an episode end is a reset, not a transition.
        valid = ~previous_done
        buffer.add(obs[valid], actions[valid], rewards[valid], next_obs[valid], terminated[valid])
        finished = tracker.record(rewards, terminated, truncated, valid)
        tracker.start(previous_done, info["distance"])
        previous_done = terminated | truncated
        obs = next_obs

        if global_step > config.learning_starts and iteration % config.train_frequency == 0:
            batch_obs, batch_actions, batch_rewards, batch_next_obs, batch_terminated = (
                torch.as_tensor(array, device=device) for array in buffer.sample(config.batch_size)
            )
            with torch.no_grad():
                next_values = target_network(batch_next_obs).max(dim=1).values
                # Bootstrap through truncation: only termination cuts the return.
                targets = batch_rewards + config.gamma * next_values * (1.0 - batch_terminated)
            values = q_network(batch_obs).gather(1, batch_actions[:, None]).squeeze(1)
            loss = loss_function(values, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            updates += 1
            losses.append(loss.item())
            if updates % config.target_update == 0:
                target_network.load_state_dict(q_network.state_dict())
            if not np.isfinite(losses[-1]):
                prune(trial, f"non-finite loss {losses[-1]} at step {global_step}")

        progress.update(config.num_envs, ret=finished[-1] if finished else float("nan"), eps=epsilon)
        if next_eval is not None and global_step >= next_eval and iteration + 1 < config.num_iterations:
            next_eval += config.eval_every
            history.append(evaluate_and_report(act, config, tracker, global_step, start, losses, trial))
            if config.stop_when_solved and is_solved(history[-1]):
                break
    progress.close()
    envs.close()
    evaluation = evaluate_greedy(act, params)
    history.append(history_row(evaluation, tracker, global_step, start, losses, config.epsilon(global_step)))
    return TrainResult(
        arm=ARM,
        config=config,
        evaluation=evaluation,
        rolling_reward=tracker.summary()["rolling_reward"],
        wall_seconds=time.perf_counter() - start,
        env_steps=global_step,
        updates=updates,
        history=history,
        model=q_network,
        losses=losses,
    )


def save_model(result: TrainResult, path: str) -> None:
    """Writes the network's ``state_dict`` and the config (plain types) with ``torch.save``."""
    torch.save({"arm": ARM, "config": result.config.to_dict(), "state_dict": result.model.state_dict()}, path)


def load_model(path: str, device: str = "cpu") -> tuple[QNetwork, DQNConfig]:
    """Reads a file of :func:`save_model` with ``weights_only=True`` (no pickled code runs)."""
    saved = torch.load(path, map_location=device, weights_only=True)
    if not isinstance(saved, dict) or saved.get("arm") != ARM:
        raise ValueError(f"{path!r} is not a torch DQN model written by dqn_torch.save_model")
    config = DQNConfig.from_dict(saved["config"])
    network = QNetwork(config.params.num_cells, config.hidden_sizes)
    network.load_state_dict(saved["state_dict"])
    return network.to(device).eval(), config


def main(argv: list[str] | None = None) -> int:
    return run_cli(train, ARM, argv)


if __name__ == "__main__":
    raise SystemExit(main())
