"""The anchor for "search against sweep": every point of the starting kernel's knob space, through the
search's own verification and clock.

    python scripts/sweep.py --problem 36_RMSNorm --workers 4 --out runs/sweep-rmsnorm [--against RUN_DIR]

A sweep is a beam-search run (``python -m beamsearch.run --sweep``) whose optimiser tries every point of
the starting kernel's space (the searcher's exhaustive strategy, to the end; a point above a learned
resource limit is skipped, as it would fail the same way): the same worker pool, tasks, verification
children, timing under the GPU lock and final re-timing as a search, so the two runs' numbers compare. Beam width 1 (only the best matters), no ncu profiles (they only guide a search), no
time budget. Any other option of ``beamsearch.run`` passes through (``--shapes``, ``--baselines``, ...).

Prints the best point, its time, the number of candidates and the minutes, and a JSON line with the same;
with ``--against RUN_DIR`` (a search's run folder) the search's best and cost beside the sweep's.
Exits 1 when the sweep found no kernel that verified.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from beamsearch.records.config import SWEEP_ROUNDS  # noqa: E402
from beamsearch.records.problems import ProblemNotFound, resolve_problem  # noqa: E402
from beamsearch.records.state import BeamState, Summary  # noqa: E402
from workers.proposers.knob_space import describe, points_within_limits  # noqa: E402
from workers.proposers.searcher import Searcher  # noqa: E402

SWEEP_OPTIONS = [
    "--sweep",
    "--rounds",
    str(SWEEP_ROUNDS),
    "--budget-minutes",
    "none",
    "--beam-width",
    "1",
    "--no-profile",
]


def sweep_args(problem: str, out: Path, rest: list[str]) -> list[str]:
    """``beamsearch.run``'s arguments for a sweep; the sweep's own options come last, so they hold."""
    return ["--problem", problem, "--out", str(out), *rest, *SWEEP_OPTIONS]


def sweep_result(out: Path) -> dict:
    """The best point of the starting kernel's space, its time, and what the sweep cost, from a finished run."""
    summary = Summary.model_validate_json((out / "summary.json").read_text())
    state = BeamState.model_validate_json((out / "state.json").read_text())
    root = next((s for s in state.optimiser.searches.values() if s.root_id == "input"), None)
    best = Searcher(root.space, 0, state=root.searcher).best() if root else None
    return {
        "run": str(out),
        "space_points": root.space.size() if root else 1,
        "points_within_limits": points_within_limits(root.space) if root else 1,  # what a sweep covers
        "best_point": best[0] if best else None,
        "best_change": describe(root.space, best[0]) if root and best else "",
        "best_point_ms": best[1] if best else None,  # as first timed, among the sweep's candidates
        "best_ms": summary.best_ms,  # re-timed at the end, side by side with the starting kernel
        "input_ms": summary.input_ms,
        "candidates": summary.candidates,
        "minutes": summary.wall_s / 60,
        "stop_reason": summary.stop_reason,
    }


def against(search: Path, sweep: dict) -> dict:
    """A search's best and cost beside the sweep's: within how much of the sweep's best, at what share
    of its candidates."""
    s = Summary.model_validate_json((search / "summary.json").read_text())
    ratio = s.best_ms / sweep["best_ms"] if s.best_ms and sweep["best_ms"] else None
    return {
        "search_run": str(search),
        "search_best_ms": s.best_ms,
        "search_candidates": s.candidates,
        "search_minutes": s.wall_s / 60,
        "search_over_sweep_ms": ratio,  # 1.02: the search's best is 2 % slower than the sweep's
        "candidate_share": s.candidates / sweep["candidates"] if sweep["candidates"] else None,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--problem", required=True, help="bundled problem name (or unique prefix) or a path to problem.py"
    )
    p.add_argument("--out", help="the sweep's run folder; default: runs/sweep-<problem>-<time>")
    p.add_argument("--against", type=Path, help="a finished search's run folder, to compare with")
    args, rest = p.parse_known_args(argv)
    try:
        name = resolve_problem(args.problem).name
    except ProblemNotFound as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.against is not None and not (args.against / "summary.json").is_file():
        print(f"error: --against {args.against}: no summary.json (not a finished run)", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else ROOT / "runs" / f"sweep-{name}-{time.strftime('%Y%m%d-%H%M%S')}"

    from beamsearch.run import main as run_main

    code = run_main(sweep_args(args.problem, out, rest))
    if not (out / "summary.json").is_file():
        return code or 1
    result = sweep_result(out)
    print(f"sweep of {name}: {result['space_points']} points, {result['candidates']} candidates in "
          f"{result['minutes']:.1f} min; best {result['best_change'] or 'the starting kernel'}: "
          f"{result['best_point_ms']} ms (re-timed {result['best_ms']} ms; input {result['input_ms']} ms)")  # fmt: skip
    if args.against is not None:
        result |= against(args.against, result)
        ratio, share = result["search_over_sweep_ms"], result["candidate_share"]
        print(f"search {args.against}: best {result['search_best_ms']} ms"
              + (f", {ratio:.3f}x the sweep's" if ratio else "") + f", with {result['search_candidates']} candidates"
              + (f" ({share:.0%} of the sweep's)" if share else "") + f" in {result['search_minutes']:.1f} min")  # fmt: skip
    print(json.dumps(result))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
