"""Benchmark: the harness's overhead per candidate next to the kernel's own compile and run time.

    python scripts/harness_overhead.py [problem ...] [--json out.json]

For each problem, verifies and times its input kernel through the real child-process path and splits
the wall time into: child start (interpreter, torch and Triton imports, CUDA init), inputs + reference +
checks, and the kernel's own calls (the first call compiles). Overhead = wall - kernel calls.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from rich.console import Console
from rich.table import Table

from beamsearch.records.problems import bundled_problem_names, resolve_problem
from beamsearch.records.schema import RunSpec
from workers.harness.timing import time_target
from workers.harness.verify import verify_kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("problems", nargs="*")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shapes = "full" if device == "cuda" else "small"
    table = Table(title=f"harness overhead per candidate ({device}, {shapes} shapes, bf16)")
    for col in ("problem", "verify wall s", "child start s", "inputs+ref+checks s", "kernel calls s",
                "of which 1st call s", "child exit s", "verify overhead s", "timing wall s",
                "timing 1st call s"):  # fmt: skip
        table.add_column(col, justify="right" if col != "problem" else "left")
    rows = []
    for name in args.problems or bundled_problem_names():
        problem = resolve_problem(name)
        spec = RunSpec(problem_path=problem.problem_path, shapes=shapes, device=device)
        start = time.perf_counter()
        verdict = verify_kernel(spec, problem.input_kernel_path)
        timing = time_target(spec, problem.input_kernel_path)
        row = {
            "problem": problem.name,
            "status": verdict.status,
            "verify_wall_s": verdict.duration_s,
            "child_start_s": verdict.startup_s,
            "checks_s": verdict.child_s - verdict.kernel_call_s,
            "kernel_call_s": verdict.kernel_call_s,
            "first_call_s": verdict.first_call_s,
            "child_exit_s": verdict.duration_s - verdict.startup_s - verdict.child_s,
            "verify_overhead_s": verdict.duration_s - verdict.kernel_call_s,
            "timing_wall_s": timing.duration_s,
            "timing_first_call_s": timing.first_call_s,
            "total_s": time.perf_counter() - start,
        }
        rows.append(row)
        table.add_row(problem.name[:24], *(f"{row[k]:.2f}" for k in list(row)[2:-1]))
        if verdict.status != "ok":
            print(f"{problem.name}: {verdict.status}: {verdict.reason}")
    Console(width=200).print(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
