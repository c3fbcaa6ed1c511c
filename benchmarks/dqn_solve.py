"""Wall time to a solved DQN agent for every arm, side by side in one run, and where each arm's time goes.

Run from the repository root (``pip install -e .[baselines]``)::

    python benchmarks/dqn_solve.py                   # every arm, up to 600k env steps each
    python benchmarks/dqn_solve.py --quick           # a smaller budget, for a smoke run
    python benchmarks/dqn_solve.py --only scan torch # the arms whose name contains one of these
    python benchmarks/dqn_solve.py --preset tuned    # each arm with its tuned preset (budget and hold-out too)

Every arm trains with the same hyperparameters (the ``Hyperparameters``
defaults unless overridden) and stops at the first greedy evaluation where it
is solved: greedy success >= 99 % over all 225 start/goal pairs and rolling
reward (mean per-step reward of the last 2000 training episodes) >= 0.75. With
``--preset tuned`` each arm trains its own tuned preset instead (see
``doors_gym_baselines.presets``), with the budget, evaluation cadence and
hold-out window it was tuned with, on ``--seed`` (100 by default: not a tuning
seed); its time to solved is then the time to the evaluation from which it
stayed solved through the hold-out window. Wall time counts everything,
compilation included. Besides every registered arm it
runs ``torch-numpy`` with two intra-op threads (to tell the thread policy's
share from the compiler's), and ``flax-scan`` with 1 and with 8 seeds (one group
per device, all cores) over the whole budget, solved or not, for the cost of
seeds in one run at equal budgets, and ``flax-scan`` with JAX's persistent
compilation cache, cold and then warm (torch's inductor keeps its own cache
by default).

Per arm it prints time to solved, updates used, milliseconds per update (the
update phase over the updates) and the split of the wall time into env step,
action selection, replay buffer, update, evaluation, compile and other (see
``doors_gym_baselines.harness.metrics.Timings``; the fully jitted arm's split comes from
its compiled pieces run apart). One update of the default network (batch 128,
hidden 128 x 128, 2 x 450 planes rows) is about 18 MFLOP forward and backward
for the online and target networks: about 0.1 ms at this CPU's fp32 peak, the
floor beside which the ms per update stand.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _timing import machine_line, markdown_table  # noqa: E402

from doors_gym.oracle import evaluate_oracle  # noqa: E402
from doors_gym_baselines.arms import ARMS, get_arm  # noqa: E402
from doors_gym_baselines.config import DQNConfig  # noqa: E402
from doors_gym_baselines.runtime import prepare_host_devices  # noqa: E402
from doors_gym_baselines.harness.metrics import PHASES, seconds_to_solved  # noqa: E402
from doors_gym_baselines.presets import load_preset  # noqa: E402

UPDATE_FLOOR_MS = 0.1
"""About 18 MFLOP per update at this CPU's fp32 peak (see the module docstring)."""


def runs(jax_cache: str) -> list[tuple[str, str, dict]]:
    """``(name, arm, overrides)`` of every run, the registry's arms first.

    ``jax_cache`` is an empty folder: ``flax-scan`` runs twice more with it as its persistent compilation
    cache, first cold (it compiles and stores), then warm (it loads what the first stored).
    """
    rows = [(arm.name, arm.name, {}) for arm in ARMS.values()]
    # The thread policy's share: the eager arm with two intra-op threads instead of the policy's one.
    rows.insert(1, ("torch-numpy, 2 threads", "torch-numpy", {"torch_threads": 2}))
    # The seeds-in-one-run ratio compares equal budgets: both runs train every step, solved or not.
    whole = {"stop_when_solved": False}
    rows.append(("flax-scan x 1 seed, whole budget", "flax-scan", whole))
    rows.append(("flax-scan x 8 seeds, whole budget", "flax-scan", {"num_seeds": 8, **whole}))
    # Last: once a process has a cache folder, JAX keeps using it.
    rows.append(("flax-scan, compilation cache cold", "flax-scan", {"jax_cache": jax_cache}))
    rows.append(("flax-scan, compilation cache warm", "flax-scan", {"jax_cache": jax_cache}))
    return rows


def parse_args(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace, int]:
    """The flags, checked: ``(parser, args, budget per arm)``; the parser reports bad presets later."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="120k env steps per arm instead of 600k")
    parser.add_argument("--total-steps", type=int, default=None, help="budget per arm (overrides --quick)")
    parser.add_argument("--eval-every", type=int, default=20_000, help="env steps between evaluations (default 20000)")
    parser.add_argument("--only", nargs="+", default=None, help="run only the runs whose name contains one of these")
    parser.add_argument("--hidden-sizes", type=int, nargs="+", default=None, help="network widths for every arm")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="also write the rows to this JSON file")
    parser.add_argument(
        "--preset", default=None, help="each arm's preset: tuned, quick, full or a file (default: the defaults)"
    )
    parser.add_argument("--seed", type=int, default=100, help="training seed with --preset (default 100)")
    args = parser.parse_args(argv)
    total_steps = args.total_steps or (120_000 if args.quick else 600_000)
    if total_steps < 1 or args.eval_every < 1:
        parser.error("--total-steps and --eval-every must be >= 1")
    return parser, args, total_steps


def train_runs(parser: argparse.ArgumentParser, args: argparse.Namespace, base: DQNConfig) -> dict:
    """Every selected run trained in turn and printed as it ends: results by run name."""
    results = {}
    jax_cache = tempfile.mkdtemp(prefix="doors-gym-jax-cache-")
    for name, arm, overrides in runs(jax_cache):
        if args.only and not any(part in name for part in args.only):
            continue
        config = base
        if args.preset:
            try:
                config = load_preset(args.preset, arm).config().replace(seed=args.seed, quiet=True)
            except ValueError as error:
                parser.error(str(error))
        result = get_arm(arm).train(config.replace(**overrides))
        results[name] = result
        print(f"{name}: {json.dumps(result.summary())} facts {json.dumps(result.facts)}", flush=True)
    return results


def to_solved(result) -> float:
    """Seconds to solved (through the run's hold-out window)."""
    return seconds_to_solved(result.history, result.config.run.hold_out_steps)


def results_table(results: dict) -> tuple[list[str], list[list[str]]]:
    """``(headers, rows)`` of the results table, one row per run."""
    reference = results.get("torch-numpy")
    table = []
    for name, result in results.items():
        speedup = f"{to_solved(reference) / to_solved(result):.1f}x" if reference else "-"
        table.append(
            [
                name,
                "yes" if result.history[-1].solved else "no",
                f"{to_solved(result):.1f}",
                f"{result.wall_seconds:.1f}",
                f"{result.env_steps:,}",
                f"{result.updates:,}",
                f"{result.ms_per_update:.3f}",
                f"{result.ms_per_update / UPDATE_FLOOR_MS:.0f}x",
                *(f"{getattr(result.timings, phase):.1f}" for phase in PHASES),
                f"{result.evaluation.mean_step_reward:.3f}",
                f"{result.rolling_reward:.3f}",
                speedup,
            ]
        )
    headers = [
        "run",
        "solved",
        "s to solved",
        "wall s",
        "env steps",
        "updates",
        "ms / update",
        "vs 0.1 ms floor",
        *(f"{phase.replace('_', ' ')} s" for phase in PHASES),
        "greedy step reward",
        "rolling reward",
        "speed-up vs torch-numpy (to solved)",
    ]
    return headers, table


def print_notes(results: dict) -> None:
    """The notes under the table: seeds in one run against one seed, compiled torch against eager."""
    single, multi = results.get("flax-scan x 1 seed, whole budget"), results.get("flax-scan x 8 seeds, whole budget")
    if single and multi:
        ratio = multi.wall_seconds / single.wall_seconds
        compiled = (multi.wall_seconds - multi.timings.compile) / (single.wall_seconds - single.timings.compile)
        print(
            f"8 seeds over {len(multi.facts['devices'])} device(s), {single.config.run.total_steps:,} env steps each: "
            f"{ratio:.1f}x the "
            f"wall time of 1 seed (target <= 4x; {compiled:.1f}x without compiling; "
            f"{multi.facts['seeds_per_device']} seeds per device)"
        )
    eager, compiled = results.get("torch-numpy"), results.get("torch-compile")
    if eager and compiled:
        print(
            f"compiled torch: {compiled.ms_per_update:.3f} ms per update against eager {eager.ms_per_update:.3f}"
            + (
                f" (2 threads: {results['torch-numpy, 2 threads'].ms_per_update:.3f})"
                if "torch-numpy, 2 threads" in results
                else ""
            )
            + f", {compiled.timings.compile:.1f} s compiling"
        )


def write_json(results: dict, path: pathlib.Path) -> None:
    """The rows, with their timings and facts, as JSON."""
    rows = [
        {"name": name, **result.summary(), "timings": result.timings.as_dict(), "facts": result.facts}
        for name, result in results.items()
    ]
    path.write_text(json.dumps(rows, indent=2))


def main(argv: list[str] | None = None) -> int:
    """The benchmark: flags, the runs in turn, the table and its notes."""
    parser, args, total_steps = parse_args(argv)
    prepare_host_devices()
    base = DQNConfig.of(total_steps=total_steps, eval_every=args.eval_every, stop_when_solved=True, quiet=True)
    if args.hidden_sizes:
        base = base.replace(hidden_sizes=tuple(args.hidden_sizes))
    oracle = evaluate_oracle()
    results = train_runs(parser, args, base)
    headers, table = results_table(results)
    budget = f"preset {args.preset}, seed {args.seed}" if args.preset else f"budget {total_steps:,} env steps per seed"
    print(f"\nDQN to solved ({budget}; {machine_line()})\n")
    print(markdown_table(headers, table))
    print(f"\noracle: greedy success {oracle.success_rate:.3f}, per-step reward {oracle.mean_step_reward:.3f}")
    print_notes(results)
    if args.json:
        write_json(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
