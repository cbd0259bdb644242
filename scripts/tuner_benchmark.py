"""Benchmark (not a test): the offline tuner alone, from each problem's input kernel.

    python scripts/tuner_benchmark.py [problem ...] [--proposals 16] [--parallel 4] [--json out.json]

Per problem: profile the input kernel with ncu to get its roofline class (the tuner's direction), ask
the tuner for N proposals in one call, verify them (``--parallel`` children at a time: compiles are
CPU-bound), time the input kernel and every passing proposal with the bench clock (one at a time, under
the GPU lock), and report the best against the input kernel and against the problem's floor.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from beamsearch.records.problems import bundled_problem_names, resolve_problem
from beamsearch.records.schema import Diagnosis, Kernel, RunSpec
from profiling.ncu import profile_kernel
from profiling.roofline import classify
from profiling.work import problem_floor
from workers.harness.timing import time_target
from workers.harness.verify import verify_kernel
from workers.proposers.tuner import TunerProposer


def bench_problem(name: str, n: int, parallel: int, folder: Path) -> dict:
    problem = resolve_problem(name)
    spec = RunSpec(problem_path=problem.problem_path, shapes="full", device="cuda")
    start = time.perf_counter()
    profile = profile_kernel(spec, problem.input_kernel_path)
    roofline = classify(profile.combined) if profile.available else None
    parent = Kernel(source=Path(problem.input_kernel_path).read_text(), origin="input")
    proposals = TunerProposer(per_call=n).propose(parent, Diagnosis(bottlenecks=[], source="rules", roofline=roofline), [])
    paths = []
    for i, kernel in enumerate(proposals):
        path = folder / f"{problem.name[:2]}_proposal_{i:02d}.py"
        path.write_text(kernel.source)
        paths.append(path)
    with ThreadPoolExecutor(parallel) as pool:
        verdicts = list(pool.map(lambda p: verify_kernel(spec, str(p)), paths))
    base = time_target(spec, problem.input_kernel_path)
    rows = []
    for kernel, path, verdict in zip(proposals, paths, verdicts, strict=True):
        timing = time_target(spec, str(path)) if verdict.passed else None
        ms = timing.ranked_ms if timing else None
        rows.append({"note": kernel.note, "status": verdict.status if not verdict.passed else (timing.status if timing else "-"),
                     "reason": verdict.reason if not verdict.passed else "", "median_ms": ms})  # fmt: skip
    floor = problem_floor(spec, base.timing.device_name)
    timed = [r for r in rows if r["median_ms"]]
    best = min(timed, key=lambda r: r["median_ms"]) if timed else None
    return {
        "problem": problem.name,
        "bottleneck": roofline.bottleneck if roofline else f"unknown ({profile.reason})",
        "input_ms": base.timing.median_ms,
        "floor_ms": floor.floor_ms,
        "proposals": len(proposals),
        "passed": len(timed),
        "best_ms": best["median_ms"] if best else None,
        "best_note": best["note"] if best else "",
        "seconds": time.perf_counter() - start,
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("problems", nargs="*")
    parser.add_argument("--proposals", type=int, default=16)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.problems or bundled_problem_names():
            r = bench_problem(name, args.proposals, args.parallel, Path(tmp))
            results.append(r)
            print(f"{r['problem']}: {r['passed']}/{r['proposals']} passed, input {r['input_ms']:.4f} ms, "
                  f"best {r['best_ms']} ms ({r['best_note']}), {r['seconds']:.0f} s", flush=True)  # fmt: skip
    table = Table(title=f"offline tuner: {args.proposals} proposals from each input kernel")
    for col in ("problem", "class", "passed", "input ms", "best ms", "speedup", "input % of floor",
                "best % of floor", "best change", "seconds"):  # fmt: skip
        table.add_column(col)
    for r in results:
        best = r["best_ms"]
        table.add_row(r["problem"][:28], r["bottleneck"], f"{r['passed']}/{r['proposals']}", f"{r['input_ms']:.4f}",
                      f"{best:.4f}" if best else "-", f"{r['input_ms'] / best:.2f}x" if best else "-",
                      f"{100 * r['floor_ms'] / r['input_ms']:.1f}", f"{100 * r['floor_ms'] / best:.1f}" if best else "-",
                      r["best_note"], f"{r['seconds']:.0f}")  # fmt: skip
    Console(width=220).print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
