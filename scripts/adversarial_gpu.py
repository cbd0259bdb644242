"""Run the adversarial corpus on a GPU: every case of tests/test_adversarial.py's table through
verify_kernel (or time_target for the timing cases, or both in one process for the search's), with the
GPU expectations, plus the five bundled input kernels as controls that must pass verification and the
timing after it. Writes a markdown table and the same rows as JSON.

    python scripts/adversarial_gpu.py --out DIR [--device cuda] [--shapes small] [--only WORD ...]

Small shapes by default (the whole run takes a few minutes); the side-stream timing case uses the full
shape, where its work outlasts the call's own stream by far more than the timer's 50 us margin.
KernelAgent's RMSNorm input kernel is included when .ka/36/input_kernel.py is there (kept out of git).
Exits 1 when any row differs from its expectation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:
    import pytest  # noqa: F401 - the table's module uses it; the GPU machine may lack it
except ImportError:
    import types

    def _passthrough(*args: object, **kwargs: object) -> object:
        return args[0] if len(args) == 1 and callable(args[0]) and not kwargs else (lambda f: f)

    class _Marks:
        def __getattr__(self, name: str) -> object:
            return _passthrough

    sys.modules["pytest"] = types.SimpleNamespace(mark=_Marks(), fixture=_passthrough)  # type: ignore[assignment]

from tests.test_adversarial import CASES, KA_RMSNORM, KA_RMSNORM_CASE, Case, Expect, check, run  # noqa: E402


def controls() -> list[Case]:
    """The bundled input kernels (verified, then timed in their process, as the search does) and the
    corpus's honest kernel (timed): all must pass."""
    from beamsearch.records.problems import bundled_problem_names, resolve_problem

    out = []
    for name in bundled_problem_names():
        problem = resolve_problem(name)
        out.append(Case(str(Path(problem.input_kernel_path).resolve()), f"control: {name} input kernel", "search",
                        Expect("ok", None, ()), problem=Path(problem.problem_path),
                        label=f"input_kernel_{name[:2]}"))  # fmt: skip
    out.extend(_optimized_controls())
    out.append(Case("adversarial/honest.py", "control: honest kernel, timed", "time", Expect("ok", None, ())))
    out.append(Case("adversarial/honest.py", "control: honest kernel, timed at full shape", "time",
                    Expect("ok", None, ()), label="honest_full", gpu_shapes="full"))
    return out


def _optimized_controls() -> list[Case]:
    """Optimized kernels that must pass at full shape: ours (committed in artifacts/) and KernelAgent's
    published ones (when .ka/<nn>/ holds them; kept out of git)."""
    from beamsearch.records.problems import bundled_problem_names, resolve_problem

    out = []
    for name in bundled_problem_names():
        problem = resolve_problem(name)
        kernels = {"ours": ROOT / "artifacts" / name / "optimized_kernel_beam_search.py",
                   "kernelagent": ROOT / ".ka" / name[:2] / "optimized_kernel_beam_search.py"}  # fmt: skip
        for who, kernel in kernels.items():
            if kernel.is_file():
                out.append(Case(str(kernel.resolve()), f"control: {who} optimized kernel for {name}", "verify",
                                Expect("ok", None, ("all checks passed",)), problem=Path(problem.problem_path),
                                label=f"{who}_optimized_{name[:2]}", gpu_shapes="full", timeout_s=300))  # fmt: skip
    return out


def environment(device: str) -> dict[str, str]:
    import torch
    import triton

    from workers.harness.sandbox import landlock_abi

    env = {"torch": torch.__version__, "triton": triton.__version__, "python": sys.version.split()[0],
           "landlock_abi": str(landlock_abi())}  # fmt: skip
    if device.startswith("cuda") and torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for adversarial_gpu.md and adversarial_gpu.json")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--shapes", default="small", choices=["small", "full"])
    parser.add_argument("--only", nargs="*", default=[], help="run only cases whose id contains one of these")
    args = parser.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    on_gpu = args.device.startswith("cuda")

    from workers.harness.problem_instance import NUDGE_SEED_ENV
    from workers.harness.sandbox import landlock_abi

    os.environ.setdefault(NUDGE_SEED_ENV, "7")  # the same random places as the CPU tests: reproducible rows
    cases = [*controls(), *CASES]
    if KA_RMSNORM.is_file():
        cases.append(KA_RMSNORM_CASE)
    if args.only:
        cases = [c for c in cases if any(w in c.id for w in args.only)]
    rows = []
    for case in cases:
        want = case.expected(on_gpu)
        row = {"kernel": case.kernel, "stage": case.stage, "cheat": case.cheat}
        if want is None:
            rows.append({**row, "expected": "-", "got": "-", "match": None, "reason": "nothing to catch on this device"})
            continue
        if case.landlock and landlock_abi() < 1:
            rows.append({**row, "expected": _fmt(want), "got": "-", "match": None, "reason": "skipped: no Landlock"})
            continue
        shapes = "full" if case.gpu_shapes == "full" and on_gpu else args.shapes
        started = time.perf_counter()
        try:
            result = run(case, args.device, shapes)
            problem = check(case, result, on_gpu)
            got = _got(result)
            reason = str(getattr(result, "reason", ""))
            extra = _timing_note(result)
        except Exception as e:  # noqa: BLE001 - a harness failure is a row too
            problem, got, reason, extra = f"harness raised {type(e).__name__}: {e}", "error", str(e), ""
        rows.append({**row, "shapes": shapes, "expected": _fmt(want), "got": got, "match": problem is None,
                     "mismatch": problem or "", "reason": reason[:400], "timing": extra,
                     "seconds": round(time.perf_counter() - started, 1)})  # fmt: skip
        mark = "ok  " if problem is None else "DIFF"
        print(f"{mark} {case.id:40s} {got:45s} {rows[-1]['seconds']:6.1f}s  {problem or ''}", flush=True)
    report = {"environment": environment(args.device), "device": args.device, "shapes": args.shapes, "rows": rows}
    (out_dir / "adversarial_gpu.json").write_text(json.dumps(report, indent=1))
    (out_dir / "adversarial_gpu.md").write_text(_markdown(report))
    bad = [r for r in rows if r["match"] is False]
    print(f"{len(rows) - len(bad)} of {len(rows)} rows as expected; table in {out_dir / 'adversarial_gpu.md'}")
    return 1 if bad else 0


def _fmt(e: Expect) -> str:
    return e.status + (f" ({e.check})" if e.check else "")


def _got(result: object) -> str:
    failed = [c.name for c in getattr(result, "checks", []) if not c.passed]
    return str(getattr(result, "status", "?")) + (f" ({', '.join(failed)})" if failed else "")


def _timing_note(result: object) -> str:
    t = getattr(result, "timing", None)
    if t is None:
        return ""
    note = f"median {t.median_ms:.4g} ms, n {t.n}, device end {t.device_end_n}"
    if t.device_gap_ms is not None:
        note += f" (gap {t.device_gap_ms:.3g} ms, margin {t.sync_margin_ms:.3g} ms)"
    if t.host_batch_ms is not None:
        note += f", host batch {t.host_batch_ms:.4g} ms, enqueue {t.host_enqueue_ms:.4g} ms"
    return note


def _markdown(report: dict) -> str:
    env = ", ".join(f"{k} {v}" for k, v in report["environment"].items())
    lines = [
        "# Adversarial kernels on a GPU",
        "",
        f"Device {report['device']}, {report['shapes']} shapes; {env}.",
        "",
        "| kernel | stage | cheat | expected | verdict | as expected | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        match = {True: "yes", False: "**NO**", None: "-"}[r["match"]]
        reason = (r.get("reason") or "").replace("|", "\\|").replace("\n", " ")[:220]
        if r.get("timing"):
            reason += f" [{r['timing']}]"
        lines.append(f"| {Path(r['kernel']).name} | {r['stage']} | {r['cheat']} | {r['expected']} | {r['got']} "
                     f"| {match} | {reason} |")  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
