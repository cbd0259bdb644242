"""Honest kernels verified and timed by many processes on one GPU at once, as two searches' workers do,
without Ray: how many timings failed a check other processes' GPU work can fail, and the lock's cost.

    python scripts/gpu_neighbours.py [--problem 43] [--workers 8] [--seconds 120] [--out DIR]

Each of ``--workers`` processes loops for ``--seconds`` over the problem's bundled kernels (its input
kernel and its published best: honest ones), doing what a search task does with each:
``workers.actor.task.verify_candidate`` (the checks, then the timing in the kernel's process) and
``time_candidate`` (a timing failed only by such checks is taken again alone). It reads only functions
that 7d4ea0b has too, so ``PYTHONPATH=<a checkout of 7d4ea0b> python scripts/gpu_neighbours.py`` measures
the old code side by side. Per process one JSON line per kernel goes to DIR/worker-N.jsonl; the summary:
timings, first tries failed (and by which checks), failed after the retry alone, the seconds timings
waited for the lock and held it, and the lock's share of the wall time.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from collections import Counter
from pathlib import Path

CONTENDED = {"clocks_agree", "current_stream"}


def worker(index: int, problem: str, seconds: float, out: Path, device: str, shapes: str) -> None:
    from beamsearch.records.problems import resolve_problem
    from beamsearch.records.schema import RunSpec
    from workers.actor.task import task_seeds, time_candidate, verify_candidate

    ref = resolve_problem(problem)
    folder = Path(ref.problem_path).parent
    kernels = [
        p for p in (folder / "input_kernel.py", folder / "optimized_kernel_beam_search.py") if p.is_file()
    ]
    spec = RunSpec(problem_path=ref.problem_path, shapes=shapes, device=device, dtype="bf16")
    deadline = time.monotonic() + seconds
    n = 0
    with open(out / f"worker-{index}.jsonl", "w") as lines:
        while time.monotonic() < deadline:
            kernel = kernels[n % len(kernels)]
            seeds = task_seeds(f"w{index}-{n}", 0)
            verdict = verify_candidate(spec, str(kernel), seeds, 2)
            first = verdict.timing
            final = time_candidate(spec, str(kernel), seeds[0], verdict) if verdict.passed else None
            lines.write(json.dumps({
                "kernel": kernel.name, "verdict": verdict.status, "reason": verdict.reason[:200],
                "first": _timing(first), "final": _timing(final),
                "retried_alone_after": getattr(final, "retried_alone_after", "") if final else "",
            }) + "\n")  # fmt: skip
            lines.flush()
            n += 1


def _timing(t) -> dict | None:
    if t is None:
        return None
    steps = t.steps_s or {}
    held = steps["measured"] - steps["locked"] if "measured" in steps and "locked" in steps else 0.0
    return {"status": t.status, "reason": t.reason[:200], "failed": sorted(c.name for c in t.checks if not c.passed),
            "lock_wait_s": t.lock_wait_s, "held_s": held,
            "median_ms": t.timing.median_ms if t.timing else None}  # fmt: skip


def summarise(out: Path, wall_s: float) -> dict:
    rows = [
        json.loads(line) for p in sorted(out.glob("worker-*.jsonl")) for line in p.read_text().splitlines()
    ]
    firsts = [r["first"] for r in rows if r["first"]]
    finals = [r["final"] for r in rows if r["final"]]
    failed_by = Counter(",".join(t["failed"]) or t["reason"][:60] for t in firsts if t["status"] != "ok")
    contended = [
        t for t in firsts if t["status"] == "failed" and t["failed"] and set(t["failed"]) <= CONTENDED
    ]
    held = sum(t["held_s"] for t in firsts) + sum(
        t["held_s"] for r in rows if r["retried_alone_after"] and (t := r["final"])
    )
    return {
        "verifications": len(rows),
        "not verified": Counter(r["verdict"] for r in rows if r["verdict"] != "ok"),
        "timings": len(firsts),
        "first try failed": len([t for t in firsts if t["status"] != "ok"]),
        "first try failed, only checks others can fail": len(contended),
        "first try failed by": dict(failed_by),
        "retried alone": sum(bool(r["retried_alone_after"]) for r in rows),
        "failed after the retry": sum(t["status"] != "ok" for t in finals),
        "lock wait s (first tries)": round(sum(t["lock_wait_s"] for t in firsts), 1),
        "lock wait s per timing": round(sum(t["lock_wait_s"] for t in firsts) / max(1, len(firsts)), 3),
        "lock hold s": round(held, 1),
        "wall s": round(wall_s, 1),
        "lock's share %": round(100 * held / wall_s, 1),
        "timings per min": round(60 * len(firsts) / wall_s, 1),
        "median ms by kernel": {k: statistics.median(ms) for k in sorted({r["kernel"] for r in rows})
                                if (ms := [r["final"]["median_ms"] for r in rows if r["kernel"] == k and r["final"]
                                           and r["final"]["status"] == "ok"])},
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problem", default="43")
    parser.add_argument(
        "--workers", type=int, default=8, help="processes at once (two searches of 4 workers: 8)"
    )
    parser.add_argument(
        "--seconds", type=float, default=120.0, help="each process starts no kernel after this"
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/gpu-neighbours"))
    parser.add_argument(
        "--device", default="cuda", help="cpu: a smoke test of the script (interpreter, small shapes)"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("worker-*.jsonl"):
        old.unlink()
    start = time.monotonic()
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(
            target=worker,
            args=(
                i,
                args.problem,
                args.seconds,
                args.out,
                args.device,
                "full" if args.device.startswith("cuda") else "small",
            ),
        )
        for i in range(args.workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    summary = summarise(args.out, time.monotonic() - start)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
