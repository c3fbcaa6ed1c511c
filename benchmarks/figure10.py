"""The study's Figure 10, re-run: env-steps/s against the number of envs, for every way to step Doors.

Run from the repository root (``pip install -e .[bench]``; ``navix`` and
``gymnax`` are timed too when installed)::

    python benchmarks/figure10.py             # a few minutes
    python benchmarks/figure10.py --quick     # about a minute

Timed in one process, one after the other, with random actions:

- ``Doors-v0`` through ``SyncVectorEnv`` and ``AsyncVectorEnv`` (async up to 16
  envs: one process per env on a 2-core machine), and the native NumPy vector env;
- ``DoorsJax-v0`` through ``gym.make_vec`` stepped from a Python loop;
- the pure JAX API in ``jit(lax.scan(...))``, observation built every step:
  ``vmap(step)`` with a key split per env per step (the plain way), and
  ``batch_step``, which draws the starts of the whole batch at once;
- NAVIX ``Navix-Empty-16x16-v0`` and gymnax ``FourRooms-misc`` in the same
  ``jit(scan(vmap(step)))`` loop, as anchors.

Writes ``figure10.md``, ``figure10.csv`` and ``figure10.png`` (log axes) to
``--out-dir``. Compile time is reported apart and not counted in the rates.

``--levels NAME ...`` (or ``all``) times instead, at every size and level, the native NumPy vector env
and the JAX ``scan(batch_step)``, each beside the floor of writing its observations once (a plain
copy of the same bytes, measured just before it), and writes ``figure10_levels.md``.
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import doors_gym  # noqa: E402,F401
from doors_gym.levels import LEVEL_NAMES  # noqa: E402
from _levels import measure_level, now, scan_step, speed_table, thread_settings, vector_step  # noqa: E402
from _timing import Measurement, human_rate, machine_line, markdown_table, time_rounds, verdict  # noqa: E402

SIZES = (1, 4, 16, 64, 256, 1024, 4096)
QUICK_SIZES = (1, 16, 256, 1024, 4096)
MAX_ASYNC = 16
SCAN_ENV_STEPS = 400_000
"""Env steps per compiled scan call (``num_steps = SCAN_ENV_STEPS // num_envs``, at least 64)."""


def gym_vector(env: gym.vector.VectorEnv, seconds: float) -> tuple[int, float]:
    """``(env steps per round, median seconds per round)`` of a Python loop over ``env.step``."""
    steps_per_round = max(1, min(200, 20_000 // env.num_envs))
    actions = np.random.default_rng(0).integers(0, 5, (steps_per_round, env.num_envs))
    env.reset(seed=0)
    env.step(actions[0])  # compile / warm up
    is_jax = bool(env.metadata.get("jax"))

    def run(_: int) -> None:
        step = env.step
        for row in actions:
            result = step(row)
        if is_jax:  # wait for the device once per round
            result[0].block_until_ready()

    seconds_per_round, _ = time_rounds(run, seconds, min_rounds=3)
    env.close()
    return steps_per_round * env.num_envs, seconds_per_round


def random_actions(key: Any, num_envs: int, num_actions: int) -> Any:
    """One 32-bit draw per env modulo the number of actions: the same cheap random policy for every method.

    ``jax.random.randint`` draws twice as many bits and costs as much as a
    Doors step on a CPU; the benchmark times envs, not the policy.
    """
    import jax
    import jax.numpy as jnp

    return (jax.random.bits(key, (num_envs,), dtype=jnp.uint32) % jnp.uint32(num_actions)).astype(jnp.int32)


def _scan(body: Callable[[Any, None], tuple[Any, None]], carry: Any, num_steps: int) -> Any:
    """The final carry of ``num_steps`` calls of ``body``."""
    import jax

    return jax.lax.scan(body, carry, None, length=num_steps)[0]


def _vmapped_steps(
    reset: Callable[..., Any], step: Callable[..., Any], params: Any, num_actions: int, num_envs: int, num_steps: int
) -> Callable[[Any], Any]:
    """A gymnax-style pure API (``reset(key, params)``, ``step(key, state, action, params)``) in
    ``scan(vmap(step))`` with a key split per env per step."""
    import jax

    def run(key: Any) -> Any:
        obs, state = jax.vmap(reset, in_axes=(0, None))(jax.random.split(key, num_envs), params)

        def body(carry: Any, _: None) -> tuple[Any, None]:
            obs, state, key = carry
            key, action_key, step_key = jax.random.split(key, 3)
            actions = random_actions(action_key, num_envs, num_actions)
            obs, state, *_ = jax.vmap(step, in_axes=(0, 0, 0, None))(
                jax.random.split(step_key, num_envs), state, actions, params
            )
            return (obs, state, key), None

        return _scan(body, (obs, state, key), num_steps)

    return run


def _doors_key_per_env(num_envs: int, num_steps: int) -> Callable[[Any], Any]:
    """The pure API in ``scan(vmap(step))`` with a key split per env per step."""
    from doors_gym.jax import functional as F

    return _vmapped_steps(F.reset, F.step, F.DEFAULT_PARAMS, 5, num_envs, num_steps)


def _doors_batch_step(num_envs: int, num_steps: int) -> Callable[[Any], Any]:
    """The pure API in ``scan(batch_step)``: one draw of starts for the whole batch."""
    import jax

    from doors_gym.jax import functional as F

    params = F.DEFAULT_PARAMS

    def run(key: Any) -> Any:
        obs, state = F.batch_reset(key, num_envs, params)

        def body(carry: Any, _: None) -> tuple[Any, None]:
            obs, state, key = carry
            key, action_key, step_key = jax.random.split(key, 3)
            actions = random_actions(action_key, num_envs, 5)
            obs, state, *_ = F.batch_step(step_key, state, actions, params)
            return (obs, state, key), None

        return _scan(body, (obs, state, key), num_steps)

    return run


def _navix_empty(num_envs: int, num_steps: int) -> Callable[[Any], Any]:
    """NAVIX ``Navix-Empty-16x16-v0`` in ``scan(vmap(step))``."""
    import jax
    import navix

    env = navix.make("Navix-Empty-16x16-v0")
    num_actions = len(env.action_set)

    def run(key: Any) -> Any:
        timestep = jax.vmap(env.reset)(jax.random.split(key, num_envs))

        def body(carry: Any, _: None) -> tuple[Any, None]:
            timestep, key = carry
            key, action_key = jax.random.split(key)
            actions = random_actions(action_key, num_envs, num_actions)
            return (jax.vmap(env.step)(timestep, actions), key), None

        return _scan(body, (timestep, key), num_steps)

    return run


def _gymnax_four_rooms(num_envs: int, num_steps: int) -> Callable[[Any], Any]:
    """gymnax ``FourRooms-misc`` in ``scan(vmap(step))``."""
    import gymnax

    env, env_params = gymnax.make("FourRooms-misc")
    return _vmapped_steps(env.reset, env.step, env_params, env.num_actions, num_envs, num_steps)


SCAN_BUILDERS: dict[str, Callable[[int, int], Callable[[Any], Any]]] = {
    "pure API scan(vmap(step)), key per env": _doors_key_per_env,
    "pure API scan(batch_step), one draw per batch": _doors_batch_step,
    "NAVIX Empty-16x16 scan(vmap(step))": _navix_empty,
    "gymnax FourRooms scan(vmap(step))": _gymnax_four_rooms,
}
"""Each scan configuration's builder: ``builder(num_envs, num_steps) -> run(key) -> final carry``."""


def scan_runner(name: str, num_envs: int) -> tuple[Callable[[Any], Any], Any, int]:
    """A jitted ``scan(vmap(step))`` for one configuration: ``(run(key) -> carry, key, num_steps)``."""
    import jax

    if name not in SCAN_BUILDERS:
        raise ValueError(f"unknown scan configuration {name!r}")
    num_steps = max(64, SCAN_ENV_STEPS // num_envs)
    run = SCAN_BUILDERS[name](num_envs, num_steps)
    return jax.jit(run), jax.random.key(0), num_steps


def scan_measure(name: str, num_envs: int, seconds: float) -> tuple[int, float, float]:
    """``(env steps per call, median seconds per call, compile seconds)`` of one scan configuration."""
    import jax

    run, key, num_steps = scan_runner(name, num_envs)
    start = time.perf_counter()
    jax.block_until_ready(run(key))
    compile_seconds = time.perf_counter() - start
    keys = jax.random.split(jax.random.key(1), 1024)

    def call(index: int) -> None:
        jax.block_until_ready(run(keys[index % 1024]))

    seconds_per_call, _ = time_rounds(call, seconds)
    return num_steps * num_envs, seconds_per_call, compile_seconds


def available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def level_sweep(names: list[str], sizes: tuple[int, ...], seconds: float, out_dir: pathlib.Path) -> str:
    """The native vector env and the JAX scan at every size and level against the floor; writes the report."""
    from doors_gym.levels import get_level

    rows = []
    for name in LEVEL_NAMES if names == ["all"] else names:
        level = get_level(name)
        params = level.params()
        methods = [
            ("native vector env", n, lambda n=n: vector_step(gym.make_vec(level.env_id, n), seconds)) for n in sizes
        ]
        methods += [("JAX scan(batch_step)", n, lambda n=n: scan_step(params, n, seconds)) for n in sizes]
        rows += measure_level(level.name, params.num_cells * np.dtype(np.int16).itemsize, methods, seconds)
    text = "\n".join(
        [
            f"# Figure 10 at every level ({machine_line()})",
            "",
            f"Measured {now()}. Threads: {thread_settings()}. Floor: a plain NumPy copy of one vector step's "
            "observation bytes, measured just before each row.",
            "",
            speed_table(rows),
            "",
        ]
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "figure10_levels.md").write_text(text)
    return text


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, tuple[int, ...], float]:
    """The flags, checked: ``(args, sizes, seconds per point)``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES} and 0.3 s per point")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per point (default 1.0, 0.3 with --quick)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help=f"numbers of envs (default {SIZES})")
    parser.add_argument(
        "--out-dir",
        type=pathlib.Path,
        default=pathlib.Path("benchmarks/results"),
        help="where to write the table and plot",
    )
    parser.add_argument("--no-anchors", action="store_true", help="skip NAVIX and gymnax even if installed")
    parser.add_argument(
        "--levels", nargs="+", choices=(*LEVEL_NAMES, "all"), default=None, help="time these levels instead of Doors-v0"
    )
    args = parser.parse_args(argv)
    sizes = tuple(args.sizes or (QUICK_SIZES if args.quick else SIZES))
    if any(size < 1 for size in sizes):
        parser.error(f"--sizes {list(sizes)} is invalid: every size must be >= 1")
    seconds = args.seconds if args.seconds is not None else (0.3 if args.quick else 1.0)
    if seconds <= 0:
        parser.error(f"--seconds {seconds} is out of range: expected > 0")
    if not available("jax"):
        parser.error("JAX is not installed: pip install -e .[jax]")
    return args, sizes, seconds


def scan_names_to_time(no_anchors: bool) -> list[str]:
    """The scan configurations to time: ours, then the anchors that are installed (unless ``no_anchors``)."""
    scan_names = ["pure API scan(vmap(step)), key per env", "pure API scan(batch_step), one draw per batch"]
    if not no_anchors and available("navix"):
        scan_names.append("NAVIX Empty-16x16 scan(vmap(step))")
    if not no_anchors and available("gymnax"):
        scan_names.append("gymnax FourRooms scan(vmap(step))")
    return scan_names


def gym_configs(num_envs: int) -> list[tuple[str, Callable[[], gym.vector.VectorEnv]]]:
    """``(name, make)`` of every Gymnasium vector env timed at ``num_envs`` envs."""
    configs: list[tuple[str, Callable[[], gym.vector.VectorEnv]]] = [
        ("Doors-v0 sync", lambda: gym.make_vec("Doors-v0", num_envs, vectorization_mode="sync")),
        ("Doors-v0 native NumPy vector", lambda: gym.make_vec("Doors-v0", num_envs)),
        ("DoorsJax-v0 make_vec, Python loop", lambda: gym.make_vec("DoorsJax-v0", num_envs)),
    ]
    if num_envs <= MAX_ASYNC:
        # forkserver: this process has JAX's threads running, and fork() under threads can deadlock.
        configs.insert(
            1,
            (
                "Doors-v0 async",
                lambda: gym.make_vec(
                    "Doors-v0", num_envs, vectorization_mode="async", vector_kwargs={"context": "forkserver"}
                ),
            ),
        )
    return configs


def measure_all(
    sizes: tuple[int, ...], seconds: float, scan_names: list[str]
) -> tuple[list[Measurement], dict[tuple[str, int], float]]:
    """Every series at every size in turn, printed as measured: ``(measurements, compile seconds)``."""
    results: list[Measurement] = []
    compile_seconds: dict[tuple[str, int], float] = {}
    for num_envs in sizes:
        for name, make in gym_configs(num_envs):
            steps, elapsed = gym_vector(make(), seconds)
            results.append(Measurement(name, num_envs, steps, elapsed))
            print(f"{name:58s} N={num_envs:5d} {human_rate(steps / elapsed):>8s} env-steps/s", flush=True)
        for name in scan_names:
            steps, elapsed, compiled = scan_measure(name, num_envs, seconds)
            compile_seconds[(name, num_envs)] = compiled
            results.append(Measurement(name, num_envs, steps, elapsed))
            print(
                f"{name:58s} N={num_envs:5d} {human_rate(steps / elapsed):>8s} env-steps/s (compile {compiled:.1f} s)",
                flush=True,
            )
    return results, compile_seconds


def target_checks(rate: dict[tuple[str, int], float], sizes: tuple[int, ...], scan_names: list[str]) -> list[str]:
    """One line per target: our scans at the largest size (alone and against the anchors), make_vec against sync."""
    largest = max(sizes)
    checks = []
    for variant in scan_names[:2]:
        if (variant, largest) not in rate:
            continue
        ours = rate[(variant, largest)]
        line = f"{variant} at {largest} envs: {human_rate(ours)} env-steps/s (target >= 10M: {verdict(ours, 1e7)})"
        for anchor, target in (("NAVIX Empty-16x16 scan(vmap(step))", 8.0), ("gymnax FourRooms scan(vmap(step))", 2.5)):
            if (anchor, largest) in rate:
                ratio = ours / rate[(anchor, largest)]
                line += f"; {ratio:.1f}x {anchor.split()[0]} (target >= {target}x: {verdict(ratio, target)})"
        checks.append(line)
    if ("DoorsJax-v0 make_vec, Python loop", 1024) in rate:
        ratio = rate[("DoorsJax-v0 make_vec, Python loop", 1024)] / rate[("Doors-v0 sync", 1024)]
        checks.append(
            f"make_vec DoorsJax-v0 / Doors-v0 sync at 1024: {ratio:.1f}x (target >= 10x: {verdict(ratio, 10)})"
        )
    return checks


def report_text(
    results: list[Measurement],
    compile_seconds: dict[tuple[str, int], float],
    sizes: tuple[int, ...],
    scan_names: list[str],
) -> str:
    """The Markdown report: rates, wall times per 1,000 vector steps, the target checks and compile times."""
    names = list(dict.fromkeys(m.name for m in results))
    rate = {(m.name, m.num_envs): m.steps_per_second for m in results}
    headers = ["method"] + [f"N={n}" for n in sizes]
    table_rows = [[name] + [human_rate(rate[(name, n)]) if (name, n) in rate else "-" for n in sizes] for name in names]
    wall_rows = [
        [name] + [f"{1000 * n / rate[(name, n)]:.3g}" if (name, n) in rate else "-" for n in sizes] for name in names
    ]
    lines = [
        f"# Figure 10 re-run ({machine_line()})",
        "",
        "Env-steps per second (all envs together), random actions:",
        "",
        markdown_table(headers, table_rows),
        "",
        "Wall time in seconds for 1,000 vector steps (from the measured rate):",
        "",
        markdown_table(headers, wall_rows),
        "",
    ]
    lines += [f"- {check}" for check in target_checks(rate, sizes, scan_names)]
    lines += [
        "",
        "Compile times (s): " + ", ".join(f"{name} N={n}: {s:.1f}" for (name, n), s in compile_seconds.items()),
    ]
    return "\n".join(lines)


def write_files(report: str, results: list[Measurement], out_dir: pathlib.Path) -> None:
    """``figure10.md``, ``figure10.csv`` and ``figure10.png`` in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "figure10.md").write_text(report + "\n")
    with open(out_dir / "figure10.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["method", "num_envs", "env_steps", "seconds", "env_steps_per_second"])
        for m in results:
            writer.writerow([m.name, m.num_envs, m.env_steps, f"{m.seconds:.4f}", f"{m.steps_per_second:.1f}"])
    plot(results, out_dir / "figure10.png")
    print(f"\nwrote {out_dir / 'figure10.md'}, figure10.csv and figure10.png")


def main(argv: list[str] | None = None) -> int:
    """The Figure 10 re-run: flags, every series timed in turn, the table, the plot and the verdicts."""
    args, sizes, seconds = parse_args(argv)
    if args.levels:
        print(level_sweep(args.levels, sizes, seconds, args.out_dir))
        return 0
    scan_names = scan_names_to_time(args.no_anchors)
    results, compile_seconds = measure_all(sizes, seconds, scan_names)
    report = report_text(results, compile_seconds, sizes, scan_names)
    print()
    print(report)
    write_files(report, results, args.out_dir)
    return 0


def plot(results: list[Measurement], path: pathlib.Path) -> None:
    """Two log-log panels: env-steps/s and time for 1,000 vector steps against the number of envs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    for name in dict.fromkeys(m.name for m in results):
        points = sorted((m.num_envs, m.steps_per_second) for m in results if m.name == name)
        sizes = [n for n, _ in points]
        rates = [r for _, r in points]
        style = "--" if name.startswith(("NAVIX", "gymnax")) else "-"
        left.plot(sizes, rates, style, marker="o", label=name)
        right.plot(sizes, [1000 * n / r for n, r in points], style, marker="o", label=name)
    for axis, label in ((left, "env-steps per second"), (right, "seconds per 1,000 vector steps")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("number of envs")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=7)
    figure.suptitle(f"Doors: vectorisation methods ({machine_line()})", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    sys.exit(main())
