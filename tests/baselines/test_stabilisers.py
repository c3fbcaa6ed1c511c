"""Stabilisers with one meaning in every framework: Double DQN, Polyak target averaging, learning-rate decay and
gradient clipping give torch and Flax the same loss and the same update from the same network on fixed batches."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
pytest.importorskip("flax")

from doors_gym_baselines.config import DQNConfig  # noqa: E402
from doors_gym_baselines.dqn_flax import FlaxLearner, LearnerState, make_optimizer  # noqa: E402
from doors_gym_baselines.dqn_torch import TorchLearner  # noqa: E402

BATCH = 64
UPDATES = 5
SMALL = dict(
    batch_size=BATCH, buffer_size=1_000, num_envs=16, learning_starts=0, total_steps=16 * UPDATES,
    hidden_sizes=(32, 32), target_update=2, seed=3,
)  # fmt: skip
STABILISERS = {
    "double DQN": {"double_dqn": True, "learning_rate": 1e-2},
    "Polyak": {"tau": 0.3},
    "lr decay, adam": {"lr_end_fraction": 0.1, "learning_rate": 1e-2},
    "lr decay, sgd": {"lr_end_fraction": 0.0, "learning_rate": 0.5, "optimizer": "sgd"},
    "clipping": {"max_grad_norm": 0.05},
    # With SGD: Adam's steps on near-zero gradients magnify float noise past any fair tolerance.
    "all": {
        "double_dqn": True,
        "tau": 0.5,
        "lr_end_fraction": 0.2,
        "max_grad_norm": 0.1,
        "learning_rate": 0.5,
        "optimizer": "sgd",
    },
}


def as_flax(network: torch.nn.Module) -> dict:
    """The torch ``QNetwork``'s parameters in the Flax ``QNetwork``'s tree (kernels are transposed weights)."""
    weights = {name: value.detach().numpy().copy() for name, value in network.state_dict().items()}
    tree = {"planes_kernel": weights["planes.weight"].T, "planes_bias": weights["planes.bias"]}
    linears = sorted(
        {name.rsplit(".", 1)[0] for name in weights if name.startswith("network.")}, key=lambda n: int(n.split(".")[1])
    )
    for index, name in enumerate(linears):
        tree[f"Dense_{index}"] = {"kernel": weights[f"{name}.weight"].T, "bias": weights[f"{name}.bias"]}
    return {"params": tree}


def assert_same_tree(flax_tree, torch_network, rtol=1e-3, atol=2e-5):
    expected = as_flax(torch_network)
    assert jax.tree.structure(flax_tree) == jax.tree.structure(expected)
    for got, want in zip(jax.tree.leaves(flax_tree), jax.tree.leaves(expected)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


def train_both(config: DQNConfig, fixed_batch) -> tuple[TorchLearner, FlaxLearner, list[tuple[float, float]]]:
    """Both learners from the torch learner's initial network, through the same updates and target syncs."""
    torch_learner, flax_learner = TorchLearner(config), FlaxLearner(config)
    params = as_flax(torch_learner.network)
    flax_learner.state = LearnerState(params, params, make_optimizer(config).init(params))
    losses = []
    for step in range(config.num_updates):
        batch = fixed_batch(size=BATCH, seed=step)
        losses.append((torch_learner.update(batch), flax_learner.update(batch)))
        if (step + 1) % config.hyperparameters.target_update == 0:
            torch_learner.sync_target()
            flax_learner.sync_target()
    return torch_learner, flax_learner, losses


@pytest.mark.parametrize("stabiliser", list(STABILISERS.values()), ids=list(STABILISERS))
def test_torch_and_flax_take_the_same_steps(stabiliser, fixed_batch):
    config = DQNConfig.of(**SMALL, **stabiliser)
    assert config.num_updates == UPDATES
    torch_learner, flax_learner, losses = train_both(config, fixed_batch)
    for torch_loss, flax_loss in losses:
        assert flax_loss == pytest.approx(torch_loss, rel=1e-4, abs=1e-6)
    assert_same_tree(flax_learner.state.params, torch_learner.network)
    assert_same_tree(flax_learner.state.target_params, torch_learner.target_network)
    # The stabiliser changes the training: without it, the same steps end elsewhere.
    plain = {name: value for name, value in stabiliser.items() if name in ("learning_rate", "optimizer")}
    plain_torch, _, _ = train_both(DQNConfig.of(**SMALL, **plain), fixed_batch)
    ours = [*torch_learner.network.parameters(), *torch_learner.target_network.parameters()]
    theirs = [*plain_torch.network.parameters(), *plain_torch.target_network.parameters()]
    assert any(not torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(ours, theirs))


def test_the_learning_rate_decays_linearly_to_its_end_fraction_at_the_last_update(fixed_batch):
    config = DQNConfig.of(**SMALL, lr_end_fraction=0.25, learning_rate=1e-2)
    learner = TorchLearner(config)
    rates = []
    for step in range(config.num_updates):
        rates.append(float(learner.optimizer.param_groups[0]["lr"]))
        learner.update(fixed_batch(size=BATCH, seed=step))
    np.testing.assert_allclose(rates, np.linspace(1e-2, 2.5e-3, UPDATES), rtol=1e-6)


def test_polyak_moves_the_target_tau_of_the_way(fixed_batch):
    config = DQNConfig.of(**SMALL, tau=0.25)
    learner = TorchLearner(config)
    before = [p.detach().clone() for p in learner.target_network.parameters()]
    learner.update(fixed_batch(size=BATCH, seed=0))
    learner.sync_target()
    for old, online, new in zip(before, learner.network.parameters(), learner.target_network.parameters()):
        torch.testing.assert_close(new, 0.75 * old + 0.25 * online.detach())


@pytest.mark.parametrize(
    ("field", "value"),
    [("tau", 0.0), ("tau", 1.5), ("lr_end_fraction", -0.1), ("max_grad_norm", -1.0), ("max_grad_norm", float("nan"))],
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
