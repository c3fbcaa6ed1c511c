"""Steps per second of ``Doors-v0``: single env, wrapped env and vector envs, side by side.

Run from the repository root::

    python benchmarks/throughput.py            # about a minute
    python benchmarks/throughput.py --quick    # about 20 seconds

Random actions throughout; an env that ends is reset inside the timed loop.
When ``minigrid`` is installed (``pip install -e .[bench]``) its
``MiniGrid-Empty-16x16-v0`` is timed in the same run as the ratio reference.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import warnings
from collections.abc import Iterator

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import doors_gym  # noqa: E402,F401  (registers the ids)
from _levels import (  # noqa: E402
    ACTIONS_PER_ROUND,
    SCAN_SIZES,
    VECTOR_SIZES as LEVEL_VECTOR_SIZES,
    measure_level,
    now,
    scan_step,
    single_env_loop,
    speed_table,
    thread_settings,
    unwrapped_step,
    vector_loop,
    vector_step,
)
from _timing import Measurement, human_rate, machine_line, markdown_table, time_rounds, verdict  # noqa: E402
from doors_gym.envs.doors import DoorsEnv  # noqa: E402

VECTOR_SIZES = (1, 8, 128, 4096)
ASYNC_SIZES = (1, 8, 32)
TARGETS = (
    ("unwrapped Doors-v0 / Minigrid", 40.0),
    ('gym.make("Doors-v0") / Minigrid', 15.0),
    ("native vector @128 / sync @128", 30.0),
)


def measure_single(name: str, env: gym.Env, num_actions: int, seconds: float) -> Measurement:
    run = single_env_loop(env, num_actions, seed=0)
    run(0)  # warm-up
    seconds_per_round, rounds = time_rounds(run, seconds)
    env.close()
    return Measurement(name, 1, ACTIONS_PER_ROUND, seconds_per_round, rounds)


def measure_vector(name: str, env: gym.vector.VectorEnv, seconds: float) -> Measurement:
    steps_per_round = max(1, min(200, 20_000 // env.num_envs))
    run = vector_loop(env, steps_per_round, seed=0)
    run(0)
    seconds_per_round, rounds = time_rounds(run, seconds, min_rounds=3)
    env.close()
    return Measurement(name, env.num_envs, steps_per_round * env.num_envs, seconds_per_round, rounds)


def run_all(seconds: float, with_minigrid: bool) -> list[Measurement]:
    """Every configuration, one after the other in this process."""
    results = []
    if with_minigrid:
        import minigrid  # noqa: F401

        results.append(
            measure_single("Minigrid Empty-16x16 (gym.make)", gym.make("MiniGrid-Empty-16x16-v0"), 3, seconds)
        )
    results.append(measure_single("Doors-v0 unwrapped", DoorsEnv(max_episode_steps=60), 5, seconds))
    results.append(measure_single('gym.make("Doors-v0")', gym.make("Doors-v0"), 5, seconds))
    for num_envs in VECTOR_SIZES:
        results.append(measure_vector("make_vec native", gym.make_vec("Doors-v0", num_envs), seconds))
    for num_envs in VECTOR_SIZES:
        results.append(
            measure_vector("make_vec sync", gym.make_vec("Doors-v0", num_envs, vectorization_mode="sync"), seconds)
        )
    for num_envs in ASYNC_SIZES:
        results.append(
            measure_vector("make_vec async", gym.make_vec("Doors-v0", num_envs, vectorization_mode="async"), seconds)
        )
    return results


ROOT = pathlib.Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def package_at(revision: str) -> Iterator[object]:
    """``doors_gym`` as committed at ``revision`` (a git revision of this repository), imported beside this tree's.

    The old tree is unpacked to a temporary folder and imported while this tree's modules are set aside;
    its classes keep their own modules' globals afterwards, so old and new envs run in one process.
    """
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "doors_gym"], capture_output=True)
    if archive.returncode:
        raise ValueError(f"--before {revision!r} is not a revision of {ROOT}: {archive.stderr.decode().strip()}")
    is_ours = lambda name: name == "doors_gym" or name.startswith("doors_gym.")  # noqa: E731
    ours = {name: module for name, module in sys.modules.items() if is_ours(name)}
    with tempfile.TemporaryDirectory() as folder:
        tarfile.open(fileobj=io.BytesIO(archive.stdout)).extractall(folder, filter="data")
        for name in ours:
            del sys.modules[name]
        sys.path.insert(0, folder)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the old tree registers the same ids again
                yield importlib.import_module("doors_gym.envs.doors")
        finally:
            sys.path.remove(folder)
            for name in [name for name in sys.modules if is_ours(name)]:
                del sys.modules[name]
            sys.modules.update(ours)


def before_after(revision: str, seconds: float, rounds: int = 5) -> list[Measurement]:
    """The unwrapped ``Doors-v0`` step at ``revision`` and in this tree, alternated ``rounds`` times in one process."""
    with package_at(revision) as old:
        old_env = old.DoorsEnv(max_episode_steps=60)
    new_env = DoorsEnv(max_episode_steps=60)
    results = []
    for _ in range(rounds):
        for name, env in ((f"Doors-v0 unwrapped at {revision}", old_env), ("Doors-v0 unwrapped, this tree", new_env)):
            run = single_env_loop(env, 5, seed=0)
            run(0)
            results.append(Measurement(name, 1, ACTIONS_PER_ROUND, time_rounds(run, seconds / rounds)[0]))
    return results


def ratios(results: list[Measurement]) -> dict[str, float]:
    """The ratios the issue's targets are stated in (Minigrid ones only when it ran)."""
    by_key = {(m.name, m.num_envs): m.steps_per_second for m in results}
    out = {
        "native vector @128 / sync @128": by_key[("make_vec native", 128)] / by_key[("make_vec sync", 128)],
        "native vector @4096 (env-steps/s)": by_key[("make_vec native", 4096)],
    }
    minigrid = by_key.get(("Minigrid Empty-16x16 (gym.make)", 1))
    if minigrid:
        out["unwrapped Doors-v0 / Minigrid"] = by_key[("Doors-v0 unwrapped", 1)] / minigrid
        out['gym.make("Doors-v0") / Minigrid'] = by_key[('gym.make("Doors-v0")', 1)] / minigrid
    return out


def level_speeds(names: list[str], seconds: float) -> list:
    """Every level's unwrapped NumPy step, native vector env and JAX scan, each beside its floor."""
    from doors_gym.levels import get_level

    rows = []
    for name in names:
        level = get_level(name)
        params = level.params()
        methods = [("unwrapped NumPy step", 1, lambda: unwrapped_step(DoorsEnv(**level.keywords), seconds))]
        methods += [
            ("native vector env", n, lambda n=n: vector_step(gym.make_vec(level.env_id, n), seconds))
            for n in LEVEL_VECTOR_SIZES
        ]
        methods += [
            (
                "native vector env, copy=False",
                n,
                lambda n=n: vector_step(gym.make_vec(level.env_id, n, copy=False), seconds),
            )
            for n in LEVEL_VECTOR_SIZES
        ]
        methods += [("JAX scan(batch_step)", n, lambda n=n: scan_step(params, n, seconds)) for n in SCAN_SIZES]
        obs_bytes = params.num_cells * np.dtype(np.int16).itemsize
        rows += measure_level(level.name, obs_bytes, methods, seconds)
    return rows


def write_levels_report(rows: list, argv: list[str], path: pathlib.Path, note: str, before: str = "") -> str:
    """``throughput_levels.md``: the command, where and when, the thread settings, the table, the 63x63 targets
    and, where measured, ``Doors-v0``'s unwrapped step before and after."""
    target_rows = [r for r in rows if r.level == "63x63" and (r.method, r.num_envs) in TARGET_ROWS]
    checks = [
        f"- 63x63 {r.method} at {r.num_envs} envs: {r.floor_multiple:.2f}x the floor "
        f"(target <= 2x: {verdict(2.0, r.floor_multiple)})"
        for r in target_rows
    ]
    lines = [
        f"# `{' '.join(['python benchmarks/throughput.py', *argv])}`",
        "",
        f"Speed at every level, random actions, measured {now()} ({machine_line()}).",
        f"Threads: {thread_settings()}.",
        "",
        "Floor: a plain NumPy copy of the observation bytes of one (vector) step (int16 grids, `obs bytes/step`), "
        "measured just before each row; `x floor` is the step's time over it. The JAX scan is "
        f"`jit(lax.scan(batch_step))` over 32 steps, the observation built every step.{note}",
        "",
        speed_table(rows),
        "",
        *checks,
        "",
        *(["`Doors-v0`'s unwrapped step, old and new alternated in this process:", "", before, ""] if before else []),
    ]
    text = "\n".join(lines)
    path.write_text(text)
    return text


TARGET_ROWS = {("native vector env", 1024), ("native vector env, copy=False", 1024), ("JAX scan(batch_step)", 4096)}
"""The issue's targets at 63x63: within 2x of the floor."""


def report_doors_v0(seconds: float, no_minigrid: bool, json_path: pathlib.Path | None) -> None:
    """The Doors-v0 table: single, wrapped, native vector, sync and async, against Minigrid when installed."""
    try:
        import minigrid  # noqa: F401

        minigrid_installed = True
    except ImportError:
        minigrid_installed = False
    with_minigrid = minigrid_installed and not no_minigrid
    results = run_all(seconds, with_minigrid)
    reference = results[0].steps_per_second if with_minigrid else None
    rows = [
        [m.name, m.num_envs, human_rate(m.steps_per_second)]
        + ([f"{m.steps_per_second / reference:.1f}x"] if reference else [])
        for m in results
    ]
    headers = ["configuration", "envs", "env-steps/s"] + (["vs Minigrid"] if reference else [])
    print(f"Doors-v0 throughput, random actions ({machine_line()})\n")
    print(markdown_table(headers, rows))
    print()
    found = ratios(results)
    for name, target in TARGETS:
        if name in found:
            print(f"{name}: {found[name]:.1f}x (target >= {target:.0f}x: {verdict(found[name], target)})")
    rate_4096 = found["native vector @4096 (env-steps/s)"]
    print(f"native vector @4096: {human_rate(rate_4096)} env-steps/s (target >= 5M: {verdict(rate_4096, 5e6)})")
    if not minigrid_installed:
        print("(minigrid not installed: install the bench extra for the Minigrid ratios)")
    if json_path:
        json_path.write_text(
            json.dumps({"machine": machine_line(), "results": [vars(m) for m in results], "ratios": found}, indent=2)
        )


def report_before_after(revision: str, seconds: float) -> str:
    """The unwrapped Doors-v0 step at ``revision`` and now, alternated in this process: medians and their ratio
    (printed, and returned as Markdown)."""
    results = before_after(revision, seconds)
    rates = {name: sorted(m.steps_per_second for m in results if m.name == name) for name in {m.name for m in results}}
    medians = {name: values[len(values) // 2] for name, values in rates.items()}
    old, new = f"Doors-v0 unwrapped at {revision}", "Doors-v0 unwrapped, this tree"
    rows = [[name, human_rate(medians[name])] for name in (old, new)]
    table = markdown_table(["tree", "steps/s (median of 5 alternated rounds)"], rows)
    ratio = medians[new] / medians[old]
    text = f"{table}\n\nthis tree / {revision}: {ratio:.2f}x (target: no slower; {verdict(ratio, 0.97)}, 3 % noise)"
    print(text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="0.4 s per configuration instead of 2 s")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per configuration (overrides --quick)")
    parser.add_argument("--no-minigrid", action="store_true", help="skip the Minigrid reference even if installed")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="also write the figures to this JSON file")
    parser.add_argument("--skip-doors-v0", action="store_true", help="skip the Doors-v0 table (levels only)")
    parser.add_argument("--levels", nargs="*", default=None, help="levels to time (default: every level; none: skip)")
    parser.add_argument("--before", default=None, help="a git revision: time Doors-v0's unwrapped step there and now")
    parser.add_argument("--out-dir", type=pathlib.Path, default=ROOT / "benchmarks" / "results", help="for the report")
    parser.add_argument("--note", default="", help="a sentence for the levels report (e.g. what else ran)")
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (0.4 if args.quick else 2.0)
    if seconds <= 0:
        parser.error(f"--seconds {seconds} is out of range: expected > 0")
    from doors_gym.levels import LEVEL_NAMES

    levels = list(LEVEL_NAMES) if args.levels is None else args.levels
    unknown = [name for name in levels if name not in LEVEL_NAMES]
    if unknown:
        parser.error(f"--levels {unknown} are unknown: expected names among {list(LEVEL_NAMES)}")
    before = report_before_after(args.before, seconds) if args.before else ""
    if not args.skip_doors_v0:
        report_doors_v0(seconds, args.no_minigrid, args.json)
    if levels:
        rows = level_speeds(levels, seconds)
        note = f" {args.note}" if args.note else ""
        args.out_dir.mkdir(parents=True, exist_ok=True)
        path = args.out_dir / "throughput_levels.md"
        report = write_levels_report(rows, sys.argv[1:] if argv is None else argv, path, note, before)
        print("\n" + report)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
