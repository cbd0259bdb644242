"""The kernels that tell a timed call from a checked one, timed in both paths beside the honest kernel:
the timing child (``time_target``) and the verification's runner (``verify_kernel(timing=...)``).

    python scripts/timed_cheats.py [--device cuda] [--shapes small] [--paths bench,search] [--kernels DIR]
                                   [--json out.json]

Prints each kernel's verdict, each path's status, median and reason. At small shapes a GPU call is
mostly launch overhead, so a kernel doing half the work is barely faster; ``--shapes full --paths bench``
shows the fake speed-up at the old commit in a few minutes. It uses only what older commits have
too: run from a checkout of 7d4ea0b with ``--kernels`` pointing at this checkout's
tests/data/kernels/adversarial, the cheats pass there with a faster median than the honest kernel's;
here they fail ``timed_outputs``. docs/timing-checks.md gives the commands.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beamsearch.records.schema import RunSpec, TimingKnobs  # noqa: E402
from workers.harness.timing import time_target  # noqa: E402
from workers.harness.verify import verify_kernel  # noqa: E402

KERNELS = ["honest.py", "timed_by_stack.py", "counts_calls.py", "timing_gap.py", "stale_when_timed.py",
           "every_other_call.py"]  # fmt: skip
BUDGET = dict(warmup_ms=20, rep_ms=50, min_reps=3, max_reps=20)  # as tests/test_adversarial.py times them


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--shapes", default="small")
    parser.add_argument("--kernels", default=str(ROOT / "tests" / "data" / "kernels" / "adversarial"))
    parser.add_argument(
        "--paths",
        default="bench,search",
        help="bench (the timing child), search (verified, then timed in its runner), or both",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    spec = RunSpec(problem_path=str(ROOT / "artifacts" / "36_RMSNorm" / "problem.py"), shapes=args.shapes,
                   device=args.device, dtype="bf16")  # fmt: skip
    rows = []
    for name in KERNELS:
        path = str(Path(args.kernels) / name)
        paths = args.paths.split(",")
        bench = time_target(spec, path, timeout_s=300, **BUDGET) if "bench" in paths else None
        verdict = (
            verify_kernel(spec, path, timeout_s=300, timing=TimingKnobs(**BUDGET))
            if "search" in paths
            else None
        )
        row = {"kernel": name, "verdict": verdict.status if verdict else None}
        for label, result in (("bench", bench), ("search", verdict.timing if verdict else None)):
            timing = getattr(result, "timing", None)
            row[label] = {"status": getattr(result, "status", None), "median_ms": timing.median_ms if timing else None,
                          "n": timing.n if timing else None, "reason": getattr(result, "reason", "")[:300]}  # fmt: skip
        rows.append(row)
        cells = [
            f"{row[p]['status']} {row[p]['median_ms'] or float('nan'):.4f} ms" for p in ("bench", "search")
        ]
        print(
            f"{name:22s} verdict {row['verdict'] or '-':10s} bench {cells[0]:22s} search {cells[1]:22s}",
            flush=True,
        )
        for p in ("bench", "search"):
            if row[p]["reason"]:
                print(f"    {p}: {row[p]['reason'][:200]}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
