"""Agent-steps per second of tabular Q-learning, from 1 to 1024 agents trained at once.

Run from this folder's parent (``examples/doors-gym-qtable``)::

    python benchmarks/throughput.py            # about 5 minutes on 2 cores
    python benchmarks/throughput.py --quick    # about a minute

Each row trains ``agents`` agents in one ``jax.jit(jax.vmap(train))`` call and divides agents x env steps
per agent by the wall seconds of the compiled call (``block_until_ready``; compiling is timed apart, and
every call is run once before the timed rounds). The columns:

- ``1 env, epsilon 0.1``: the article's setup (``seeds/jax-vectorized-gridworld.md``): one env per agent,
  epsilon-greedy with a random draw every step. Its 30-agent row is the one compared with the article's
  1.83M steps per second;
- ``1 env, defaults``: :class:`~doors_gym_qtable.QConfig`'s defaults, exploring by optimism alone (no
  exploration draws);
- ``lax.map``: the first column's agents trained one after another (``jax.lax.map(train, keys)``) instead
  of side by side (``vmap``);
- ``best num_envs``: the first column's config with the fastest of ``--num-envs`` envs per agent.

No evaluation runs inside the timed calls (``eval_every=0`` but the one at the end). Writes
``results/throughput.{md,json,png}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import platform
import statistics
import sys
import time
from collections.abc import Callable

import jax
import jaxlib

from doors_gym_qtable import QConfig, make_train

AGENTS = (1, 2, 4, 8, 16, 30, 64, 128, 256, 512, 1024)
NUM_ENVS = (16, 64, 256)
ARTICLE_STEPS_PER_SECOND = 1.83e6
"""The article's single-agent figure (1,837,563 steps/s); its 30 agents ran at 1,471,080 agent-steps/s."""
AGENT_STEPS_PER_CALL = 8_000_000
"""Work of one timed call (agents x steps per agent), whatever the agents: at least half a second here."""
MIN_STEPS_PER_AGENT = 20_480
EXPLORING = QConfig(start_epsilon=0.1, end_epsilon=0.1, eval_every=0)
DEFAULTS = QConfig(eval_every=0)


@dataclasses.dataclass
class Timing:
    """One configuration: ``agents`` agents x ``steps_per_agent`` env steps in ``seconds`` (median round)."""

    agents: int
    num_envs: int
    steps_per_agent: int
    seconds: float
    compile_seconds: float
    rounds: int

    @property
    def agent_steps_per_second(self) -> float:
        """Env steps per second, summed over agents and their envs."""
        return self.agents * self.steps_per_agent / self.seconds


def steps_per_agent(agents: int, num_envs: int, work: int) -> int:
    """Env steps per agent for a call of about ``work`` agent-steps, a multiple of 1024 iterations."""
    unit = 1024 * num_envs
    steps = max(MIN_STEPS_PER_AGENT, work // agents, unit)
    return steps - steps % unit


def measure(
    config: QConfig, agents: int, work: int, rounds: int, batch: str = "vmap", num_envs: int = 1, seed: int = 0
) -> Timing:
    """Compiles ``agents`` agents of ``config`` with ``num_envs`` envs each, resized to about ``work`` agent-steps
    a call, and times ``rounds`` calls (``batch``: ``"vmap"`` or ``"map"``)."""
    steps = steps_per_agent(agents, num_envs, work)
    config = dataclasses.replace(config, num_envs=num_envs, total_steps=steps)
    train = make_train(config)
    batched: Callable = jax.vmap(train) if batch == "vmap" else (lambda keys: jax.lax.map(train, keys))
    keys = jax.random.split(jax.random.key(seed), agents)
    start = time.perf_counter()
    compiled = jax.jit(batched).lower(keys).compile()
    compile_seconds = time.perf_counter() - start
    jax.block_until_ready(compiled(keys))
    durations = []
    for _ in range(rounds):
        start = time.perf_counter()
        jax.block_until_ready(compiled(keys))
        durations.append(time.perf_counter() - start)
    return Timing(agents, config.num_envs, config.total_steps, statistics.median(durations), compile_seconds, rounds)


def cpu_model() -> str:
    """The CPU's model name (Linux), else what ``platform`` knows."""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, object]:
    """Where and with what the figures were measured."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return {
        "cpu": cpu_model(),
        "cores": cores,
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "backend": jax.default_backend(),
        "devices": jax.device_count(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "threads": "XLA's defaults (XLA_FLAGS unset)" if not os.environ.get("XLA_FLAGS") else "see xla_flags",
        "load_average_before": os.getloadavg(),
    }


def human(rate: float) -> str:
    """``1234567`` -> ``'1.23M'``."""
    return f"{rate / 1e6:.2f}M" if rate >= 1e6 else f"{rate / 1e3:.0f}k"


def table(rows: list[dict]) -> str:
    """The Markdown table of the rows."""
    headers = [
        "agents",
        "1 env, epsilon 0.1",
        "compile (s)",
        "1 env, defaults",
        "lax.map, 1 env, epsilon 0.1",
        "best num_envs",
        "num_envs",
    ]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---:"] * len(headers)) + "|"]
    for row in rows:
        cells = [
            str(row["agents"]),
            human(row["exploring"]["agent_steps_per_second"]),
            f"{row['exploring']['compile_seconds']:.2f}",
            human(row["defaults"]["agent_steps_per_second"]),
            human(row["sequential"]["agent_steps_per_second"]),
            human(row["best_envs"]["agent_steps_per_second"]),
            str(row["best_envs"]["num_envs"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[dict], path: pathlib.Path) -> None:
    """Agent-steps per second against agents, log axes, the article's figure as a line."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.5), layout="constrained")
    axes = figure.subplots()
    agents = [row["agents"] for row in rows]
    for key, label, style in (
        ("exploring", "vmap, 1 env per agent, epsilon 0.1", "o-"),
        ("defaults", "vmap, 1 env per agent, defaults (no epsilon)", "s--"),
        ("sequential", "lax.map, 1 env per agent, epsilon 0.1", "^:"),
        ("best_envs", "vmap, best num_envs per agent, epsilon 0.1", "d-"),
    ):
        axes.plot(agents, [row[key]["agent_steps_per_second"] for row in rows], style, label=label)
    axes.axhline(ARTICLE_STEPS_PER_SECOND, color="grey", linewidth=1)
    axes.annotate("the article: 1.83M steps/s", (agents[-1], ARTICLE_STEPS_PER_SECOND), textcoords="offset points",
                  xytext=(0, 4), ha="right", color="grey")  # fmt: skip
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks(agents, [str(count) for count in agents], minor=False)
    axes.set_xticks([], minor=True)
    ticks = [scale * 10**power for power in (6, 7) for scale in (1, 2, 5)] + [1e8]
    axes.set_yticks(ticks, [f"{tick / 1e6:g}M" for tick in ticks], minor=False)
    axes.set_yticks([], minor=True)
    axes.set_ylim(1e6, 1e8)
    axes.set_xlabel("agents trained at once")
    axes.set_ylabel("agent-steps per second")
    axes.set_title("Tabular Q-learning on Doors, jitted JAX on one CPU")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.savefig(path, dpi=120)


def measure_row(agents: int, num_envs: list[int], work: int, rounds: int) -> dict:
    """One row of the table: ``agents`` agents with one env exploring, at the defaults, one after another
    (``lax.map``), and with each of ``num_envs`` envs per agent (the best of them kept); printed as it ends."""
    exploring = measure(EXPLORING, agents, work, rounds)
    defaults = measure(DEFAULTS, agents, work, rounds)
    sequential = measure(EXPLORING, agents, work, rounds, batch="map")
    by_envs = [measure(EXPLORING, agents, work * 2, rounds, num_envs=envs) for envs in num_envs]
    best = max(by_envs, key=lambda timing: timing.agent_steps_per_second)
    print(f"{agents:5d} agents: {human(exploring.agent_steps_per_second)} (1 env, epsilon 0.1), "
          f"{human(defaults.agent_steps_per_second)} (defaults), {human(sequential.agent_steps_per_second)} "
          f"(lax.map), {human(best.agent_steps_per_second)} ({best.num_envs} envs)",
          file=sys.stderr, flush=True)  # fmt: skip
    return {
        "agents": agents,
        "exploring": _timing_dict(exploring),
        "defaults": _timing_dict(defaults),
        "sequential": _timing_dict(sequential),
        "best_envs": _timing_dict(best),
        "by_envs": [_timing_dict(timing) for timing in by_envs],
    }


def report(rows: list[dict], about: dict, rounds: int, command: str) -> str:
    """The Markdown report: the command, how it was measured and on what, the table, and the verdict against the
    article's 1.83M agent-steps per second (30 agents, one env each, epsilon 0.1)."""
    thirty = next((row for row in rows if row["agents"] == 30), None)
    verdict = ""
    if thirty is not None:
        rate = thirty["exploring"]["agent_steps_per_second"]
        verdict = (
            f"30 agents, 1 env each, epsilon 0.1: {human(rate)} agent-steps/s against the article's 1.83M: "
            f"{'met' if rate >= ARTICLE_STEPS_PER_SECOND else 'MISSED'} ({rate / ARTICLE_STEPS_PER_SECOND:.1f}x)."
        )
    return "\n".join(
        [
            f"# `{command}`",
            "",
            "Agent-steps per second (agents x env steps per agent / wall seconds of the compiled call, median of "
            f"{rounds}); compile seconds are those of the first column. {about['cpu']}, {about['cores']} cores, "
            f"JAX {about['jax']}, {about['threads']}; load average {_load(about['load_average_before'])} before, "
            f"{_load(about['load_average_after'])} after.",
            "",
            table(rows),
            "",
            verdict,
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """The benchmark: flags, every row measured in turn, then the table, JSON and plot under ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="+", default=list(AGENTS))
    parser.add_argument("--num-envs", type=int, nargs="+", default=list(NUM_ENVS), help="envs per agent to try")
    parser.add_argument("--rounds", type=int, default=3, help="timed calls per configuration (median)")
    parser.add_argument("--quick", action="store_true", help="a quarter of the work per call, one round")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    work = AGENT_STEPS_PER_CALL // 4 if args.quick else AGENT_STEPS_PER_CALL
    rounds = 1 if args.quick else args.rounds

    about = machine()
    print(f"{about['cpu']}, {about['cores']} cores, JAX {about['jax']} on {about['backend']} "
          f"({about['devices']} device), threads: {about['threads']}, load {about['load_average_before']}",
          file=sys.stderr)  # fmt: skip
    rows = [measure_row(agents, args.num_envs, work, rounds) for agents in args.agents]
    about["load_average_after"] = os.getloadavg()

    args.out.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/throughput.py" + (" --quick" if args.quick else "")
    text = report(rows, about, rounds, command)
    (args.out / "throughput.md").write_text(text)
    (args.out / "throughput.json").write_text(
        json.dumps({"machine": about, "command": command, "rows": rows}, indent=1)
    )
    plot(rows, args.out / "throughput.png")
    print(text)
    return 0


def _timing_dict(timing: Timing) -> dict:
    return {**dataclasses.asdict(timing), "agent_steps_per_second": timing.agent_steps_per_second}


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in load)


if __name__ == "__main__":
    sys.exit(main())
