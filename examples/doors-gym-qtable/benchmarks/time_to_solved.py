"""Env steps and wall seconds until tabular Q-learning solves Doors, per seed.

Run from this folder's parent (``examples/doors-gym-qtable``)::

    python benchmarks/time_to_solved.py            # seeds 0..9, under a minute on 2 cores

Solved: greedy success of at least 99 % over all 225 start/goal pairs (:func:`~doors_gym_qtable.greedy_evaluation`),
checked every ``eval_every`` env steps. Each run is a host loop over :func:`~doors_gym_qtable.make_parts`'s
segments that stops at the first solved evaluation, as an arm with ``stop_when_solved`` would run it: its wall
seconds are measured, not interpolated. Two settings per seed:

- one agent per run, with the key ``jax.random.split(jax.random.key(seed), 1)[0]``;
- 30 agents in one run (``vmap``), keys ``jax.random.split(jax.random.key(seed), 30)``; the run stops once
  every agent is solved, and each agent's first solved evaluation is recorded.

"Compile" is tracing, lowering and compiling ``init`` and ``run_segment`` (JAX's caches are cleared before
every run, so every run pays it); "run" is everything after, evaluations and host round trips included.
Writes ``results/time_to_solved.{md,json}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import statistics
import sys
import time

import jax
import numpy as np

from doors_gym_qtable import QConfig, make_parts

SOLVED_SUCCESS = 0.99


@dataclasses.dataclass
class SolveRun:
    """One run: its agents' env steps to solved (None: not within the budget) and its wall seconds."""

    seed: int
    agents: int
    steps_to_solved: list[int | None]
    compile_seconds: float
    run_seconds: float
    greedy_reward_at_solved: list[float | None]

    @property
    def solved(self) -> bool:
        """Every agent solved within the budget."""
        return all(steps is not None for steps in self.steps_to_solved)

    @property
    def last_steps(self) -> int | None:
        """Env steps per agent when the last agent was solved."""
        return max(self.steps_to_solved) if self.solved else None


def solve(config: QConfig, seed: int, agents: int) -> SolveRun:
    """Trains ``agents`` agents from ``seed`` until all are solved or the budget ends."""
    jax.clear_caches()
    keys = jax.random.split(jax.random.key(seed), agents)
    start = time.perf_counter()
    parts = make_parts(config)
    init = jax.jit(jax.vmap(parts.init)).lower(keys).compile()
    runner_shape = jax.eval_shape(jax.vmap(parts.init), keys)
    segment = jax.jit(jax.vmap(parts.run_segment, in_axes=(0, None))).lower(runner_shape, np.int32(0)).compile()
    compiled = time.perf_counter()

    runner = init(keys)
    steps_to_solved: list[int | None] = [None] * agents
    reward_at_solved: list[float | None] = [None] * agents
    for index in range(parts.num_segments):
        runner, (_, evaluation) = segment(runner, np.int32(index))
        success, reward = np.asarray(evaluation.success_rate), np.asarray(evaluation.mean_step_reward)
        for agent in range(agents):
            if steps_to_solved[agent] is None and success[agent] >= SOLVED_SUCCESS:
                steps_to_solved[agent] = int(config.evaluation_steps[index])
                reward_at_solved[agent] = float(reward[agent])
        if all(steps is not None for steps in steps_to_solved):
            break
    finished = time.perf_counter()
    return SolveRun(seed, agents, steps_to_solved, compiled - start, finished - compiled, reward_at_solved)


def summary(runs: list[SolveRun]) -> dict:
    """Medians and extremes over the runs of one setting."""
    solved = [run for run in runs if run.solved]
    agent_steps = [steps for run in runs for steps in run.steps_to_solved if steps is not None]
    rewards = [reward for run in runs for reward in run.greedy_reward_at_solved if reward is not None]
    return {
        "runs": len(runs),
        "runs_solved": len(solved),
        "agents_solved": len(agent_steps),
        "agents": sum(run.agents for run in runs),
        "median_agent_steps": statistics.median(agent_steps) if agent_steps else None,
        "max_agent_steps": max(agent_steps) if agent_steps else None,
        "median_run_steps": statistics.median(run.last_steps for run in solved) if solved else None,
        "median_compile_seconds": statistics.median(run.compile_seconds for run in runs),
        "median_run_seconds": statistics.median(run.run_seconds for run in runs),
        "max_total_seconds": max(run.compile_seconds + run.run_seconds for run in runs),
        "median_greedy_reward_at_solved": statistics.median(rewards) if rewards else None,
    }


def row(run: SolveRun) -> list[str]:
    """One Markdown row of a run."""
    steps = [steps for steps in run.steps_to_solved if steps is not None]
    if run.agents == 1:
        solved_steps = f"{steps[0]:,}" if steps else "not solved"
    else:
        solved_steps = (
            f"all {run.agents} by {run.last_steps:,} (median {statistics.median(steps):,.0f})"
            if run.solved
            else f"{len(steps)} of {run.agents}"
        )
    total = run.compile_seconds + run.run_seconds
    return [str(run.seed), str(run.agents), solved_steps, f"{total:.2f}", f"{run.compile_seconds:.2f}",
            f"{1e3 * run.run_seconds:.1f}"]  # fmt: skip


def note(agents: int, figures: dict) -> str:
    """One line of a setting's summary."""
    plural = "s" if agents > 1 else ""
    head = f"- {agents} agent{plural} per run: {figures['agents_solved']} of {figures['agents']} solved"
    if not figures["agents_solved"]:
        return head + "."
    return (
        f"{head}, median {figures['median_agent_steps']:,.0f} env steps (max {figures['max_agent_steps']:,}); "
        f"median compile {figures['median_compile_seconds']:.2f} s, median run "
        f"{1e3 * figures['median_run_seconds']:.1f} ms, slowest run {figures['max_total_seconds']:.2f} s in all; "
        f"median greedy reward per step at solved {figures['median_greedy_reward_at_solved']:.3f} (optimum 0.776)."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 30], help="agents per run")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    config = QConfig()

    runs: dict[int, list[SolveRun]] = {}
    for agents in args.agents:
        for seed in args.seeds:
            run = solve(config, seed, agents)
            runs.setdefault(agents, []).append(run)
            print(" | ".join(row(run)), file=sys.stderr, flush=True)

    headers = ["seed", "agents", "env steps to solved (per agent)", "wall s, compile included", "compile s",
               "run ms (compile excluded)"]  # fmt: skip
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---:"] * len(headers)) + "|"]
    lines += ["| " + " | ".join(row(run)) + " |" for setting in runs.values() for run in setting]
    summaries = {agents: summary(setting) for agents, setting in runs.items()}
    notes = [note(agents, figures) for agents, figures in summaries.items()]
    hyper = ", ".join(f"{field.name}={getattr(config, field.name)!r}" for field in dataclasses.fields(config))
    text = "\n".join(
        [
            "# `python benchmarks/time_to_solved.py`",
            "",
            f"`QConfig()` defaults: {hyper}. Solved: greedy success >= 99 % over all 225 pairs, checked every "
            f"{config.eval_every:,} env steps. JAX {jax.__version__} on {jax.default_backend()}, "
            f"{len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()[0]:.2f}.",
            "",
            *lines,
            "",
            *notes,
            "",
        ]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "time_to_solved.md").write_text(text)
    record = {
        "config": dataclasses.asdict(config),
        "summaries": summaries,
        "runs": [dataclasses.asdict(run) for setting in runs.values() for run in setting],
    }
    (args.out / "time_to_solved.json").write_text(json.dumps(record, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
