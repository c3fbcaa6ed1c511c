"""Milliseconds per DQN update against network width and batch size, for every stack, beside the FLOP floor.

Run from the repository root, with nothing else running (``pip install -e .[baselines]``)::

    python benchmarks/update_cost.py                 # the two sweeps, the optimizer paths, the compile modes
    python benchmarks/update_cost.py --quick         # fewer points, for a smoke run

Each point times the learning step of every stack on the same fixed replay batch (the cells of
``doors_gym_baselines.learners.cells``), one stack after the other and again for ``--rounds`` rounds, so load
from elsewhere falls on every stack alike; a figure is the median over the rounds. The stacks:

- eager torch (``TorchLearner.update``), with the thread policy's one intra-op thread and with two;
- compiled torch (``CompiledTorchLearner.update``: the whole step in one ``torch.compile`` graph);
- Flax in the host loop (``FlaxLearner.update``: the jitted step, state donated, loss not waited for);
- the fully jitted arm (its ``learn`` piece under ``jit(vmap)`` for one seed, state donated, as inside its scan).

Sweeps: two hidden layers of width 32 to 1024 at batch 128, and batch 32 to 1024 at width 128. The floor
is the update's multiply-adds (target forward, online forward and backward: ``8 B (w^2 + 5 w)`` FLOP for
two hidden layers of width ``w``, the first layer being two weight rows) at this CPU's fp32 peak, measured
as the rate of a 2048 x 2048 x 2048 single-precision matrix product (torch, one thread and two). It also
times torch's three optimizer paths (single-tensor, ``foreach``, ``fused``) and torch.compile's CPU modes
at width 128, batch 128. Writes a Markdown table, a JSON file and a PNG with log axes.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _timing import machine_line, markdown_table, ms_per_call  # noqa: E402

from doors_gym_baselines.learners.cells import CELLS_DTYPE  # noqa: E402
from doors_gym_baselines.config import DQNConfig  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
WIDTHS = (32, 64, 128, 256, 512, 1024)
BATCHES = (32, 64, 128, 256, 512, 1024)
STACKS = ("eager torch, 1 thread", "eager torch, 2 threads", "compiled torch", "Flax host loop", "Flax scan arm")


def fixed_batch(size: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """A replay batch of cells as the buffers store them: random agents, goals, a quarter of them hidden."""
    rng = np.random.default_rng(seed)
    cells = np.stack([rng.integers(120, 225, size), rng.integers(0, 15, size)], axis=1).astype(CELLS_DTYPE)
    next_cells = cells.copy()
    next_cells[rng.random(size) < 0.25, 1] = -1
    actions = rng.integers(0, 5, size).astype(np.int64)
    rewards = rng.normal(0, 0.5, size).astype(np.float32)
    terminated = (next_cells[:, 1] < 0).astype(np.float32)
    return cells, actions, rewards, next_cells, terminated


def config_for(width: int, batch: int) -> DQNConfig:
    return DQNConfig.of(hidden_sizes=(width, width), batch_size=batch, buffer_size=max(batch, 1024), quiet=True)


def torch_stack(config: DQNConfig, batch: tuple, compiled: bool, threads: int, mode: str | None = None,
                optimizer_path: str | None = None) -> Callable[[float], float]:  # fmt: skip
    """A timer of one torch learner's update (built once, timed each round)."""
    import torch

    from doors_gym_baselines.learners.dqn_torch import TorchLearner
    from doors_gym_baselines.runtime import torch_threads

    with torch_threads(threads):
        if compiled:
            from doors_gym_baselines.learners import dqn_torch_compile

            previous = dqn_torch_compile.COMPILE_MODE
            dqn_torch_compile.COMPILE_MODE = mode or previous
            try:
                learner = dqn_torch_compile.CompiledTorchLearner(config)
            finally:
                dqn_torch_compile.COMPILE_MODE = previous
        else:
            learner = TorchLearner(config)
        if optimizer_path is not None:
            flags = {"single": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
            learner.optimizer = torch.optim.Adam(learner.network.parameters(), lr=1e-3, **flags[optimizer_path])

    step = learner.regress if config.hyperparameters.algorithm == "pqn" else learner.update  # PQN: a minibatch

    def run(min_seconds: float) -> float:
        with torch_threads(threads):
            return ms_per_call(lambda: step(batch), lambda loss: float(loss), min_seconds)

    return run


def flax_stack(config: DQNConfig, batch: tuple) -> Callable[[float], float]:
    import jax

    from doors_gym_baselines.learners.dqn_flax import FlaxLearner

    learner = FlaxLearner(config)
    return lambda min_seconds: ms_per_call(lambda: learner.update(batch), jax.block_until_ready, min_seconds)


def scan_stack(config: DQNConfig, batch: tuple) -> Callable[[float], float]:
    """The fully jitted arm's learning step as its scan runs one seed: under vmap, or unbatched where the network has
    LayerNorm (``scan_driver.compile_chunk``), the runner donated (PQN: its regression step on a minibatch of
    returns, as ``pqn_scan`` scans it)."""
    import jax
    import jax.numpy as jnp

    from doors_gym_baselines.learners.dqn_flax import Knobs, make_regression_step
    from doors_gym_baselines.learners.dqn_flax_scan import make_train
    from doors_gym_baselines.learners.pqn_scan import make_train as make_pqn_train
    from doors_gym_baselines.learners.scan_profile import phase_functions

    pqn = config.hyperparameters.algorithm == "pqn"
    parts = (make_pqn_train if pqn else make_train)(config)
    keys = jax.vmap(jax.random.key)(jnp.arange(1))
    runner = jax.jit(jax.vmap(parts.init))(keys)
    stacked = jax.tree.map(lambda leaf: jnp.asarray(leaf)[None], batch)
    if pqn:
        regression, knobs = make_regression_step(parts.network, config), Knobs.of(config)

        def phase(runner: object, minibatch: tuple) -> tuple:
            learner, loss = regression(runner.learner, minibatch, knobs)
            return runner._replace(learner=learner), loss

    else:
        phase = phase_functions(config).learn
    if config.hyperparameters.layer_norm:  # one seed a device runs unbatched, as the arm runs it
        learn = jax.jit(lambda run, data: jax.tree.map(lambda leaf: leaf[None], phase(*jax.tree.map(
            lambda leaf: leaf[0], (run, data)))), donate_argnums=0)  # fmt: skip
    else:
        learn = jax.jit(jax.vmap(phase), donate_argnums=0)
    state = {"runner": runner}

    def step() -> object:
        state["runner"], loss = learn(state["runner"], stacked)
        return loss

    return lambda min_seconds: ms_per_call(step, jax.block_until_ready, min_seconds)


def build(stack: str, config: DQNConfig, batch: tuple) -> Callable[[float], float]:
    if stack.startswith("eager torch"):
        return torch_stack(config, batch, compiled=False, threads=1 if "1 thread" in stack else 2)
    if stack == "compiled torch":
        return torch_stack(config, batch, compiled=True, threads=1)
    if stack == "Flax host loop":
        return flax_stack(config, batch)
    return scan_stack(config, batch)


def measure(points: list[tuple[int, int]], rounds: int, min_seconds: float) -> dict[tuple[int, int], dict]:
    """``{(width, batch): {stack: ms per update}}``: every stack built once per point, timed in turn per round."""
    results = {}
    for width, batch_size in points:
        config, batch = config_for(width, batch_size), fixed_batch(batch_size)
        timers = {stack: build(stack, config, batch) for stack in STACKS}
        samples: dict[str, list[float]] = {stack: [] for stack in STACKS}
        for _ in range(rounds):
            for stack, timer in timers.items():
                samples[stack].append(timer(min_seconds))
        results[(width, batch_size)] = {stack: statistics.median(values) for stack, values in samples.items()}
        print(f"width {width}, batch {batch_size}: " + ", ".join(
            f"{stack} {ms:.3f}" for stack, ms in results[(width, batch_size)].items()), flush=True)  # fmt: skip
    return results


def flops_per_update(width: int, batch: int) -> float:
    """Multiply-adds of one update (two hidden layers of ``width``): target forward, online forward and backward."""
    dense = width * width + width * 5  # the layers after the first (the first is two weight rows)
    return 8.0 * batch * dense


def peak_gflops(threads: int) -> float:
    """fp32 GFLOP/s of a 2048 x 2048 x 2048 matrix product with ``threads`` intra-op threads (best of five)."""
    import torch

    from doors_gym_baselines.runtime import torch_threads

    size = 2048
    a, b = torch.randn(size, size), torch.randn(size, size)
    with torch_threads(threads):
        torch.mm(a, b)
        best = min(_seconds(lambda: torch.mm(a, b)) for _ in range(5))
    return 2 * size**3 / best / 1e9


def _seconds(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def optimizer_paths(rounds: int, min_seconds: float) -> dict[str, float]:
    config, batch = config_for(128, 128), fixed_batch(128)
    timers = {
        path: torch_stack(config, batch, compiled=False, threads=1, optimizer_path=path)
        for path in ("single", "foreach", "fused")
    }
    samples: dict[str, list[float]] = {path: [] for path in timers}
    for _ in range(rounds):
        for path, timer in timers.items():
            samples[path].append(timer(min_seconds))
    return {path: statistics.median(values) for path, values in samples.items()}


def compile_modes(rounds: int, min_seconds: float) -> dict[str, dict[str, float]]:
    config, batch = config_for(128, 128), fixed_batch(128)
    timers, compile_seconds = {}, {}
    for mode in ("default", "max-autotune-no-cudagraphs"):
        start = time.perf_counter()
        timers[mode] = torch_stack(config, batch, compiled=True, threads=1, mode=mode)
        compile_seconds[mode] = time.perf_counter() - start
    samples: dict[str, list[float]] = {mode: [] for mode in timers}
    for _ in range(rounds):
        for mode, timer in timers.items():
            samples[mode].append(timer(min_seconds))
    return {mode: {"ms": statistics.median(samples[mode]), "compile_s": compile_seconds[mode]} for mode in timers}


def plot(results: dict, peaks: dict[int, float], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    sweeps = (("width", [(w, 128) for w in WIDTHS], 0, "hidden width (two layers), batch 128"),
              ("batch", [(128, b) for b in BATCHES], 1, "batch size, two hidden layers of 128"))  # fmt: skip
    for _, points, index, label in sweeps:
        axis = axes[index]
        xs = [point[index] for point in points if point in results]
        for stack in STACKS:
            axis.plot(xs, [results[p][stack] for p in points if p in results], marker="o", label=stack)
        for threads, style in ((1, "--"), (2, ":")):
            floor = [1e3 * flops_per_update(*p) / (peaks[threads] * 1e9) for p in points if p in results]
            axis.plot(xs, floor, color="black", linestyle=style, label=f"FLOP floor, {threads} thread peak")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel(label)
        axis.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("ms per update")
    axes[1].legend(fontsize=7)
    figure.suptitle("Where each stack's fixed overhead ends and the arithmetic takes over")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="three widths and three batches, one round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the stacks at each point (default 3)")
    parser.add_argument("--min-seconds", type=float, default=0.3, help="timing per stack per round (default 0.3)")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS / "update_cost", help="files' path stem")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.min_seconds <= 0:
        parser.error("--rounds must be >= 1 and --min-seconds > 0")
    widths, batches = ((32, 128, 1024), (32, 128, 1024)) if args.quick else (WIDTHS, BATCHES)
    rounds = 1 if args.quick else args.rounds
    points = list(dict.fromkeys([(w, 128) for w in widths] + [(128, b) for b in batches]))
    peaks = {threads: peak_gflops(threads) for threads in (1, 2)}
    results = measure(points, rounds, args.min_seconds)
    optimizers = optimizer_paths(rounds, args.min_seconds)
    modes = compile_modes(rounds, args.min_seconds)
    build = {mode: f"{mode} {v['ms']:.3f} ms per update ({v['compile_s']:.1f} s to build)" for mode, v in modes.items()}

    import jax
    import torch

    header = ["width", "batch", *STACKS, "floor (1 thread)", "floor (2 threads)"]
    rows = [
        [w, b, *(f"{results[(w, b)][stack]:.3f}" for stack in STACKS),
         *(f"{1e3 * flops_per_update(w, b) / (peaks[t] * 1e9):.3f}" for t in (1, 2))]
        for (w, b) in points
    ]  # fmt: skip
    text = [
        f"# `python benchmarks/update_cost.py{' --quick' if args.quick else ''}`",
        "",
        f"ms per DQN update, median of {rounds} round(s) over the stacks in turn ({machine_line()}; torch "
        f"{torch.__version__}, JAX {jax.__version__}; Flax and the scan arm with XLA's default CPU threads).",
        "",
        markdown_table(header, rows),
        "",
        f"fp32 peak, measured as a 2048^3 torch matrix product: {peaks[1]:.0f} GFLOP/s on 1 thread, "
        f"{peaks[2]:.0f} on 2. Floor: the update's FLOP (8 B (w^2 + 5w)) at that peak.",
        "",
        "torch's optimizer paths, eager, 1 thread, width 128, batch 128 (ms per update): "
        + ", ".join(f"{path} {ms:.3f}" for path, ms in optimizers.items()),
        "",
        "torch.compile's CPU modes, width 128, batch 128: " + ", ".join(build.values()),
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text("\n".join(text))
    payload = {
        "points": [{"width": w, "batch": b, **results[(w, b)]} for (w, b) in points],
        "peak_gflops": peaks,
        "optimizer_paths_ms": optimizers,
        "compile_modes": modes,
        "machine": machine_line(),
    }
    args.out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    plot(results, peaks, args.out.with_suffix(".png"))
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
