"""Where a study of trials trained together spends its time: one fresh flax-scan study of ``--n-trials`` trials at
``--k`` trials per program (today's 200k env steps per trial), timed phase by phase by wrapping the driver's own
methods: asking the trials, compiling, the chunks (with the lanes each device ran and a lane-step's cost),
gathering the live lanes, the greedy evaluations, the trials' reports and prunes. Then, on a copy of the study's
storage, the same number of trials drawn the way a sampler reading the storage draws them (TPE with its
constant liar, each trial asked of the storage), against the in-memory draw ``tune`` uses.

    .venv/bin/python -W ignore benchmarks/lane_program_profile.py --k 40
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import shutil
import tempfile
import time


def timed(owner: object, name: str, totals: dict, key: str | None = None) -> None:
    """Wraps ``owner.name`` so that each call's seconds add to ``totals[key or name]``."""
    function = getattr(owner, name)

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            totals[key or name] += time.perf_counter() - started

    setattr(owner, name, wrapper)


def instrument() -> tuple[dict[str, float], list[tuple[int, float, int]]]:
    """Times the phases of a study of programs (the totals by phase, and each chunk's lanes, seconds and steps)."""
    from doors_gym_baselines.learners import scan_driver
    from doors_gym_baselines.tuning import lanes

    totals: dict[str, float] = collections.defaultdict(float)
    chunks: list[tuple[int, float, int]] = []  # (lanes a device ran, seconds, env steps per lane)
    run_chunk = scan_driver.CompiledSeeds.run_chunk

    def chunk(self, first):
        epsilon = run_chunk(self, first)
        steps = self.parts.iterations_per_chunk * self.config.hyperparameters.num_envs
        chunks.append((self.layout.per_device, self.chunk_seconds, steps))
        return epsilon

    scan_driver.CompiledSeeds.run_chunk = chunk
    timed(scan_driver, "compile_run", totals, "compile")
    timed(scan_driver.CompiledSeeds, "gather", totals)
    timed(scan_driver.CompiledSeeds, "evaluate", totals, "evaluations")
    timed(lanes.LaneTrials, "observe", totals, "reports and prunes")
    timed(lanes, "ask_program", totals, "asking the trials")
    return totals, chunks


def print_phases(wall: float, totals: dict[str, float], chunks: list[tuple[int, float, int]]) -> None:
    """The study's wall time, its phases, and a lane-step's cost by lanes per device."""
    totals["chunks"] = sum(seconds for _, seconds, _ in chunks)
    print(f"| phase | seconds |\n|---|---:|\n| `tune` (the study, its set-up and plots) | {wall:.1f} |")
    for name, seconds in totals.items():
        print(f"| {name} | {seconds:.1f} |")
    per_lane_step = collections.defaultdict(list)
    for per_device, seconds, steps in chunks:
        per_lane_step[per_device].append(seconds / (per_device * steps) * 1e3)
    for per_device, costs in sorted(per_lane_step.items()):
        print(f"chunks of {per_device} lanes a device: {len(costs)}, a lane-step {sum(costs) / len(costs):.3f} ms")


def time_drawing(k: int, folder: pathlib.Path, study_name: str) -> None:
    """``k`` trials drawn against a copy of the study's storage (TPE with its constant liar reads the running
    trials), then in memory as ``tune`` draws them."""
    import optuna

    from doors_gym_baselines import tuning
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.config import make_config
    from doors_gym_baselines.tuning import lanes, study as study_module
    from doors_gym_baselines.tuning.space import algorithm_of, space_of, suggest_hyperparameters

    shutil.copy(folder / "o.db", folder / "copy.db")
    copy = optuna.load_study(study_name=study_name, storage=f"sqlite:///{folder / 'copy.db'}")
    copy.sampler = study_module.make_sampler(0, len(copy.trials), 0, constant_liar=True)
    arm = get_arm("flax-scan")
    base = arm.configure(make_config(arm.hyperparameters(), tuning.TUNING_RUN))
    space = space_of(arm, None, algorithm_of(base.hyperparameters))
    shared = lanes.program_coordinates(space)
    started, first = time.perf_counter(), None
    for _ in range(k):
        if first is not None:
            copy.enqueue_trial({name: first.params[name] for name in shared}, skip_if_exists=False)
        trial = copy.ask()
        suggest_hyperparameters(trial, base.hyperparameters, space)
        first = first or trial
    print(f"{k} trials drawn against the storage (TPE, constant liar): {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    lanes.sample_points(copy, k, base, space)
    print(f"{k} trials drawn in memory (tune's way), same study: {time.perf_counter() - started:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=40, help="trials per program")
    parser.add_argument("--n-trials", type=int, default=40)
    args = parser.parse_args()
    from doors_gym_baselines.runtime import prepare_host_devices

    prepare_host_devices()
    from doors_gym_baselines import tuning

    totals, chunks = instrument()
    print(f"cores: {os.cpu_count()}; load average {os.getloadavg()[0]:.2f}; {args.n_trials} trials, K = {args.k}")
    with tempfile.TemporaryDirectory() as name:
        folder = pathlib.Path(name)
        options = tuning.TuneOptions(
            arm="flax-scan", n_trials=args.n_trials, trials_per_program=args.k, storage=f"sqlite:///{folder / 'o.db'}",
            models=False, tracking_uri=f"sqlite:///{folder / 'm.db'}", verbose=False,
        )  # fmt: skip
        started = time.perf_counter()
        tuning.tune(options, tuning.TUNING_RUN)
        print_phases(time.perf_counter() - started, totals, chunks)
        time_drawing(args.k, folder, options.resolved_study_name)

if __name__ == "__main__":
    main()
