"""benchmarks/level_trial.py's log and benchmarks/trial_table.py's reading of it (the GPU ladder's table)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from benchmark_scripts import load_benchmark

ROOT = pathlib.Path(__file__).resolve().parents[2]


def seed_rows(solved_by_step: list[tuple[int, bool, bool]]) -> list[dict]:
    return [
        {
            "step": step, "seconds": step / 100, "sps": 0.0, "greedy_success_rate": 0.5, "greedy_step_reward": 0.1,
            "rolling_reward": 0.2, "solved": first and second,
            "per_seed": [{"seed": 1, "solved": first}, {"seed": 2, "solved": second}],
        }
        for step, first, second in solved_by_step
    ]


def write_log(
    path: pathlib.Path, rows: list[dict], total_steps: int, hold_out_steps: int, finished: bool = True,
    stop_when_solved: bool = True,
) -> pathlib.Path:
    header = {
        "arm": "flax-scan", "level": "31x31", "seed": 1, "seeds": 2, "preset": "shared-31x31", "changes": {},
        "bar": 0.563, "total_steps": total_steps, "hold_out_steps": hold_out_steps,
        "stop_when_solved": stop_when_solved,
    }
    end = [{"finished": True, "env_steps": rows[-1]["step"] * 2, "wall_seconds": rows[-1]["seconds"]}]
    end = end if finished else []
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *rows, *end]), encoding="utf-8")
    return path


def test_a_seed_counts_as_solved_from_its_first_streak_that_spans_the_hold_out_window(tmp_path):
    table = load_benchmark("trial_table")
    # seed 1: solved at 100, lost at 200, solved again from 300 through 500; seed 2: only at the last evaluation.
    rows = seed_rows(
        [(100, True, False), (200, False, False), (300, True, False), (400, True, False), (500, True, True)]
    )
    anywhere = table.table_row(write_log(tmp_path / "any.jsonl", rows, total_steps=1000, hold_out_steps=0))
    assert "| 2/2 | 100 500 | 1 5 |" in anywhere  # with no hold-out window, each seed's first solved evaluation
    log = write_log(tmp_path / "run.jsonl", rows, total_steps=1000, hold_out_steps=200, finished=False)
    line = table.table_row(log)
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[:6] == ["run", "31x31", "flax-scan", "1/2", "300", "3"]
    assert cells[6:9] == ["500", "wall limit", "0.500"]
    assert cells[9] == "200"  # 500 env steps of each of 2 seeds in 5 s


def test_margins_count_each_seeds_unsolved_evaluations_after_its_first_solve(tmp_path):
    table = load_benchmark("trial_table")
    # seed 1: first solved at 100, then unsolved at 200 and 400 of the 4 after it; seed 2: never solved.
    rows = seed_rows(
        [(100, True, False), (200, False, False), (300, True, False), (400, False, False), (500, True, False)]
    )
    log = write_log(tmp_path / "m.jsonl", rows, total_steps=500, hold_out_steps=0)
    assert len(table.table_row(log).strip("|").split("|")) == 10  # no margins unless asked
    cells = [cell.strip() for cell in table.table_row(log, with_margins=True).strip("|").split("|")]
    assert len(cells) == 12 and cells[-2:] == ["100 -", "2 of 4, -"]
    held = seed_rows([(100, False, False), (200, True, True), (300, True, True)])
    cells = [cell.strip() for cell in table.table_row(write_log(tmp_path / "h.jsonl", held, 300, 0), True).split("|")]
    assert cells[-3:-1] == ["200 200", "0 of 1, 0 of 1"]


def test_a_run_solved_on_every_seed_stops_as_solved_and_one_at_its_budget_as_budget(tmp_path):
    table = load_benchmark("trial_table")
    solved = seed_rows([(100, True, True), (200, True, True)])
    line = table.table_row(write_log(tmp_path / "a.jsonl", solved, 200, 100))
    assert "| 2/2 | 100 100 | 1 1 | 200 | solved |" in line
    # A probe run without stopping when solved went on to its budget: it says so, solved or not.
    probe = table.table_row(write_log(tmp_path / "p.jsonl", solved, 200, 100, stop_when_solved=False))
    assert "| 2/2 | 100 100 | 1 1 | 200 | budget |" in probe
    unsolved = seed_rows([(100, False, False), (150, True, False)])  # its budget 200: ended short of it, by itself
    assert "| 0/2 |  |  | 150 | budget |" in table.table_row(write_log(tmp_path / "b.jsonl", unsolved, 200, 100))


def test_level_trial_logs_each_evaluation_and_the_table_reads_it(tmp_path):
    log = tmp_path / "trial.jsonl"
    done = subprocess.run(
        [
            sys.executable, "-W", "ignore", str(ROOT / "benchmarks" / "level_trial.py"), "--arm", "flax-numpy",
            "--level", "study", "--steps", "3000", "--eval-every", "1500", "--stop-when-solved", "--log", str(log),
            "--set", "learning_starts=500", "--set", "profile=false",
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    header, *rows, end = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert header["arm"] == "flax-numpy" and header["level"] == "study" and header["seeds"] == 1
    assert header["total_steps"] == 3000 and header["stop_when_solved"] is True
    assert [row["step"] for row in rows] == sorted({row["step"] for row in rows})
    assert 3000 - 16 <= rows[-1]["step"] <= 3000 and len(rows[-1]["per_seed"]) == 1  # whole vector steps of 16 envs
    assert rows[-1]["loss"] > 0.0 and 0.0 < rows[-1]["epsilon"] < 1.0  # learning started at 500 env steps
    assert rows[-1]["train_episode_length"] > 0.0
    assert end["finished"] is True and end["env_steps"] == rows[-1]["step"]
    printed = [line for line in done.stdout.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(printed) == len(rows)  # every printed evaluation is logged, and no other
    line = load_benchmark("trial_table").table_row(log)
    assert "| study | flax-numpy | 0/1 |" in line and f"| {rows[-1]['step']:,} | budget |" in line


def test_ladder_margins_count_the_unsolved_evaluations_after_a_runs_first_solve(tmp_path, capsys):
    margins = load_benchmark("ladder_margins")

    def log(name: str, states: list[tuple[float, str]]) -> str:
        lines = ["== level 31x31", "flax-scan x 1 seed: 100 of 500 env steps (20%), 1 s, 100 env steps/s, 4 s left"]
        lines += [
            f"flax-scan x 1 seed: evaluation at {100 * (i + 1):,} env steps: greedy success {greedy:.3f}, "
            f"rolling reward {0.5 + greedy / 10:.4f} (bar 0.5630), {state}"
            for i, (greedy, state) in enumerate(states)
        ]
        path = tmp_path / f"{name}.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return str(path)

    dipped = log("dipped", [(0.5, "not solved"), (0.995, "solved"), (0.985, "not solved"), (0.992, "solved and held")])
    kept = log("kept", [(0.99, "solved"), (0.999, "solved and held")])
    never = log("never", [(0.2, "not solved")])
    margins.main([dipped, kept, never])
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")] for line in lines[2:5]}
    assert rows["dipped"][1:6] == ["4", "200", "2", "1", "0.985"]
    assert rows["kept"][1:6] == ["2", "100", "1", "0", "0.999"]
    assert rows["never"][1:3] == ["1", "not solved"]
    assert lines[-1] == "held from the first solve: 1 of 2 solved runs (3 runs)"
    empty = tmp_path / "empty.log"
    empty.write_text("no evaluations here\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        margins.main([str(empty)])
