"""Do the two timing paths agree? The same kernels timed by the timing child (``time_target``: baselines,
the final re-timing) and by the verification's runner after its checks (``verify_kernel(timing=...)``:
every candidate of a search), alternating, on the same seed's inputs.

    python scripts/timing_paths.py [PROBLEM ...] [--pairs 3] [--device cuda] [--json out.json]

Each problem's bundled input kernel (all five by default). Prints each path's median of medians, their
ratio, and each path's wall seconds per kernel (the runner's: verification included).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from beamsearch.records.problems import bundled_problem_names, resolve_problem  # noqa: E402
from beamsearch.records.schema import RunSpec, TimingKnobs  # noqa: E402
from workers.harness.timing import time_target  # noqa: E402
from workers.harness.verify import verify_kernel  # noqa: E402


def compare(problem: str, device: str, pairs: int) -> dict[str, object]:
    resolved = resolve_problem(problem)
    shapes = "full" if device.startswith("cuda") else "small"
    spec = RunSpec(problem_path=resolved.problem_path, shapes=shapes, device=device)
    kernel = resolved.input_kernel_path
    child_ms: list[float] = []
    runner_ms: list[float] = []
    child_s: list[float] = []
    runner_s: list[float] = []
    problems: list[str] = []
    for _ in range(pairs):
        start = time.perf_counter()
        child = time_target(spec, kernel)
        child_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        verdict = verify_kernel(spec, kernel, timing=TimingKnobs())
        runner_s.append(time.perf_counter() - start)
        runner = verdict.timing
        if child.ranked_ms is None or runner is None or runner.ranked_ms is None:
            problems.append(f"child {child.status}: {child.reason[:120]}; verdict {verdict.status}: "
                            f"{verdict.reason[:120]}; runner {runner.status if runner else '-'}: "
                            f"{runner.reason[:120] if runner else ''}")  # fmt: skip
            continue
        child_ms.append(child.timing.median_ms)
        runner_ms.append(runner.timing.median_ms)
    row: dict[str, object] = {"problem": problem, "pairs": len(child_ms), "problems": problems}
    if child_ms:
        c, r = statistics.median(child_ms), statistics.median(runner_ms)
        row |= {"child_ms": c, "runner_ms": r, "runner_over_child": r / c, "child_all_ms": child_ms,
                "runner_all_ms": runner_ms, "child_wall_s": statistics.median(child_s),
                "runner_wall_s_with_verification": statistics.median(runner_s)}  # fmt: skip
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", default=None)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = [compare(p, args.device, args.pairs) for p in args.problems or bundled_problem_names()]
    print(f"{'problem':45s} {'child ms':>10s} {'runner ms':>10s} {'ratio':>7s} {'child s':>8s} {'runner s':>9s}")
    for row in rows:
        if "child_ms" not in row:
            print(f"{row['problem']:45s} no timing: {row['problems']}")
            continue
        print(f"{row['problem']:45s} {row['child_ms']:10.4f} {row['runner_ms']:10.4f} {row['runner_over_child']:7.3f} "
              f"{row['child_wall_s']:8.2f} {row['runner_wall_s_with_verification']:9.2f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all("child_ms" in row for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
