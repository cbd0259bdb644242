"""Cross-check our clock against ``triton.testing.do_bench`` on the same kernels and inputs.

    python scripts/compare_do_bench.py PROBLEM_DIR_OR_FILE KERNEL [KERNEL ...] [--json out.json]

Ours: ``workers.harness.timing.time_target`` (child process, L2 flush, device-wide sync, median). do_bench: in
this process, same seed-0 inputs, ``return_mode="median"`` (it flushes L2 too, and records the end event
on the current stream only). Prints both medians and their ratio.
"""

from __future__ import annotations

import argparse
import json

import torch
import triton.testing

from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import RunSpec
from workers.harness.binding import bind, model_values
from workers.harness.problem_instance import import_file, instantiate, load_problem_module
from workers.harness.timing import time_target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("problem")
    parser.add_argument("kernels", nargs="+")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    problem = resolve_problem(args.problem)
    spec = RunSpec(problem_path=problem.problem_path, shapes="full", device="cuda")
    instance = instantiate(load_problem_module(spec), spec, seed=0)
    rows = []
    for i, kernel in enumerate(args.kernels):
        ours = time_target(spec, kernel)
        fn = bind(import_file(kernel, f"dobench_kernel_{i}").kernel_function, instance.inputs, model_values(instance.model))
        with torch.no_grad():
            theirs = triton.testing.do_bench(fn, warmup=100, rep=500, return_mode="median")
        ours_ms = ours.timing.median_ms if ours.timing else float("nan")
        rows.append({"problem": problem.name, "kernel": kernel, "ours_ms": ours_ms, "do_bench_ms": theirs,
                     "ratio": ours_ms / theirs, "status": ours.status, "reason": ours.reason})  # fmt: skip
        print(f"{problem.name[:32]:32s} {kernel.split('/')[-1]:36s} ours {ours_ms:8.4f} ms  "
              f"do_bench {theirs:8.4f} ms  ours/do_bench {ours_ms / theirs:6.3f}  {ours.status} {ours.reason}")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
