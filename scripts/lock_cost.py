"""How long a timing holds the GPU's measurement lock, in both timing paths: the timing child
(``time_target``: baselines, the final re-timing) and the verification's runner (``verify_kernel(timing=...)``:
every candidate of a search), each problem's bundled input kernel, alternating.

    python scripts/lock_cost.py [PROBLEM ...] [--pairs 3] [--device cuda] [--json out.json]

Per timing: seconds from taking the lock to the end of the timed calls (``steps_s``: locked -> measured),
the repetitions timed, seconds per repetition, and the seconds spent checking after the lock (measured ->
checked). It uses only what both this code and older commits have, so it compares them side by side: copy
it into a checkout of the older commit and run it there too (docs/timing-checks.md gives the commands).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from beamsearch.records.problems import bundled_problem_names, resolve_problem  # noqa: E402
from beamsearch.records.schema import RunSpec, TimingKnobs  # noqa: E402
from workers.harness.timing import time_target  # noqa: E402
from workers.harness.verify import verify_kernel  # noqa: E402


def _costs(result: object) -> dict[str, float] | None:
    steps = getattr(result, "steps_s", {}) or {}
    timing = getattr(result, "timing", None)
    if (
        getattr(result, "status", "") != "ok"
        or timing is None
        or "locked" not in steps
        or "measured" not in steps
    ):
        return None
    lock_s = steps["measured"] - steps["locked"]
    check_s = steps["checked"] - steps["measured"] if "checked" in steps else 0.0
    return {"lock_s": lock_s, "n": timing.n, "lock_ms_per_rep": lock_s * 1e3 / timing.n, "check_s": check_s,
            "median_ms": timing.median_ms}  # fmt: skip


def measure_problem(problem: str, device: str, pairs: int) -> dict[str, object]:
    resolved = resolve_problem(problem)
    shapes = "full" if device.startswith("cuda") else "small"
    spec = RunSpec(problem_path=resolved.problem_path, shapes=shapes, device=device)
    kernel = resolved.input_kernel_path
    rows: dict[str, list[dict[str, float]]] = {"child": [], "runner": []}
    problems: list[str] = []
    for _ in range(pairs):
        child = time_target(spec, kernel)
        verdict = verify_kernel(spec, kernel, timing=TimingKnobs())
        for path, result in (("child", child), ("runner", verdict.timing)):
            costs = _costs(result)
            if costs is None:
                problems.append(f"{path}: {getattr(result, 'status', verdict.status)}: "
                                f"{getattr(result, 'reason', verdict.reason)[:160]}")  # fmt: skip
            else:
                rows[path].append(costs)
    out: dict[str, object] = {"problem": problem, "problems": problems, "all": rows}
    for path, costs in rows.items():
        if costs:
            out[path] = {key: statistics.median(c[key] for c in costs) for key in costs[0]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", default=None)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results = [measure_problem(p, args.device, args.pairs) for p in args.problems or bundled_problem_names()]
    print(f"{'problem':40s} {'path':7s} {'lock s':>8s} {'reps':>5s} {'lock ms/rep':>12s} {'median ms':>10s} "
          f"{'check s':>8s}")  # fmt: skip
    for r in results:
        for path in ("child", "runner"):
            c = r.get(path)
            if not isinstance(c, dict):
                print(f"{r['problem']:40s} {path:7s} no timing: {r['problems']}")
                continue
            print(f"{r['problem']:40s} {path:7s} {c['lock_s']:8.3f} {c['n']:5.0f} {c['lock_ms_per_rep']:12.3f} "
                  f"{c['median_ms']:10.4f} {c['check_s']:8.3f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0 if all("child" in r and "runner" in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
