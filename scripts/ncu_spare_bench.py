"""ncu with and without a spare waiting: the profiled process started for the job, or started ahead.

    python scripts/ncu_spare_bench.py 43_Max_Pooling_3D --pairs 4

Profiles the problem's input kernel ``2 x pairs`` times, interleaved: *cold* (no spare: ncu, Python
and torch start for the job, as every profile did before spares) then *warm* (a spare started by the
previous job, given time to import). Prints each time and the medians, side by side.
"""

from __future__ import annotations

import argparse
import statistics
import time

from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import RunSpec
from profiling.ncu import profile_kernel
from workers.harness import child_process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--settle-s", type=float, default=10.0, help="time a spare gets to start before a warm job")
    args = parser.parse_args()
    problem = resolve_problem(args.problem)
    spec = RunSpec(problem_path=problem.problem_path, shapes="full", device="cuda")
    seconds: dict[str, list[float]] = {"cold": [], "warm": []}
    for _ in range(args.pairs):
        for kind in ("cold", "warm"):
            if kind == "cold":
                child_process._kill_spares()
            else:
                time.sleep(args.settle_s)
            profile = profile_kernel(spec, problem.input_kernel_path)
            assert profile.available, profile.reason
            seconds[kind].append(profile.duration_s)
            print(f"{kind}: {profile.duration_s:.2f} s  steps {profile.steps_s}", flush=True)
    cold, warm = (statistics.median(seconds[k]) for k in ("cold", "warm"))
    print(f"median cold {cold:.2f} s, warm {warm:.2f} s: warm/cold {warm / cold:.2f}")


if __name__ == "__main__":
    main()
