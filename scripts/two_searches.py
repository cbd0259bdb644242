"""Two searches on one GPU at once, and what sharing it cost: honest kernels failed, the lock's share.

    python scripts/two_searches.py run --out DIR [--problem 43] [--limit-s 330] [--tree DIR] [-- SEARCH ARGS]
    python scripts/two_searches.py report RUN_DIR [RUN_DIR ...]

``run`` starts two ``python -m beamsearch.run`` of one bundled problem side by side (3 rounds, 4 workers
each, offline tuner: every kernel is honest), each into its own folder (DIR/search-a, DIR/search-b) and
each stopped by SIGINT after ``--limit-s`` (a run cut short keeps its finished rounds), then reports on
both. ``--tree``: run the searches from another checkout (an older commit, to compare side by side); the
report reads the traces as plain JSON, so it reads either version's.

Per run, from its trace:
- ``candidates``, ``timed``: kernels proposed, and those whose timing passed (ranked);
- ``first try failed``: timings that failed a check other processes' GPU work can fail (``current_stream``,
  ``clocks_agree``) and were taken again alone (``retried_alone_after``): honest kernels failed by a
  neighbour, where the GPU's use lock should leave none;
- ``not ranked``: timings that ended without a time (``not_timed``, or ``inconclusive``: failed alone too,
  by such checks only); ``inconclusive`` of those;
- ``final re-timing``: the finalists whose re-timing failed, and how (the summary's statuses);
- ``lock wait s``, ``lock hold s``: seconds the candidates' timings waited for the measurement lock (the
  drain of other jobs' GPU use included) and held it (from the ``locked`` to the ``measured`` step);
- ``rounds wall s``, ``candidates per min``.
The last line: both runs' hold seconds over the wall time from the first round's start to the last
round's end, the measurement lock's share of the one GPU both searches shared.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONTENDED = ("current_stream", "clocks_agree")
SEARCH_ARGS = ["--rounds", "3", "--workers", "4", "--beam-width", "2", "--directions", "4", "--baselines", "eager",
               "--quiet"]  # fmt: skip


def run(out: Path, problem: str, limit_s: float, tree: Path, extra: list[str]) -> list[Path]:
    """Both searches at once; each stopped by SIGINT after ``limit_s``. Returns their folders."""
    out.mkdir(parents=True, exist_ok=True)
    # The tree's code first, then what was on the path (the GPU machine's packages, Ray among them).
    path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH", "")]))
    env = {**os.environ, "PYTHONPATH": path, "RAY_AUTH_MODE": "disabled"}
    procs: list[tuple[Path, subprocess.Popen]] = []
    for name in ("search-a", "search-b"):
        folder = out / name
        args = [
            sys.executable,
            "-m",
            "beamsearch.run",
            "--problem",
            problem,
            "--out",
            str(folder),
            *SEARCH_ARGS,
            *extra,
        ]
        with open(out / f"{name}.log", "w") as log:  # the child keeps its own copy of the file
            procs.append((folder, subprocess.Popen(args, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                   start_new_session=True)))  # fmt: skip
    deadline = time.monotonic() + limit_s
    for folder, proc in procs:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)  # the run saves its finished rounds and stops
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        print(f"{folder.name}: exit {proc.returncode}")
    return [folder for folder, _ in procs]


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_stats(folder: Path) -> dict[str, Any]:
    """One run's counts and seconds (see the module's docstring), from its finished rounds."""
    summary = _json(folder / "summary.json")
    state = _json(folder / "state.json") or {}
    record = summary or state
    rounds = record.get("rounds", [])
    finished = {r["round"] for r in rounds}
    results = [r for p in sorted(folder.glob("optimization_trace/round_*/candidates/*/result.json"))
               if (r := _json(p)) is not None and r.get("round") in finished]  # fmt: skip
    timings = [r["timing"] for r in results if r.get("timing")]
    first_failed = [t for t in timings if any(c in t.get("retried_alone_after", "") for c in CONTENDED)]
    final = (summary or {}).get("final_retime", [])
    ends = [r.get("finished_at", 0.0) for r in results]
    return {
        "run": folder.name,
        "rounds": len(rounds),
        "candidates": sum(r.get("kernel") is not None for r in results),
        "timed": sum(t.get("status") == "ok" for t in timings),
        "first try failed": len(first_failed),
        "first try failed, passed alone": sum(t["status"] == "ok" for t in first_failed),
        "not ranked": sum(r["status"] in ("not_timed", "inconclusive") for r in results),
        "inconclusive": sum(r["status"] == "inconclusive" for r in results),
        "not ranked reasons": sorted({r["reason"][:160] for r in results if r["status"] in ("not_timed", "inconclusive")}),
        "final re-timing": [f"{t['id']}: {_outcome(t)[:120]}" + (f" (first: {t['retried_alone_after'][:80]})"
                            if t.get("retried_alone_after") else "") for t in final],  # fmt: skip
        "best": f"{(summary or {}).get('best_id')} {(summary or {}).get('best_ms')}",
        "lock wait s": sum(t.get("lock_wait_s", 0.0) for t in timings),
        "lock hold s": sum(held_s(t) for t in timings),
        "rounds wall s": sum(r.get("wall_s", 0.0) for r in rounds),
        "candidates per min": 60 * sum(r.get("kernel") is not None for r in results) / max(1e-9, sum(r.get("wall_s", 0.0) for r in rounds)),
        "last candidate at": max(ends, default=0.0),
        "rounds started at": state.get("started_at") or 0.0,
    }  # fmt: skip


def _outcome(final: dict[str, Any]) -> str:
    """A final re-timing's status and reason (older summaries held both in the status)."""
    return f"{final['status']}: {final['reason']}" if final.get("reason") else final["status"]


def held_s(timing: dict[str, Any]) -> float:
    """Seconds a timing held the measurement lock: from its ``locked`` step to its ``measured`` one."""
    steps = timing.get("steps_s") or {}
    return steps["measured"] - steps["locked"] if "measured" in steps and "locked" in steps else 0.0


def report(folders: list[Path]) -> list[dict[str, Any]]:
    rows = [run_stats(f) for f in folders]
    for row in rows:
        print(f"== {row['run']}")
        for key, value in row.items():
            if key in ("run", "last candidate at", "rounds started at"):
                continue
            if isinstance(value, list):
                print(f"  {key}:" + ("" if value else " none"))
                for line in value:
                    print(f"    {line}")
            else:
                print(f"  {key}: {value:.2f}" if isinstance(value, float) else f"  {key}: {value}")
    starts = [r["rounds started at"] for r in rows if r["rounds started at"]]
    ends = [r["last candidate at"] for r in rows if r["last candidate at"]]
    window_s = max(ends) - min(starts) if starts and ends else 0.0
    hold = sum(r["lock hold s"] for r in rows)
    failed = sum(r["first try failed"] for r in rows)
    unranked = sum(r["not ranked"] for r in rows)
    share = f"{100 * hold / window_s:.1f} %" if window_s > 0 else "-"
    print(f"== both: {failed} honest kernels failed a timing check other processes can fail (first try), "
          f"{unranked} not ranked; lock held {hold:.1f} s, waited {sum(r['lock wait s'] for r in rows):.1f} s, "
          f"over {window_s:.0f} s of rounds: lock's share {share}")  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="two searches at once on this machine's GPU, then the report")
    go.add_argument("--out", type=Path, required=True)
    go.add_argument("--problem", default="43")
    go.add_argument("--limit-s", type=float, default=330.0, help="each search is stopped (SIGINT) after this")
    go.add_argument("--tree", type=Path, default=ROOT, help="the checkout to run the searches from")
    go.add_argument("extra", nargs="*", help="more beamsearch.run arguments (after --)")
    rep = sub.add_parser("report", help="the report on finished (or cut short) runs")
    rep.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        report(run(args.out.resolve(), args.problem, args.limit_s, args.tree.resolve(), args.extra))
    else:
        report(args.runs)


if __name__ == "__main__":
    main()
