"""Milliseconds per update of every arm's learner, before and after a change, side by side in one run.

Run from the repository root, with nothing else running::

    python benchmarks/before_after.py --before 7451563      # a git revision of this repository

It checks the revision out in a temporary git worktree and, for every arm, times the arm's own learning
step in a fresh process of each tree in turn (before, after, before, ... for ``--rounds`` rounds; the
median), on the same fixed replay batch in each tree's own format (grids before the cells existed, the
cells after). Both trees run at width 128 x 128, batch 128, as their own code sets threads (the torch
arms' thread policy is part of what changed). The fully jitted arm is timed as its scan runs its update
(sample and learn under ``jit(vmap)``, one seed, donated), less its sampling, as
``scan_profile.split_scan_time`` splits it.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _timing import machine_line, write_report  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
ARMS = ("torch-numpy", "torch-compile", "flax-numpy", "flax-scan")
"""One arm per learner (torch-jax and flax-jax share torch-numpy's and flax-numpy's learning step)."""

PROBE = textwrap.dedent(
    """
    import json, sys, time
    # An editable install's finder would serve modules the tree on PYTHONPATH lacks from the installed tree.
    sys.meta_path = [finder for finder in sys.meta_path if "__editable__" not in getattr(finder, "__module__", "")]
    import numpy as np
    from doors_gym_baselines.config import DQNConfig

    arm, min_seconds = sys.argv[1], float(sys.argv[2])
    config = DQNConfig.of(hidden_sizes=(128, 128), batch_size=128, num_envs=16, seed=0, quiet=True)
    rng = np.random.default_rng(0)
    size = 128
    try:  # after: the learners read cells (in learners/ since the modules were grouped)
        from doors_gym_baselines.learners.cells import encode
    except ImportError:
        try:
            from doors_gym_baselines.cells import encode
        except ImportError:  # before: grids, int8 as its replay buffer stored them
            encode = None
    obs = np.zeros((2, size, 225), dtype=np.int8)
    rows = np.arange(size)
    for grid in obs:
        grid[rows, rng.integers(0, 15, size)] = 3
        grid[rows, rng.integers(120, 225, size)] = 1
    observations = [encode(grid) for grid in obs] if encode else list(obs)
    batch = (observations[0], rng.integers(0, 5, size), rng.normal(0, 0.5, size).astype(np.float32),
             observations[1], (rng.random(size) < 0.25).astype(np.float32))

    from _timing import ms_per_call
    timed = lambda step, finish: ms_per_call(step, finish, min_seconds)

    if arm == "flax-scan":
        import jax, jax.numpy as jnp
        try:  # the learners sit in learners/ since the modules were grouped
            from doors_gym_baselines.learners.dqn_flax_scan import make_train
            from doors_gym_baselines.learners.scan_profile import phase_functions
        except ImportError:
            from doors_gym_baselines.dqn_flax_scan import make_train
            from doors_gym_baselines.scan_profile import phase_functions
        parts, pieces = make_train(config), phase_functions(config)
        keys = jax.vmap(jax.random.key)(jnp.arange(1))
        runner = jax.jit(jax.vmap(parts.init))(keys)
        sample_keys = jax.vmap(jax.random.key)(jnp.arange(1))
        both = jax.jit(jax.vmap(lambda r, k: pieces.learn(r, pieces.sample(r.buffer, k))), donate_argnums=0)
        sample = jax.jit(jax.vmap(pieces.sample))
        state = {"runner": runner}
        def step():
            state["runner"], loss = both(state["runner"], sample_keys)
            return loss
        total = timed(step, jax.block_until_ready)
        sampling = timed(lambda: sample(state["runner"].buffer, sample_keys), jax.block_until_ready)
        ms = total - sampling
    else:
        from doors_gym_baselines.arms import get_arm
        module = get_arm(arm).module()
        learner_class = {"torch-numpy": "TorchLearner", "torch-compile": "CompiledTorchLearner",
                         "flax-numpy": "FlaxLearner"}[arm]
        learner = getattr(module, learner_class)(config)
        threads = None
        if arm.startswith("torch"):
            import torch
            try:  # after: the arms set their threads for the run
                from doors_gym_baselines.runtime import torch_threads
                with torch_threads(None) as threads:
                    ms = timed(lambda: learner.update(batch), float)
            except ImportError:  # before: the process's threads, as the arms left them
                threads = torch.get_num_threads()
                ms = timed(lambda: learner.update(batch), float)
        else:
            import jax
            ms = timed(lambda: learner.update(batch), lambda loss: jax.block_until_ready(loss))
    print(json.dumps({"ms": ms}))
    """
)


def shim(tree: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    """A folder whose ``doors_gym`` and ``doors_gym_baselines`` are ``tree``'s (put first on ``PYTHONPATH``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "doors_gym").symlink_to(tree / "doors_gym")
    # a tree from before the folder was named as its package imports holds it as baselines/
    named = tree / "doors_gym_baselines"
    (folder / "doors_gym_baselines").symlink_to(named if named.is_dir() else tree / "baselines")
    return folder


def probe(path: pathlib.Path, arm: str, min_seconds: float) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), str(HERE)]), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, arm, str(min_seconds)], capture_output=True, text=True, env=env, timeout=600
    )
    if done.returncode != 0:
        raise RuntimeError(f"{arm} in {path}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["ms"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the git revision to compare with the working tree")
    parser.add_argument("--rounds", type=int, default=3, help="processes per tree and arm, in turn (default 3)")
    parser.add_argument("--min-seconds", type=float, default=1.0, help="timing per process (default 1)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "before_after.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        worktree = pathlib.Path(folder) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(worktree), args.before],
                       check=True)  # fmt: skip
        try:
            trees = {"before": shim(worktree, pathlib.Path(folder) / "shim-before"),
                     "after": shim(ROOT, pathlib.Path(folder) / "shim-after")}  # fmt: skip
            samples = {(arm, tree): [] for arm in ARMS for tree in trees}
            for _ in range(args.rounds):
                for arm in ARMS:
                    for tree, path in trees.items():
                        samples[(arm, tree)].append(probe(path, arm, args.min_seconds))
                        print(f"{arm} {tree}: {samples[(arm, tree)][-1]:.3f} ms", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False)
    rows = []
    for arm in ARMS:
        before, after = (statistics.median(samples[(arm, tree)]) for tree in ("before", "after"))
        rows.append([arm, f"{before:.3f}", f"{after:.3f}", f"{before / after:.1f}x"])
    intro = (
        f"ms per update of each arm's learner, width 128 x 128, batch 128, median of {args.rounds} processes "
        f"per tree in turn ({machine_line()})."
    )
    headers = ["arm", f"before ({args.before})", "after", "faster by"]
    print(write_report(args.out, f"python benchmarks/before_after.py --before {args.before}", intro, headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
