"""Profile the five bundled input kernels: one table of roofline class, SOL, floor and time in ncu.

    python scripts/profile_inputs.py [problem ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from beamsearch.records.problems import bundled_problem_names, resolve_problem
from beamsearch.records.schema import RunSpec
from profiling.profile import report_kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("problems", nargs="*")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    table = Table(title="input kernels: roofline and floor")
    for col in ("problem", "kernels", "bottleneck", "compute SOL %", "memory SOL %", "tensor cores",
                "floor ms", "measured ms", "% of floor", "ncu s"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("problem", "kernels", "bottleneck") else "right")
    reports = []
    for name in args.problems or bundled_problem_names():
        problem = resolve_problem(name)
        spec = RunSpec(problem_path=problem.problem_path, shapes="full", device="cuda")
        r = report_kernel(problem.name, spec, problem.input_kernel_path)
        reports.append(r)
        roof, t, f = r.roofline, r.timing.timing, r.floor
        table.add_row(
            problem.name[:28],
            ", ".join(k.name for k in r.profile.kernels) or r.profile.reason[:60],
            roof.bottleneck if roof else "-",
            f"{roof.compute_sol_pct:.1f}" if roof and roof.compute_sol_pct is not None else "-",
            f"{roof.memory_sol_pct:.1f}" if roof and roof.memory_sol_pct is not None else "-",
            ("yes" if roof.tensor_cores_used else "no") if roof else "-",
            f"{f.floor_ms:.4f}" if f else "-",
            f"{t.median_ms:.4f}" if t else "-",
            f"{r.pct_of_floor:.1f}" if r.pct_of_floor is not None else "-",
            f"{r.profile.duration_s:.1f}",
        )
    Console(width=200).print(table)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([r.model_dump() for r in reports], fh, indent=2)


if __name__ == "__main__":
    main()
