"""Seeds trained together stop on their own: a stopped seed's learner, envs and figures stay as they are."""

import numpy as np
from stacks import needs

from doors_gym_baselines.config import DQNConfig

SMALL = dict(
    total_steps=1_600, num_envs=8, learning_starts=400, batch_size=16, buffer_size=800, hidden_sizes=(16,),
    eval_every=0, quiet=True,
)  # fmt: skip


def leaves(tree, index):
    """Every leaf of ``tree`` (stacked over seeds) at seed ``index``, as NumPy arrays."""
    import jax

    return [np.asarray(leaf)[index] for leaf in jax.tree.leaves(tree)]


def test_a_frozen_seed_stops_changing_while_the_others_train():
    jax = needs("jax")
    from doors_gym_baselines.learners.dqn_flax_scan import make_train

    parts = make_train(DQNConfig.of(num_seeds=2, **SMALL))
    runner = jax.jit(jax.vmap(parts.init))(jax.vmap(jax.random.key)(np.arange(2)))
    chunk = jax.jit(jax.vmap(parts.run_chunk, in_axes=(0, None)))
    half = parts.iterations_per_chunk * 10  # past learning_starts: both seeds are learning
    for first in range(0, half, parts.iterations_per_chunk):
        runner, _ = chunk(runner, np.int32(first))
    runner = runner._replace(frozen=np.array([True, False]))
    before = jax.tree.map(np.asarray, (runner.learner, runner.env_state, runner.episodes))
    for first in range(half, 2 * half, parts.iterations_per_chunk):
        runner, _ = chunk(runner, np.int32(first))
    after = (runner.learner, runner.env_state, runner.episodes)
    for old, new in zip(leaves(before, 0), leaves(after, 0)):
        np.testing.assert_array_equal(old, new)
    changed = [not np.array_equal(old, new) for old, new in zip(leaves(before, 1), leaves(after, 1))]
    assert any(changed)
    assert int(runner.learner.updates[1]) > int(runner.learner.updates[0]) > 0


def test_a_lone_seed_trains_as_the_first_of_two_unfrozen_seeds():
    """Freezing is compiled only where seeds share a program; unfrozen, a seed computes what it does alone."""
    jax = needs("jax")
    from doors_gym_baselines.learners.dqn_flax_scan import make_train

    alone = make_train(DQNConfig.of(num_seeds=1, **SMALL))
    together = make_train(DQNConfig.of(num_seeds=2, **SMALL))
    one, _ = jax.jit(alone.train)(jax.random.key(3))
    both, _ = jax.jit(jax.vmap(together.train))(jax.vmap(jax.random.key)(np.array([3, 4])))
    for mine, shared in zip(jax.tree.leaves(one.learner.params), leaves(both.learner.params, 0)):
        np.testing.assert_allclose(np.asarray(mine), shared, rtol=1e-4, atol=1e-5)


def test_seeds_solved_through_their_window_freeze_and_keep_their_figures(monkeypatch):
    """The driver freezes a seed once it is solved through its hold-out window; its later rows repeat its figures."""
    needs("jax")
    from doors_gym_baselines.learners import scan_driver
    from doors_gym_baselines.learners.dqn_flax_scan import train

    solved_seed = {"index": 0}
    original = scan_driver.solved_since

    def first_seed_only(history, hold_out_steps=0, seed=None):
        if seed == solved_seed["index"] and len(history) >= 2:
            return history[-2]
        return None if seed is not None else original(history, hold_out_steps, seed)

    monkeypatch.setattr(scan_driver, "solved_since", first_seed_only)
    config = DQNConfig.of(num_seeds=2, **{**SMALL, "eval_every": 400, "total_steps": 3_200, "stop_when_solved": True})
    result = train(config)
    rows = [row.per_seed for row in result.history]
    assert len(rows) >= 4
    frozen_from = 1  # the second evaluation froze seed 0: every later row repeats it
    for later in rows[frozen_from + 1 :]:
        assert later[0] == rows[frozen_from][0]
    assert len({row[1].rolling_reward for row in rows}) > 1
