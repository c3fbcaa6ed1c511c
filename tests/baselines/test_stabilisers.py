"""Every arm takes the plain reference update: the same loss and the same parameters, step by step, on fixed
batches, with every stabiliser (Double DQN, Polyak target averaging, learning-rate decay, gradient clipping,
advantage learning).

The reference is DQN written the plainest way (a dense ``nn.Linear`` over the one-hot agent and goal planes,
torch's single-tensor optimizer, the target copied with ``load_state_dict`` or averaged parameter by
parameter): what each arm's engineering (rows of the first layer, cells found once, fused optimizers,
compiled and jitted steps, the target update inside the step) must leave unchanged, to float tolerance.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from stacks import needs

torch = needs("torch")
jax = needs("jax")
needs("flax")

from doors_gym_baselines.learners.cells import planes  # noqa: E402
from doors_gym_baselines.config import DQNConfig  # noqa: E402
from doors_gym_baselines.learners.dqn_flax import FlaxLearner, LearnerState, make_optimizer  # noqa: E402
from doors_gym_baselines.learners.dqn_torch import TorchLearner  # noqa: E402

BATCH = 64
UPDATES = 5
NUM_CELLS = 225
SMALL = dict(
    batch_size=BATCH, buffer_size=1_000, num_envs=16, learning_starts=0, total_steps=16 * UPDATES,
    hidden_sizes=(32, 32), target_update=2, seed=3,
)  # fmt: skip
STABILISERS = {
    "plain adam": {"learning_rate": 1e-2},
    "double DQN": {"double_dqn": True, "learning_rate": 1e-2},
    "Polyak": {"tau": 0.3},
    "lr decay, adam": {"lr_end_fraction": 0.1, "learning_rate": 1e-2},
    "lr decay, sgd": {"lr_end_fraction": 0.0, "learning_rate": 0.5, "optimizer": "sgd"},
    "lr decay ending early": {"lr_end_fraction": 0.1, "lr_decay_fraction": 0.5, "learning_rate": 1e-2},
    "clipping": {"max_grad_norm": 0.05},
    "mse": {"loss": "mse", "learning_rate": 1e-2},
    "advantage learning": {"advantage_learning": 0.5, "learning_rate": 1e-2},
    # With SGD: Adam's steps on near-zero gradients magnify float noise past any fair tolerance.
    "all": {
        "double_dqn": True,
        "tau": 0.5,
        "lr_end_fraction": 0.2,
        "max_grad_norm": 0.1,
        "advantage_learning": 0.5,
        "learning_rate": 0.5,
        "optimizer": "sgd",
    },
}
ARMS = ["torch", "torch-compile", "flax", "flax-scan"]


class Reference:
    """DQN's update written plainly: a dense MLP over the one-hot planes, torch's single-tensor optimizer."""

    def __init__(self, config: DQNConfig) -> None:
        hyper = config.hyperparameters
        torch.manual_seed(0)
        widths = [2 * NUM_CELLS, *hyper.hidden_sizes]
        layers: list[torch.nn.Module] = []
        for inputs, outputs in zip(widths, widths[1:]):
            layers += [torch.nn.Linear(inputs, outputs), torch.nn.ReLU()]
        self.network = torch.nn.Sequential(*layers, torch.nn.Linear(widths[-1], 5))
        self.target = copy.deepcopy(self.network)
        optimizer = torch.optim.Adam if hyper.optimizer == "adam" else torch.optim.SGD
        self.optimizer = optimizer(self.network.parameters(), lr=hyper.learning_rate, foreach=False)
        span = max(1, round(hyper.lr_decay_fraction * (config.num_updates - 1)))
        drop = 1.0 - hyper.lr_end_fraction
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda k: 1.0 - drop * min(1.0, k / span))
        self.hyper = hyper
        self.updates = 0

    def update(self, batch) -> float:
        cells, actions, rewards, next_cells, terminated, *multi_step = batch
        hyper = self.hyper
        # A multi-step batch: each return's summed rewards, then its discount (gamma ** steps taken).
        discounts = torch.as_tensor(multi_step[0]) if multi_step else hyper.gamma
        obs, next_obs = (torch.as_tensor(planes(c, NUM_CELLS)) for c in (cells, next_cells))
        actions, rewards, terminated = (torch.as_tensor(a) for a in (actions, rewards, terminated))
        with torch.no_grad():
            next_q = self.target(next_obs)
            if hyper.double_dqn:
                next_values = next_q.gather(1, self.network(next_obs).argmax(1, keepdim=True)).squeeze(1)
            else:
                next_values = next_q.max(1).values
            targets = rewards + discounts * next_values * (1 - terminated)
            # Advantage learning: less the share of how far the taken action falls below the best, under the target.
            q = self.target(obs)
            targets -= hyper.advantage_learning * (q.max(1).values - q.gather(1, actions[:, None]).squeeze(1))
        values = self.network(obs).gather(1, actions[:, None]).squeeze(1)
        loss_function = torch.nn.functional.smooth_l1_loss if hyper.loss == "huber" else torch.nn.functional.mse_loss
        loss = loss_function(values, targets)
        self.optimizer.zero_grad()
        loss.backward()
        if hyper.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), hyper.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.updates += 1
        if self.updates % hyper.target_update == 0:
            with torch.no_grad():
                for target, online in zip(self.target.parameters(), self.network.parameters()):
                    target.copy_(hyper.tau * online + (1 - hyper.tau) * target)
        return loss.item()

    def linears(self, network: torch.nn.Module) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(weight (out, in), bias)`` of each linear layer, first to last."""
        return [
            (layer.weight.detach().numpy().copy(), layer.bias.detach().numpy().copy())
            for layer in network
            if isinstance(layer, torch.nn.Linear)
        ]


def torch_linears(network) -> list[tuple[np.ndarray, np.ndarray]]:
    first = (network.planes_weight.detach().numpy().T, network.planes_bias.detach().numpy())
    rest = [(m.weight.detach().numpy(), m.bias.detach().numpy()) for m in network.network if hasattr(m, "weight")]
    return [first, *rest]


def load_torch(network, linears) -> None:
    with torch.no_grad():
        (weight, bias), *rest = linears
        network.planes_weight.copy_(torch.as_tensor(weight.T))
        network.planes_bias.copy_(torch.as_tensor(bias))
        for module, (weight, bias) in zip([m for m in network.network if hasattr(m, "weight")], rest):
            module.weight.copy_(torch.as_tensor(weight))
            module.bias.copy_(torch.as_tensor(bias))


def flax_tree(linears) -> dict:
    (weight, bias), *rest = linears
    tree = {"planes_kernel": weight.T.copy(), "planes_bias": bias.copy()}
    for index, (weight, bias) in enumerate(rest):
        tree[f"Dense_{index}"] = {"kernel": weight.T.copy(), "bias": bias.copy()}
    return {"params": tree}


def flax_linears(tree) -> list[tuple[np.ndarray, np.ndarray]]:
    params = jax.device_get(tree)["params"]
    dense = sorted((name for name in params if name.startswith("Dense_")), key=lambda name: int(name[6:]))
    return [
        (np.asarray(params["planes_kernel"]).T, np.asarray(params["planes_bias"])),
        *((np.asarray(params[name]["kernel"]).T, np.asarray(params[name]["bias"])) for name in dense),
    ]


class ArmUnderTest:
    """One arm's learning step, started from the reference's network; ``online()``/``target()`` read it back."""

    def __init__(self, arm: str, config: DQNConfig, start) -> None:
        self.arm = arm
        if arm in ("torch", "torch-compile"):
            if arm == "torch":
                self.learner = TorchLearner(config)
            else:
                from doors_gym_baselines.learners.dqn_torch_compile import CompiledTorchLearner

                self.learner = CompiledTorchLearner(config)
            load_torch(self.learner.network, start)
            load_torch(self.learner.target_network, start)
            return
        params = jax.tree.map(jax.numpy.asarray, flax_tree(start))
        target = jax.tree.map(jax.numpy.copy, params)
        state = LearnerState(params, target, make_optimizer(config).init(params), jax.numpy.int32(0))
        if arm == "flax":
            self.learner = FlaxLearner(config)
            self.learner.state = state
            return
        from doors_gym_baselines.learners.dqn_flax_scan import make_train
        from doors_gym_baselines.learners.scan_profile import phase_functions

        runner = make_train(config).init(jax.random.key(0))
        self.runner = runner._replace(learner=state)
        self.learn = jax.jit(phase_functions(config).learn)

    def update(self, batch) -> float:
        if self.arm == "flax-scan":
            self.runner, loss = self.learn(self.runner, batch)
            return float(loss)
        return float(self.learner.read_losses([self.learner.update(batch)])[0])

    def linears(self, which: str) -> list[tuple[np.ndarray, np.ndarray]]:
        if self.arm.startswith("torch"):
            return torch_linears(self.learner.network if which == "online" else self.learner.target_network)
        state = self.runner.learner if self.arm == "flax-scan" else self.learner.state
        return flax_linears(state.params if which == "online" else state.target_params)


def assert_same_linears(got, want, rtol=1e-3, atol=2e-5) -> None:
    assert len(got) == len(want)
    for (weight, bias), (want_weight, want_bias) in zip(got, want):
        np.testing.assert_allclose(weight, want_weight, rtol=rtol, atol=atol)
        np.testing.assert_allclose(bias, want_bias, rtol=rtol, atol=atol)


# Compiling per setting is slow: torch.compile is held to two settings, every other arm to all of them.
CASES = [
    pytest.param(STABILISERS[name], arm, id=f"{name}-{arm}")
    for name in STABILISERS
    for arm in ARMS
    if arm != "torch-compile" or name in ("plain adam", "all")
]


@pytest.mark.parametrize(("stabiliser", "arm"), CASES)
def test_every_arm_takes_the_reference_update(stabiliser, arm, fixed_batch):
    config = DQNConfig.of(**SMALL, **stabiliser)
    assert config.num_updates == UPDATES
    reference = Reference(config)
    under_test = ArmUnderTest(arm, config, reference.linears(reference.network))
    for step in range(UPDATES):
        batch = fixed_batch(size=BATCH, seed=step)
        want = reference.update(batch)
        assert under_test.update(batch) == pytest.approx(want, rel=1e-4, abs=1e-6), step
        assert_same_linears(under_test.linears("online"), reference.linears(reference.network))
        assert_same_linears(under_test.linears("target"), reference.linears(reference.target))
    # The setting changes the training: plain steps from the same start end elsewhere.
    if stabiliser != STABILISERS["plain adam"]:
        same = {name: value for name, value in stabiliser.items() if name in ("learning_rate", "optimizer")}
        plain = Reference(DQNConfig.of(**SMALL, **same))
        for step in range(UPDATES):
            plain.update(fixed_batch(size=BATCH, seed=step))
        ours, theirs = reference.linears(reference.network), plain.linears(plain.network)
        assert any(not np.allclose(a, b, rtol=1e-4, atol=1e-6) for (a, _), (b, _) in zip(ours, theirs))


@pytest.mark.parametrize("arm", ARMS)
def test_every_arm_takes_the_reference_multi_step_update(arm, fixed_batch):
    """``n_step > 1``: a batch brings each return's discount; every learner's target is the reference's."""
    # SGD, as the "all" case: Adam's steps on near-zero gradients magnify float noise past any fair tolerance.
    config = DQNConfig.of(**SMALL, n_step=3, learning_rate=0.5, optimizer="sgd", gamma=0.9)
    reference = Reference(config)
    under_test = ArmUnderTest(arm, config, reference.linears(reference.network))
    for step in range(UPDATES):
        steps_taken = np.random.default_rng(step).integers(1, 4, BATCH)
        batch = (*fixed_batch(size=BATCH, seed=step), (0.9**steps_taken).astype(np.float32))
        want = reference.update(batch)
        assert under_test.update(batch) == pytest.approx(want, rel=1e-4, abs=1e-6), step
        assert_same_linears(under_test.linears("online"), reference.linears(reference.network))
    # The discounts are read: the one-step update (gamma for every return) ends elsewhere.
    one_step = Reference(DQNConfig.of(**SMALL, learning_rate=0.5, optimizer="sgd", gamma=0.9))
    for step in range(UPDATES):
        one_step.update(fixed_batch(size=BATCH, seed=step))
    ours, theirs = reference.linears(reference.network), one_step.linears(one_step.network)
    assert any(not np.allclose(a, b, rtol=1e-4, atol=1e-6) for (a, _), (b, _) in zip(ours, theirs))


@pytest.mark.parametrize(
    ("decay_fraction", "want"),
    [
        (1.0, np.linspace(1e-2, 2.5e-3, UPDATES)),  # to its end at the last update
        (0.5, [1e-2, 6.25e-3, 2.5e-3, 2.5e-3, 2.5e-3]),  # over half the span, then held
    ],
)
def test_the_learning_rate_decays_linearly_to_its_end_fraction_then_holds(fixed_batch, decay_fraction, want):
    config = DQNConfig.of(**SMALL, lr_end_fraction=0.25, lr_decay_fraction=decay_fraction, learning_rate=1e-2)
    learner = TorchLearner(config)
    rates = []
    for step in range(config.num_updates):
        rates.append(float(learner.optimizer.param_groups[0]["lr"]))
        learner.update(fixed_batch(size=BATCH, seed=step))
    np.testing.assert_allclose(rates, want, rtol=1e-6)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tau", 0.0), ("tau", 1.5), ("lr_end_fraction", -0.1), ("lr_decay_fraction", 0.0), ("lr_decay_fraction", 1.2),
        ("max_grad_norm", -1.0), ("max_grad_norm", float("nan")), ("advantage_learning", 1.0),
        ("advantage_learning", -0.1), ("advantage_learning", True),
    ],  # fmt: skip
)
def test_bad_stabiliser_values_name_the_field_and_the_range(field, value):
    with pytest.raises(ValueError, match=rf"{field}=.* is out of range: expected"):
        DQNConfig.of(**{field: value})


def test_the_jitted_arm_trains_with_every_stabiliser():
    from doors_gym_baselines.arms import get_arm

    small = dict(
        total_steps=4_000, learning_starts=500, num_envs=8, batch_size=32, buffer_size=2_000, hidden_sizes=(32,),
        target_update=5, eval_every=0, quiet=True, profile=False, seed=1,
    )  # fmt: skip
    stabilised = DQNConfig.of(**small, double_dqn=True, tau=0.3, lr_end_fraction=0.0, max_grad_norm=0.5)
    runs = [get_arm("flax-scan").train(config) for config in (stabilised, DQNConfig.of(**small))]
    assert all(len(run.losses) == stabilised.num_updates and np.isfinite(run.losses).all() for run in runs)
    assert runs[0].losses[0] == pytest.approx(runs[1].losses[0], rel=1e-6)  # the same start
    assert not np.allclose(runs[0].losses, runs[1].losses)
