"""DQN's hyperparameters: the algorithm's knobs, the fields a tuning study searches and a preset fixes.

Every field is checked on construction: a bad value raises ``ValueError`` naming the field, the value and the
allowed range. Field docs (``metadata["help"]``) are the flags' help lines.
"""

from __future__ import annotations

import dataclasses
import math

from .fields import check_at_least, check_choices, check_fraction, field, field_names

OPTIMIZERS = ("adam", "sgd")
LOSSES = ("huber", "mse")
ALGORITHMS = ("dqn", "pqn")
"""``dqn``: a replay buffer and a target network (every DQN arm); ``pqn``: Q(lambda) over parallel envs' rollouts,
no replay, no target network (Gallici et al. 2025; the fully jitted arm)."""
UNUSED_BY = {
    "dqn": ("td_lambda", "rollout_steps", "epochs", "minibatches"),
    "pqn": (
        "buffer_size", "batch_size", "train_frequency", "gradient_steps", "target_update", "tau", "learning_starts",
        "double_dqn", "n_step",
    ),
}  # fmt: skip
"""The fields each algorithm leaves unused: they change nothing a run of it computes (so not its outcome either)."""
LAYER_NORM_EPSILON = 1e-5  # both networks' LayerNorm (``layer_norm``): torch's default, set in Flax's too


@dataclasses.dataclass(frozen=True)
class Hyperparameters:
    """The DQN algorithm's knobs: what a preset fixes and a tuning study searches."""

    learning_rate: float = field(1e-3, "optimizer step size")
    optimizer: str = field("adam", "gradient optimizer", choices=OPTIMIZERS)
    loss: str = field("huber", "TD loss", choices=LOSSES)
    buffer_size: int = field(50_000, "replay buffer capacity, in transitions")
    batch_size: int = field(128, "transitions per gradient update")
    gamma: float = field(0.95, "discount factor")
    num_envs: int = field(16, "parallel envs; their actions come from one batched forward pass")
    train_frequency: int = field(1, "vector steps between gradient updates")
    gradient_steps: int = field(
        1, "gradient updates at each training vector step (every train_frequency vector steps), each on its own batch"
    )
    target_update: int = field(250, "gradient updates between updates of the target network")
    tau: float = field(
        1.0, "at each target update, target <- tau * online + (1 - tau) * target (1: a copy; < 1: Polyak averaging)"
    )
    double_dqn: bool = field(False, "Double DQN: the online network picks the next action, the target values it")
    lr_end_fraction: float = field(
        1.0, "learning rate at the end of its decay, as a fraction of learning_rate (linear decay; 1: constant)"
    )
    lr_decay_fraction: float = field(
        1.0, "share of the run's updates over which the learning rate decays, then stays at its end (1: all of them)"
    )
    max_grad_norm: float = field(0.0, "clip the gradients' global norm to this (0: no clipping)")
    learning_starts: int = field(5_000, "env steps before the first update")
    start_epsilon: float = field(1.0, "exploration rate at the start")
    end_epsilon: float = field(0.01, "exploration rate after the decay")
    exploration_fraction: float = field(0.3, "share of total_steps over which epsilon decays linearly")
    hidden_sizes: tuple[int, ...] = field((128, 128), "widths of the hidden layers")
    relative_inputs: bool = field(
        False,
        "the network also reads the agent's row and column, and the goal's and each door's column relative to the "
        "agent's (one input each, where the cell planes give them only as relations learned cell by cell)",
    )
    cell_planes: bool = field(
        True,
        "the first layer reads the agent's and the goal's one-hot cell planes (2 * H * W rows); False: the relative "
        "inputs alone say where they are (needs relative_inputs), so the first layer, its gradient, optimizer state "
        "and target copy grow with the grid's side, not its area",
    )
    dueling: bool = field(
        False,
        "dueling heads: Q = V + A - mean(A), a state value and the actions' advantages from the last hidden layer "
        "(Wang et al. 2016; where the shaping reward leaves the actions' values close together)",
    )
    layer_norm: bool = field(
        False,
        "LayerNorm (a learned scale and offset) on every hidden layer, before its ReLU: bounds the features' scale, "
        "which steadies TD learning on near-greedy data (Gallici et al. 2024, PQN)",
    )
    n_step: int = field(
        1, "multi-step returns: the TD target sums up to n_step discounted rewards of one episode (1: one-step DQN)"
    )
    step_cost: float = field(
        0.0,
        "a training-only cost per step, taken off the reward the learner stores (the env's reward, the rolling reward "
        "and evaluation are untouched): waiting, or pushing into an edge, then costs more than (1 - gamma) of a "
        "state's value (0: off)",
    )
    advantage_learning: float = field(
        0.0,
        "advantage learning (Bellemare et al. 2016): the TD target takes off this share of how far the taken action's "
        "value falls below the state's best, both under the target network, which widens the gaps between actions' "
        "values (1 / (1 - share) times at its fixed point) where they are small beside the values' errors "
        "(0: off; below 1)",
    )
    restart_prob: float = field(
        0.0,
        "exploring starts: the probability that a training episode starts with the agent anywhere (env reset "
        "option start='anywhere'); such episodes stay out of the rolling reward (0: off, every start as the env's)",
    )
    restart_fraction: float = field(
        0.5, "share of total_steps over which restart_prob decays linearly to 0 (exploring starts only)"
    )
    algorithm: str = field(
        "dqn",
        "dqn: replay and a target network; pqn: Q(lambda) returns over each rollout of the parallel envs, no replay "
        "and no target network (PQN, Gallici et al. 2025; every DQN arm); pqn leaves "
        f"{', '.join(UNUSED_BY['pqn'][:-1])} and {UNUSED_BY['pqn'][-1]} unused, and takes advantage_learning 0",
        choices=ALGORITHMS,
    )
    td_lambda: float = field(
        0.65, "pqn: lambda of the Q(lambda) returns (0: one-step targets; 1: the rollout's returns to its end)"
    )
    rollout_steps: int = field(32, "pqn: vector steps of every env between two learning phases")
    epochs: int = field(2, "pqn: passes over each rollout's transitions")
    minibatches: int = field(4, "pqn: minibatches per pass (each rollout_steps * num_envs / minibatches transitions)")

    def __post_init__(self) -> None:
        check_choices(self)
        for name in (
            "num_envs", "buffer_size", "batch_size", "train_frequency", "gradient_steps", "target_update", "n_step"
        ):
            check_at_least(name, getattr(self, name), 1)
        check_at_least("learning_starts", self.learning_starts, 0)
        if not (
            isinstance(self.learning_rate, (int, float))
            and math.isfinite(self.learning_rate)
            and self.learning_rate > 0
        ):
            raise ValueError(f"learning_rate={self.learning_rate!r} is out of range: expected a finite number > 0")
        if self.batch_size > self.buffer_size:
            raise ValueError(
                f"batch_size={self.batch_size} is larger than buffer_size={self.buffer_size}: "
                "expected batch_size <= buffer_size"
            )
        for name in (
            "gamma", "start_epsilon", "end_epsilon", "exploration_fraction", "lr_end_fraction", "restart_prob"
        ):
            check_fraction(name, getattr(self, name))
        for name in ("tau", "lr_decay_fraction", "restart_fraction"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 < value <= 1.0):
                raise ValueError(f"{name}={value!r} is out of range: expected a number in (0, 1]")
        share = self.advantage_learning
        if isinstance(share, bool) or not (isinstance(share, (int, float)) and 0.0 <= share < 1.0):
            raise ValueError(f"advantage_learning={share!r} is out of range: expected a number in [0, 1) (0: off)")
        cost = self.step_cost
        if isinstance(cost, bool) or not (isinstance(cost, (int, float)) and 0.0 <= cost <= 1.0):
            raise ValueError(f"step_cost={cost!r} is out of range: expected a number in [0, 1] (0: off)")
        norm = self.max_grad_norm
        if isinstance(norm, bool) or not (isinstance(norm, (int, float)) and math.isfinite(norm) and norm >= 0):
            raise ValueError(f"max_grad_norm={norm!r} is out of range: expected a finite number >= 0 (0: no clipping)")
        for name in ("double_dqn", "relative_inputs", "cell_planes", "dueling", "layer_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} is invalid: expected True or False")
        if not self.cell_planes and not self.relative_inputs:
            raise ValueError(
                "cell_planes=False needs relative_inputs=True: without the cell planes only the relative inputs say "
                "where the agent and the goal are"
            )
        self._check_pqn()
        sizes = self.hidden_sizes
        if not sizes or any(isinstance(width, bool) or not isinstance(width, int) or width < 1 for width in sizes):
            raise ValueError(f"hidden_sizes={sizes!r} is invalid: expected one or more integers >= 1")

    def _check_pqn(self) -> None:
        if self.algorithm == "pqn" and self.advantage_learning > 0:
            raise ValueError(
                f"advantage_learning={self.advantage_learning!r} with algorithm='pqn': PQN's returns take no "
                "advantage-learning term (expected 0)"
            )
        for name in ("rollout_steps", "epochs", "minibatches"):
            check_at_least(name, getattr(self, name), 1)
        check_fraction("td_lambda", self.td_lambda)
        samples = self.rollout_steps * self.num_envs
        if samples % self.minibatches:
            raise ValueError(
                f"minibatches={self.minibatches} does not divide rollout_steps * num_envs = {samples}: expected a "
                "divisor of it"
            )

    @property
    def unused_fields(self) -> tuple[str, ...]:
        """The fields this algorithm leaves unused (:data:`UNUSED_BY`)."""
        return UNUSED_BY[self.algorithm]

    def describe(self) -> str:
        """The hyperparameters in their natural units, in one line for people (the field names are in the files)."""
        decay = "" if self.lr_end_fraction >= 1.0 else f", decaying to {self.lr_end_fraction:.0%}"
        if decay and self.lr_decay_fraction < 1.0:
            decay += f" over the first {self.lr_decay_fraction:.0%} of the updates"
        target = "copy" if self.tau >= 1.0 else f"tau {self.tau:.2g}"
        dqn = self.algorithm == "dqn"  # PQN has no target network, one-step bootstrap or advantage learning
        extras = ["double DQN"] if self.double_dqn and dqn else []
        if self.max_grad_norm > 0:
            extras.append(f"gradient norm clipped at {self.max_grad_norm:g}")
        if self.relative_inputs:
            extras.append("relative inputs" if self.cell_planes else "relative inputs alone (no cell planes)")
        if self.dueling:
            extras.append("dueling heads")
        if self.layer_norm:
            extras.append("layer norm")
        if self.step_cost > 0:
            extras.append(f"step cost {self.step_cost:g} in training")
        if self.n_step > 1 and dqn:
            extras.append(f"{self.n_step}-step returns")
        if self.advantage_learning > 0 and dqn:
            extras.append(f"advantage learning {self.advantage_learning:g}")
        if self.restart_prob > 0:
            extras.append(
                f"starts anywhere {self.restart_prob:.0%} of episodes, to none at {self.restart_fraction:.0%} of the budget"
            )
        if self.algorithm == "pqn":
            learning = [
                f"PQN: Q({self.td_lambda:g}) over rollouts of {self.rollout_steps} steps of {self.num_envs} envs",
                f"{self.epochs} epochs of {self.minibatches} minibatches",
            ]
        else:
            learning = [
                f"batch {self.batch_size}",
                f"buffer {self.buffer_size}",
                f"{self.num_envs} envs",
                f"update every {self.train_frequency} step{'s' if self.train_frequency > 1 else ''}"
                + (f" ({self.gradient_steps} updates)" if self.gradient_steps > 1 else ""),
                f"target every {self.target_update} ({target})",
                f"learns from step {self.learning_starts}",
            ]
        return ", ".join(
            [
                f"lr {self.learning_rate:.2g} {self.optimizer}{decay}",
                f"gamma {self.gamma:.3g}",
                f"net {'x'.join(map(str, self.hidden_sizes))}",
                *learning,
                f"explore {self.exploration_fraction:.0%} of the budget",
                *extras,
            ]
        )


HYPERPARAMETER_NAMES = field_names(Hyperparameters)
"""DQN's hyperparameters' names."""
