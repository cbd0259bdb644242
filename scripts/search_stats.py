"""Throughput of finished beam-search runs: time per round, GPU share spent measuring, candidates per minute.

    python scripts/search_stats.py RUN_DIR [RUN_DIR ...] [--gpus N ...]

Reads each run's summary.json (or state.json) and its candidates' result.json. Per candidate, the wall
seconds of each task stage (verify, time, profile...: child start-up, compiles and waits for the GPU lock
included); `lock stages share` is the time and profile stages' seconds over the rounds' GPU-seconds
(wall x GPUs): above 100 % the workers queue for the GPU lock, and the GPU's measurement is the limit.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from beamsearch.state import BeamState, Summary, TaskResult


def stats(run: Path, gpus: int) -> dict[str, float | str]:
    summary_path = run / "summary.json"
    rounds = (Summary.model_validate_json(summary_path.read_text()) if summary_path.is_file()
              else BeamState.model_validate_json((run / "state.json").read_text())).rounds  # fmt: skip
    results = [TaskResult.model_validate_json(p.read_text()) for p in run.glob("optimization_trace/round_*/candidates/*/result.json")]
    search_s = sum(r.wall_s for r in rounds)
    stage_s: dict[str, float] = {}
    for r in results:
        r.stage_s.pop("diagnose", None), r.stage_s.pop("reflect", None), r.stage_s.pop("profile_parent", None)
        for k, v in r.stage_s.items():
            stage_s[k] = stage_s.get(k, 0.0) + v
    n = len(results)
    return {
        "run": run.name,
        "gpus": gpus,
        "candidates": n,
        "rounds": len(rounds),
        "s per round": search_s / len(rounds),
        "candidates per min": 60 * n / search_s,
        "candidates per GPU-min": 60 * n / (search_s * gpus),
        "lock stages share %": 100 * (stage_s.get("time", 0) + stage_s.get("profile", 0)) / (search_s * gpus),
        **{f"{k} s/cand": v / n for k, v in sorted(stage_s.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--gpus", nargs="+", type=int, help="GPUs each run used (default 1 each)")
    args = parser.parse_args()
    gpus = args.gpus or [1] * len(args.runs)
    rows = [stats(run, g) for run, g in zip(args.runs, gpus, strict=True)]
    columns = list(dict.fromkeys(k for row in rows for k in row))
    table = Table(title="beam-search throughput (rounds' wall time; set-up and final re-timing excluded)")
    for c in columns:
        table.add_column(c, justify="left" if c == "run" else "right")
    for row in rows:
        table.add_row(*[f"{row[c]:.2f}" if isinstance(row.get(c), float) else str(row.get(c, "-")) for c in columns])
    Console(width=250).print(table)


if __name__ == "__main__":
    main()
