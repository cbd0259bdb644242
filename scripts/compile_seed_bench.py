"""The compiler seed against the compiler, on a GPU: record, write the seed, verify and time both.

    python scripts/compile_seed_bench.py --problems 26 36 43 --out DIR [--recordings DIR]

Per problem: ``workers/harness/record_inductor.py`` in its own process (a fresh max-autotune compile; skipped
with ``--recordings`` holding ``<problem>/output_code.py``), the seed from that recording, then
``beamsearch.bench``'s verify-and-time of the seed beside ``compile-max-autotune`` (timed in its own
child by the same clock). Writes DIR/compile_seed_bench.json (one row per problem) and the seeds as
DIR/seed_<problem>.py; prints a table. The seed should match max-autotune's time: same kernels, same
configs, launched by Triton's own launcher instead of Inductor's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beamsearch.bench import run_bench  # noqa: E402
from beamsearch.records.problems import resolve_problem  # noqa: E402
from beamsearch.records.schema import RunSpec  # noqa: E402
from workers.proposers.compile_seed import seed_from_recording  # noqa: E402


def bench_problem(name: str, out: Path, recordings: Path, device: str) -> dict:
    problem = resolve_problem(name)
    recording = recordings / problem.name
    row: dict = {"problem": problem.name}
    if not (recording / "output_code.py").is_file():
        cmd = [sys.executable, "-m", "workers.harness.record_inductor", "--problem", problem.name,
               "--out", str(recordings)]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            return row | {"unavailable": f"recording failed: {done.stderr[-2000:]}"}
    seed = seed_from_recording(recording)
    row |= {"unavailable": seed.unavailable, "configs": seed.configs, "notes": seed.notes}
    if not seed.available:
        return row
    path = out / f"seed_{problem.name}.py"
    path.write_text(seed.source)
    shapes = "full" if device.startswith("cuda") else "small"  # the CPU: a smoke test of this script
    spec = RunSpec(problem_path=problem.problem_path, shapes=shapes, device=device, dtype="bf16")
    report = run_bench(problem.name, spec, [str(path)], ["compile-max-autotune"], None)
    baseline, kernel = report.rows
    verdict = kernel.verdict
    row |= {
        "seed_passed": verdict.passed if verdict else None,
        "seed_reason": verdict.reason if verdict else None,
        "seed_ms": kernel.ranked_ms,
        "max_autotune_ms": baseline.ranked_ms,
        "device": kernel.timing.timing.device_name if kernel.timing and kernel.timing.timing else None,
    }
    if kernel.ranked_ms and baseline.ranked_ms:
        row["max_autotune_over_seed"] = baseline.ranked_ms / kernel.ranked_ms
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--recordings", type=Path, default=None, help="recordings to reuse (default: record)")
    parser.add_argument(
        "--device", default="cuda", help="cuda (full shapes), or cpu (small shapes, a smoke test)"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    recordings = args.recordings or Path(tempfile.mkdtemp(prefix="inductor-recordings-"))
    rows = []
    for name in args.problems:
        rows.append(bench_problem(name, args.out, recordings, args.device))
        print(json.dumps(rows[-1]), flush=True)
    (args.out / "compile_seed_bench.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\n{'problem':40} {'seed ms':>9} {'max-autotune ms':>16} {'ratio':>6}  note")
    for r in rows:
        seed_ms, base_ms, ratio = r.get("seed_ms"), r.get("max_autotune_ms"), r.get("max_autotune_over_seed")
        note = r["unavailable"] or ("" if r.get("seed_passed") else f"seed failed: {r.get('seed_reason')}")
        print(f"{r['problem']:40} {_ms(seed_ms):>9} {_ms(base_ms):>16} {_ratio(ratio):>6}  {note}")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


if __name__ == "__main__":
    main()
