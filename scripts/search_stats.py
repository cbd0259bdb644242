"""Throughput of finished beam-search runs: time per round, GPU share spent measuring, candidates per minute.

    python scripts/search_stats.py RUN_DIR [RUN_DIR ...] [--gpus N ...]

Reads each run's summary.json (or state.json) and its tasks' result.json. A candidate is a task that
proposed a kernel (one with nothing new to propose is not counted). Per candidate, the wall
seconds of each task stage (verify, with the timing after it; child start-up, compiles and waits for
the GPU lock included) and of the profile jobs of the beam's kernels.
`timing share` is the seconds the timings held the GPU's lock (from the `locked` to the `measured`
step, in either timing path) over the rounds' GPU-seconds (wall x GPUs); `profiling share` is the part
of the rounds' wall time after their last candidate, when only profiles of the beam's kernels ran
(profiles taken while tasks ran are not in it; runs before 2026-11-24 profiled only after the round,
so their share is all of the profiling); `unused profiles`, those of kernels the beam did not keep
after all; `screened`, candidates whose timing stopped after its first repetitions, too slow to enter
the beam; `retried alone`, timings that failed a check other processes can fail and were taken again
with the GPU to itself, and `inconclusive`, those that failed alone too; `locked s/full timing` and `locked s/screened timing`, the mean seconds a timing held the lock; `lock wait s/timing`, the
mean seconds it waited for it (other timings, then the check steps under way).
Near 100 % together, the GPU's measurement is the limit; far below, the GPU mostly waits on processes
starting, compiles and checks.

With `--steps`, a second table: inside each job (verification, the timing after it, ncu), the median
time from the job's start at which each step ended, so two runs' slow stages can be compared step by
step.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from rich.console import Console
from rich.table import Table

from beamsearch.records.state import BeamState, RoundRecord, Summary, TaskResult


def finished_rounds(run: Path) -> list[RoundRecord]:
    summary_path = run / "summary.json"
    return (Summary.model_validate_json(summary_path.read_text()) if summary_path.is_file()
            else BeamState.model_validate_json((run / "state.json").read_text())).rounds  # fmt: skip


def task_results(run: Path, rounds: list[RoundRecord]) -> list[TaskResult]:
    """The candidates of the run's finished ``rounds``: a round cut short has no wall time to count
    against. (A round resumed after a cut counts its reused candidates against the resumed session's
    wall time only, which flatters it: compare runs that were not resumed.)"""
    finished = {r.round for r in rounds}
    found = [TaskResult.model_validate_json(p.read_text()) for p in run.glob("optimization_trace/round_*/candidates/*/result.json")]
    return [r for r in found if r.round in finished]


def stats(run: Path, gpus: int, rounds: list[RoundRecord], results: list[TaskResult]) -> dict[str, float | str]:
    """The run's throughput row; only its name and counts when no round finished (nothing to divide by)."""
    search_s = sum(r.wall_s for r in rounds)
    if not rounds or not search_s:
        return {"run": str(run), "gpus": gpus, "tasks": len(results), "candidates": 0, "rounds": len(rounds)}
    stage_s: dict[str, float] = {"profile": sum(r.profile_s for r in rounds)}  # the beam's kernels
    for r in results:
        for k, v in r.stage_s.items():
            if k not in ("diagnose", "reflect", "profile_parent"):
                stage_s[k] = stage_s.get(k, 0.0) + v
    # A candidate is a proposed kernel. A task whose proposer had nothing new to offer is not counted (it
    # takes no time with the tuner; the first versions of this script counted them, flattering the runs
    # that had more of them).
    n = sum(r.kernel is not None for r in results)
    return {
        "run": str(run),
        "gpus": gpus,
        "tasks": len(results),
        "candidates": n,
        "rounds": len(rounds),
        "s per round": search_s / len(rounds),
        "candidates per min": 60 * n / search_s,
        "candidates per GPU-min": 60 * n / (search_s * gpus),
        "profile wall s per round": sum(r.profile_wall_s for r in rounds) / len(rounds),
        # Timing's seconds are inside the verify stage now (the verified kernel is timed in its process).
        "timing share %": 100 * sum(locked_s(r) for r in results) / (search_s * gpus),
        "profiling share %": 100 * sum(r.profile_wall_s for r in rounds) / search_s,
        "unused profiles": sum(r.profiles_unused for r in rounds),
        "screened": sum(r.screened for r in results),
        # Timings a neighbour's GPU work disturbed: taken again alone, and those that failed alone too.
        "retried alone": sum(bool(r.timing and r.timing.retried_alone_after) for r in results),
        "inconclusive": sum(r.status == "inconclusive" for r in results),
        "locked s/full timing": _mean([locked_s(r) for r in results if locked_s(r) and not r.screened]),
        "locked s/screened timing": _mean([locked_s(r) for r in results if locked_s(r) and r.screened]),
        # The wait for the lock: the queue of other timings, then the drain of the check steps under way.
        "lock wait s/timing": _mean([r.timing.lock_wait_s for r in results if r.timing and locked_s(r)]),
        **{f"{k} s/cand": v / max(1, n) for k, v in sorted(stage_s.items())},
    }


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def locked_s(result: TaskResult) -> float:
    """Seconds the candidate's timing held the GPU's measurement lock."""
    steps = result.timing.steps_s if result.timing else {}
    return steps["measured"] - steps["locked"] if "measured" in steps and "locked" in steps else 0.0


def step_medians(results: list[TaskResult]) -> dict[str, float]:
    """Median end of each child step over the run's candidates, keyed ``stage: step``."""
    ends: dict[str, list[float]] = {}
    for r in results:
        jobs = [("verify", t.verdict.steps_s) for t in r.tries[:1]]
        jobs += [("time", r.timing.steps_s)] if r.timing else []
        jobs += [("ncu", r.profile.steps_s)] if r.profile else []
        for stage, steps in jobs:
            for step, s in steps.items():
                ends.setdefault(f"{stage}: {step}", []).append(s)
    return {k: statistics.median(v) for k, v in ends.items()}


def print_steps(results: dict[Path, list[TaskResult]], console: Console) -> None:
    runs = list(results)
    medians = {run: step_medians(results[run]) for run in runs}
    table = Table(title="median end of each step inside the children (s from the job's start; ncu: from handing the job over)")
    table.add_column("stage: step")
    for run in runs:
        table.add_column(str(run), justify="right")
    for key in dict.fromkeys(k for m in medians.values() for k in m):
        table.add_row(key, *[f"{medians[run][key]:.2f}" if key in medians[run] else "-" for run in runs])
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--gpus", nargs="+", type=int, help="GPUs each run used (default 1 each)")
    parser.add_argument("--steps", action="store_true", help="also the children's step-by-step times")
    args = parser.parse_args()
    gpus = args.gpus or [1] * len(args.runs)
    for run in args.runs:
        if not (run / "summary.json").is_file() and not (run / "state.json").is_file():
            parser.error(f"{run} is not a run folder: it has no summary.json or state.json")
    rounds = {run: finished_rounds(run) for run in args.runs}
    results = {run: task_results(run, rounds[run]) for run in args.runs}
    rows = [stats(run, g, rounds[run], results[run]) for run, g in zip(args.runs, gpus, strict=True)]
    columns = list(dict.fromkeys(k for row in rows for k in row))
    table = Table(title="beam-search throughput (rounds' wall time; set-up and final re-timing excluded)")
    for c in columns:
        table.add_column(c, justify="left" if c == "run" else "right")
    for row in rows:
        table.add_row(*[f"{row[c]:.2f}" if isinstance(row.get(c), float) else str(row.get(c, "-")) for c in columns])
    console = Console(width=250)
    console.print(table)
    if args.steps:
        print_steps(results, console)


if __name__ == "__main__":
    main()
